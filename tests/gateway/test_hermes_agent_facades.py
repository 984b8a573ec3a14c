"""Hermes Agent 0.19's import names against a real gateway process, called as hermes-webui
calls them: a job made through ``cron.jobs``, run with ``cron.scheduler.run_job`` (the
gateway runs it, under its lease), its output and history where 0.19 keeps them, the
gateway seen by ``gateway.status``, and its log lines in ``logs/agent.log`` and
``logs/gateway.log`` in 0.19's format.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

from tests.gateway.harness import stored_api_key, wait_for, write_config
from tests.gateway.processes import free_port

# 0.19's hermes_logging line: "2026-02-03 14:00:00,123 INFO name: message"
LOG_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: "
)


RUN_JOB_IN_A_CHILD = (
    "import json, sys\nfrom cron.scheduler import run_job\n"
    "print(json.dumps(run_job(json.loads(sys.argv[1]))))\n"
)


@pytest.mark.slow  # a gateway process running a scheduled job
def test_a_job_made_and_run_through_the_facades_runs_on_the_gateway(
    hermes_home: Path, fake_llm, run_gateway
) -> None:
    import cron.executions
    import cron.jobs
    import cron.scheduler
    import gateway.status

    write_config(hermes_home, fake_llm.url, cron={"tick_seconds": 0.2})
    port = free_port()
    gw = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1")
    url = gw.wait_ready(port)

    assert gateway.status.get_running_pid() == gw.proc.pid
    assert gateway.status.read_runtime_status()["gateway_state"] == "running"
    # hermesd's cron ticker: 0.19's ticker files, an epoch each, which the scheduler keeps.
    # The heartbeat is written a moment before the success stamp: wait for both.
    assert wait_for(lambda: cron.jobs.get_ticker_heartbeat_age() is not None)
    assert wait_for(lambda: cron.jobs.get_ticker_success_age() is not None)
    for name in ("ticker_heartbeat", "ticker_last_success"):
        stamp = float((hermes_home / "cron" / name).read_text(encoding="utf-8"))
        assert abs(time.time() - stamp) < 600

    job = cron.jobs.create_job(prompt="say hi", schedule="every 2h", name="greet")
    on_disk = json.loads((hermes_home / "cron" / "jobs.json").read_text(encoding="utf-8"))
    assert [j["id"] for j in on_disk["jobs"]] == [job["id"]]
    assert on_disk["jobs"][0]["schedule"] == {
        "kind": "interval",
        "minutes": 120,
        "display": "every 120m",
    }

    # hermes-webui's manual run: run_job in a child process, then save_job_output and
    # mark_job_run in its own.
    child = subprocess.run(
        [sys.executable, "-c", RUN_JOB_IN_A_CHILD, json.dumps(job)],
        env={**os.environ, "HERMES_HOME": str(hermes_home)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    success, document, final, error = json.loads(child.stdout)
    assert (success, error) == (True, None)
    assert final.startswith("echo:")
    assert "## Response" in document and job["id"] in document
    # The gateway that ran it writes the files too, for readers such as hermesd.
    outputs = wait_for(lambda: sorted((hermes_home / "cron" / "output" / job["id"]).glob("*.md")))
    assert [p.read_text(encoding="utf-8") for p in outputs] == [document]
    on_disk = json.loads((hermes_home / "cron" / "jobs.json").read_text(encoding="utf-8"))
    assert on_disk["jobs"][0]["last_status"] == "ok" and on_disk["jobs"][0]["last_run_at"]

    cron.jobs.save_job_output(job["id"], document)
    cron.jobs.mark_job_run(job["id"], success, error)
    outputs = sorted((hermes_home / "cron" / "output" / job["id"]).glob("*.md"))
    assert [p.read_text(encoding="utf-8") for p in outputs] == [document]  # one, not two
    listed = cron.jobs.get_job(job["id"])
    assert listed is not None and listed["last_status"] == "ok" and listed["last_run_at"]
    assert listed["repeat"]["completed"] == 1  # the gateway's run, not recorded twice
    assert [e["status"] for e in cron.executions.list_executions(job_id=job["id"])] == ["completed"]

    # An API conversation, made by the gateway before the model answered: its model is
    # stored, as is the cron run's (ai-spend-tracker bills by sessions.model).
    with openai.OpenAI(base_url=url, api_key=stored_api_key(), max_retries=0, timeout=30) as client:
        answer = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hello"}]
        )
    assert answer.choices[0].message.content == "echo: hello"
    with sqlite3.connect(hermes_home / "state.db") as conn:  # as ai-spend-tracker reads it
        models = dict(conn.execute("SELECT source, model FROM sessions").fetchall())
    assert models == {"api_server": "fake-model", "cron": "fake-model"}

    assert gw.terminate() == 0
    for name in ("agent.log", "gateway.log"):
        lines = (hermes_home / "logs" / name).read_text(encoding="utf-8").splitlines()
        assert any("gateway ready" in line for line in lines), name
        assert all(LOG_LINE.match(line) for line in lines), lines
    agent_log = (hermes_home / "logs" / "agent.log").read_text(encoding="utf-8")
    assert "hermes.cron.service: cron: job" in agent_log
    wait_for(lambda: gateway.status.get_running_pid() is None, timeout=10)


@pytest.mark.slow  # a gateway process
def test_a_tick_makes_each_due_run_once_and_a_shutdown_stops_the_wait(
    hermes_home: Path, fake_llm, run_gateway
) -> None:
    import threading

    import cron.jobs
    import cron.scheduler

    from hermes.cron import CronStore
    from hermes.state import SessionDB

    # The gateway ticks once as it starts, then not for an hour: the runs made here wait.
    write_config(hermes_home, fake_llm.url, cron={"tick_seconds": 3600})
    port = free_port()
    gw = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1")
    gw.wait_ready(port)
    assert wait_for(lambda: cron.jobs.get_ticker_heartbeat_age() is not None)

    job = cron.jobs.create_job(prompt="say hi", schedule="every 2h", name="greet")
    db = SessionDB(db_path=hermes_home / "state.db")
    try:
        store = CronStore(db.backend)
        store.update_job(job["id"], next_run_at=time.time() - 1)
        assert cron.scheduler.tick(verbose=False, sync=False) == 1
        assert cron.scheduler.tick(verbose=False, sync=False) == 0  # made once, not again
        assert [run["status"] for run in store.runs(job["id"])] == ["due"]
    finally:
        db.close()

    # 0.19's gateway shutdown: a run_job waiting on its run stops with the reason given.
    answers = []
    waiting = threading.Thread(
        target=lambda: answers.append(cron.scheduler.run_job(job)), daemon=True
    )
    waiting.start()
    assert wait_for(lambda: cron.scheduler.get_running_job_ids() == {job["id"]})
    assert cron.scheduler.mark_running_jobs_interrupted("gateway shutting down") == [job["id"]]
    waiting.join(timeout=60)
    assert [(ok, final, error) for ok, _doc, final, error in answers] == [
        (False, "", "gateway shutting down")
    ]
    assert cron.scheduler.get_running_job_ids() == frozenset()
    assert gw.terminate() == 0


def kit_patch_gateway_resolver(overrides: dict[str, str]) -> None:
    """hermes-agent-kit's ``bridge.patch_gateway_resolver``, as it patches 0.19."""
    import asyncio

    from gateway.run import GatewayRunner

    original = GatewayRunner._resolve_session_agent_runtime
    assert not asyncio.iscoroutinefunction(original)

    def patched_resolver(self, *args, **kwargs):
        model, runtime_kwargs = original(self, *args, **kwargs)
        session_key = kwargs.get("session_key") or (args[0] if args else None)
        if session_key and session_key in overrides:
            model = overrides[session_key]
        return model, runtime_kwargs

    GatewayRunner._resolve_session_agent_runtime = patched_resolver


def test_hermes_agent_kit_routes_a_chat_to_its_model(
    hermes_home: Path, fake_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hermes-agent-kit's routing bridge patches ``gateway.run.GatewayRunner``; the chat
    it overrides is answered by its model, another chat by the configured one."""
    from gateway.run import GatewayRunner

    from tests.gateway.fakechat import incoming
    from tests.gateway.one_chat import KEY, chat_gateway

    monkeypatch.setattr(
        GatewayRunner,
        "_resolve_session_agent_runtime",
        GatewayRunner._resolve_session_agent_runtime,
    )  # put back after the test
    kit_patch_gateway_resolver({KEY: "routed-model"})
    write_config(hermes_home, fake_llm.url)
    gateway = chat_gateway(hermes_home)
    try:
        gateway.call(gateway.runner.handle_message(incoming("route me")))
        wait_for(lambda: any("route me" in t for t in gateway.chat.texts()), timeout=30)
        gateway.call(gateway.runner.handle_message(incoming("not me", chat="200", user="42")))
        wait_for(lambda: any("not me" in t for t in gateway.chat.texts()), timeout=30)
    finally:
        gateway.stop()
    models = {r["messages"][-1]["content"]: r["model"] for r in fake_llm.requests}
    assert models == {"route me": "routed-model", "not me": "fake-model"}
