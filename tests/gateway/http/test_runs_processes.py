"""Runs over gateway processes (`python -m hermes gateway run`) on one store, SQLite and
PostgreSQL: a run started before a SIGTERM is answered once after the restart and its
Idempotency-Key still names it; a second gateway serves a run the first one runs."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import aiohttp
import pytest

from hermes.state import SessionDB
from tests.fakes.llm_server import hang, stall, text
from tests.gateway.harness import stored_api_key, wait_for
from tests.gateway.processes import Gateway, free_port
from tests.gateway.run_calls import events, request, wait_status
from tests.state.helpers import StoreSpec

pytestmark = pytest.mark.slow  # gateway processes started, killed and restarted


def _serve(run_gateway, *options: str) -> tuple[Gateway, str]:
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1", *options)
    return gateway, gateway.wait_ready(port)


def _standing(spec: StoreSpec, conversation: str) -> list[str]:
    db: SessionDB = spec.open()
    try:
        rows = db.get_conversation_messages(conversation)
        return [m["content"] for m in rows if not m["undone"]]
    finally:
        db.close()


def test_a_run_survives_a_sigterm_restart_and_its_key_names_it(
    configured_store: StoreSpec, run_gateway, fake_llm
) -> None:
    fake_llm.script(hang(20))
    first, url = _serve(run_gateway, "--grace", "0.2")
    key = stored_api_key()
    body, idem = {"input": "survive the restart"}, {"Idempotency-Key": "restart-1"}
    status, started, _ = request(url, key, "POST", "/v1/runs", json=body, headers=idem)
    assert status == 202
    run_id = started["run_id"]
    wait_for(lambda: fake_llm.requests)
    assert first.terminate() == 0

    second, url = _serve(run_gateway)
    status, again, headers = request(url, key, "POST", "/v1/runs", json=body, headers=idem)
    assert status == 202 and again["run_id"] == run_id
    assert headers["Idempotency-Replayed"] == "true"
    done = wait_status(url, key, run_id, "completed")
    assert done["output"] == "echo: survive the restart"
    assert _standing(configured_store, started["session_id"]) == [
        "survive the restart",
        "echo: survive the restart",
    ]
    seen = events(url, key, run_id)
    assert [n for n, _ in seen] == list(range(1, len(seen) + 1))
    names = [e["event"] for _, e in seen]
    assert "run.requeued" in names and names[-1] == "run.completed"
    assert names.count("run.completed") == 1
    second.terminate()


def test_a_second_gateway_serves_the_events_and_stop_of_a_run(
    configured_store: StoreSpec, run_gateway, fake_llm
) -> None:
    fake_llm.script(stall("one two three four", after_chunks=1, seconds=1.0))
    runs_it, url_a = _serve(run_gateway)
    other, url_b = _serve(run_gateway)
    key = stored_api_key()
    _, started, _ = request(url_a, key, "POST", "/v1/runs", json={"input": "count"})
    run_id = started["run_id"]
    # The other gateway: state, a late reader, and one that resumes.
    wait_for(lambda: request(url_b, key, "GET", f"/v1/runs/{run_id}")[1]["last_event"])
    late = events(url_b, key, run_id)
    assert [e["event"] for _, e in late][-1] == "run.completed"
    deltas = "".join(e["delta"] for _, e in late if e["event"] == "message.delta")
    assert deltas == "one two three four"
    first = events(url_b, key, run_id, take=1)
    assert first + events(url_a, key, run_id, last_id=first[-1][0]) == late

    # A stop sent to the other gateway reaches the turn where it runs.
    fake_llm.script(hang(20))
    _, slow, _ = request(url_a, key, "POST", "/v1/runs", json={"input": "slowly"})
    wait_status(url_a, key, slow["run_id"], "running")
    wait_for(lambda: len(fake_llm.requests) == 2)
    status, _, _ = request(url_b, key, "POST", f"/v1/runs/{slow['run_id']}/stop", json={})
    assert status == 200
    assert wait_status(url_b, key, slow["run_id"], "cancelled")["status"] == "cancelled"
    runs_it.terminate()
    other.terminate()


def test_a_run_whose_gateway_died_ends_failed_for_its_followers(
    configured_store: StoreSpec, run_gateway, fake_llm
) -> None:
    fake_llm.script(hang(20))
    doomed, url = _serve(run_gateway)
    key = stored_api_key()
    _, started, _ = request(url, key, "POST", "/v1/runs", json={"input": "lost in a crash"})
    run_id = started["run_id"]
    wait_status(url, key, run_id, "running")
    doomed.proc.kill()
    doomed.proc.wait(10)

    survivor, url = _serve(run_gateway)
    failed = wait_status(url, key, run_id, "failed")
    assert "stopped before it finished" in failed["error"]
    assert events(url, key, run_id)[-1][1]["event"] == "run.failed"
    survivor.terminate()


@pytest.mark.timeout(900)  # 17 gateway starts
def test_runs_cut_by_sigkill_at_any_moment_all_end_answered_or_failed(
    configured_store: StoreSpec, run_gateway, fake_llm
) -> None:
    """POST a run and SIGKILL the gateway 0-400 ms after sending it, then start it
    again: 16 times. Then no run in the store stays queued or running: each is answered
    once, or failed saying why."""
    fake_llm.responder = lambda body: text("answered", delay=0.1)
    pause = random.Random(49)
    for n in range(16):
        gateway, url = _serve(run_gateway)
        key = stored_api_key()
        post = threading.Thread(target=_post_run, args=(url, key, f"run {n}"))
        post.start()
        time.sleep(pause.uniform(0, 0.4))
        gateway.proc.kill()
        gateway.proc.wait(10)
        post.join(30)

    last, url = _serve(run_gateway)
    runs = wait_for(lambda: _runs(configured_store, ended=True), timeout=60, interval=0.5)
    assert len(runs) >= 8  # most POSTs made their run before the kill
    for run in runs:
        words = _standing(configured_store, run["conversation_id"])
        if run["status"] == "completed":
            assert run["output"] == "answered"
            assert words.count("answered") == 1, words  # answered once
        else:
            assert run["status"] == "failed" and "stopped before" in run["error"], run
    last.terminate()


def _post_run(url: str, key: str, words: str) -> None:
    try:
        request(url, key, "POST", "/v1/runs", json={"input": words})
    except aiohttp.ClientError:
        pass  # killed before it answered: the run may exist or not


def _runs(spec: StoreSpec, *, ended: bool) -> list[dict[str, Any]] | None:
    """Every run in the store; with ``ended``, None while one is not completed or failed."""
    db: SessionDB = spec.open()
    try:
        rows = db.backend.transact(
            lambda tx: tx.all("SELECT id, status, error, output, conversation_id FROM api_runs"),
            write=False,
        )
    finally:
        db.close()
    found = [dict(row) for row in rows]
    if ended and any(run["status"] not in ("completed", "failed") for run in found):
        return None
    return found
