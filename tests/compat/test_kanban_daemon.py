"""``run_daemon``: the Kanban dispatcher in the foreground, as 0.19's ``hermes kanban
daemon``, ticking on the active board until stopped: a real worker process does a task it
dispatched, and a real process running it stops cleanly on SIGTERM, saying so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hermes_cli import kanban_db as kb

from hermes import profiles
from tests.fakes import llm_server as fake
from tests.kanban.helpers import wait_for_task


def test_the_daemon_dispatches_until_stopped(
    tmp_path: Path, fake_llm: fake.FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_BASE_URL", fake_llm.url)
    monkeypatch.setenv("HERMES_MODEL", fake.DEFAULT_MODEL)
    profiles.create("builder")
    fake_llm.script(fake.text("Dispatched by the daemon."))
    with kb.connect_closing() as conn:
        task_id = kb.create_task(conn, title="Nightly", assignee="builder")
    stop = threading.Event()
    ticks: list[kb.DispatchResult] = []
    daemon = threading.Thread(
        target=kb.run_daemon,
        kwargs={"interval": 0.2, "stop_event": stop, "on_tick": ticks.append},
    )
    daemon.start()
    try:
        with kb.connect_closing() as conn:
            done = wait_for_task(conn, task_id, "done")
    finally:
        stop.set()
        daemon.join(timeout=60)
    assert not daemon.is_alive()
    assert (done.status, done.result) == ("done", "Dispatched by the daemon."), kb.read_worker_log(
        task_id
    )
    assert [s[:2] for t in ticks for s in t.spawned] == [(task_id, "builder")]


def test_a_daemon_process_stops_on_sigterm_and_says_so(tmp_path: Path) -> None:
    env = {**os.environ, "HERMES_HOME": str(tmp_path)}
    daemon = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from hermes_cli import kanban_db as kb; kb.run_daemon(interval=0.1)",
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert daemon.stderr is not None
        started = daemon.stderr.readline()
        assert "Kanban dispatcher runs on board 'default' every 0.1s" in started
        daemon.send_signal(signal.SIGTERM)
        rest = daemon.stderr.read()
        assert daemon.wait(timeout=60) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert "the Kanban dispatcher stopped" in rest and "Traceback" not in rest
