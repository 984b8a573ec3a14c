"""Scheduled jobs over real gateway processes on one store (SQLite and PostgreSQL), with
the fake Telegram: each due time runs once and is delivered once, through SIGKILLs of the
gateway holding a run, and a gateway that was down across a due time runs it once."""

from __future__ import annotations

import random
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.cron import CronStore, parse
from tests.gateway.fake_platforms import FakeTelegram
from tests.gateway.harness import wait_for, write_config
from tests.gateway.processes import Gateway, free_port
from tests.state.helpers import StoreSpec

pytestmark = pytest.mark.slow  # gateway processes started, killed and restarted

TOKEN = "424242:AAE-fake-telegram-token-do-not-log"


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram(TOKEN) as server:
        yield server


@pytest.fixture
def shared_store(
    gateways_store: StoreSpec,
    hermes_home: Path,
    fake_llm,
    model_key: str,
    telegram: FakeTelegram,
) -> StoreSpec:
    """The gateways' store (HERMES_HOME/state.db, or the test's PostgreSQL schema) and a
    config whose gateways poll the fake Telegram and tick every 0.2 s."""
    platforms = {
        "telegram": {
            "token": TOKEN,
            "allowed_users": [42],
            "base_url": telegram.base_url,
            "poll_timeout": 1,
        }
    }
    write_config(
        hermes_home, fake_llm.url, gateway={"platforms": platforms}, cron={"tick_seconds": 0.2}
    )
    return gateways_store


def _serve(run_gateway) -> Gateway:
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1", "--grace", "0.2")
    gateway.wait_ready(port)
    return gateway


def _job(spec: StoreSpec, schedule: str, now: float | None = None) -> str:
    with spec.open() as db:
        job = CronStore(db.backend).create_job(
            name="briefing", schedule=parse(schedule, now=now), prompt="morning briefing",
            deliver="telegram:42", now=now,
        )  # fmt: skip
    return str(job["id"])


def _pause(spec: StoreSpec, job_id: str) -> None:
    with spec.open() as db:
        CronStore(db.backend).update_job(job_id, enabled=0, next_run_at=None)


def _runs(spec: StoreSpec, job_id: str) -> list[dict]:
    with spec.open() as db:
        return CronStore(db.backend).runs(job_id, limit=500)


def _settled(spec: StoreSpec, job_id: str) -> bool:
    return all(
        r["status"] in ("completed", "failed") and r["delivery"] in ("sent", "failed")
        for r in _runs(spec, job_id)
    )


def _holder_pid(spec: StoreSpec, job_id: str) -> int | None:
    for run in _runs(spec, job_id):
        if run["status"] == "running" and run["holder"]:
            return int(re.search(r":pid=(\d+)", run["holder"])[1])  # type: ignore[index]
    return None


def test_each_due_time_runs_and_is_delivered_once_through_kills(
    shared_store: StoreSpec, run_gateway, fake_llm, telegram: FakeTelegram
) -> None:
    fake_llm.latency = 0.6  # a run lasts long enough to be killed in the middle of it
    gateways = [_serve(run_gateway), _serve(run_gateway)]
    job_id = _job(shared_store, "every 1s")
    kills, until = 0, time.monotonic() + 14
    rng = random.Random(37)
    while time.monotonic() < until:
        time.sleep(rng.uniform(0.5, 2.0))
        pid = _holder_pid(shared_store, job_id)
        victim = next((g for g in gateways if g.proc.pid == pid), None)
        if victim is None:
            continue
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(10)
        kills += 1
        gateways[gateways.index(victim)] = _serve(run_gateway)
    _pause(shared_store, job_id)
    wait_for(lambda: _settled(shared_store, job_id), timeout=60, interval=0.2)
    runs = _runs(shared_store, job_id)
    due = sorted(round(r["due_at"]) for r in runs)
    assert kills >= 2, (runs[:3], gateways[0].output()[-3000:])
    assert due == list(range(due[0], due[0] + len(due)))  # every due time, each once
    assert all(r["status"] == "completed" and r["delivery"] == "sent" for r in runs)
    assert any(r["attempts"] > 1 for r in runs)  # a killed holder's run was taken over
    assert len(telegram.accepted) == len(runs)  # one delivery each, none twice
    with shared_store.open() as db:
        cron_sessions = db.list_conversations(limit=500, source="cron")
    # A conversation per attempt (a taken-over one keeps its unanswered prompt).
    assert len(cron_sessions) >= len(runs)
    for gateway in gateways:
        assert gateway.terminate() == 0


def test_a_due_time_missed_while_down_runs_once_after_the_start(
    shared_store: StoreSpec, run_gateway, fake_llm, telegram: FakeTelegram
) -> None:
    job_id = _job(shared_store, "every 1s", now=time.time() - 30)  # 30 due times missed
    gateway = _serve(run_gateway)
    wait_for(lambda: _runs(shared_store, job_id), timeout=30)
    _pause(shared_store, job_id)
    wait_for(lambda: _settled(shared_store, job_id), timeout=30, interval=0.2)
    runs = _runs(shared_store, job_id)
    missed = [r for r in runs if r["due_at"] < time.time() - 25]
    assert len(missed) == 1 and missed[0]["status"] == "completed"
    assert len(telegram.accepted) == len(runs)
    assert gateway.terminate() == 0
