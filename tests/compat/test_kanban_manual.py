"""A person's own moves on Kanban tasks (``promote_task``, ``reclaim_task``,
``reassign_task``, ``edit_completed_task_result``, ``parent_results``):
``kanban_manual_session.py`` must print the same under hermes and under Hermes Agent 0.19;
then a reclaim stops a real worker process on this host."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from hermes_cli import kanban_db as kb

from tests.compat.hermes_agent import play_session

SESSION = Path(__file__).resolve().with_name("kanban_manual_session.py")


def play(python: Path | str, home: Path) -> dict[str, Any]:
    return play_session(python, SESSION, home)


def test_manual_moves_as_on_hermes_agent(hermes_agent_python: Path, tmp_path: Path) -> None:
    assert play(sys.executable, tmp_path / "hermes") == play(
        hermes_agent_python, tmp_path / "hermes-agent"
    )


def test_the_session_on_hermes(tmp_path: Path) -> None:
    shown = play(sys.executable, tmp_path / "home")
    assert shown["promote_waiting"] == [
        False, "unsatisfied parent dependencies: T1 (use --force to override)"
    ]  # fmt: skip
    assert shown["promote_dry"] == [[True, None], "todo"]
    assert shown["reclaimed_task"] == ["ready", "alice", None, None, 0, None, None]
    assert shown["reclaimed_runs"][0][:4] == [
        "reclaimed", "reclaimed", None, "manual_reclaim: stuck on a prompt"
    ]  # fmt: skip
    assert shown["reassign_running"][0] is False and shown["reassign_reclaiming"][1][:2] == [
        "ready", "bob"
    ]  # fmt: skip
    assert shown["edited"][0][-1] == "second answer"
    assert shown["edited"][1][0][2:5] == ["second answer", None, {"why": "typo"}]
    assert shown["parent_results"] == [
        ["T1", "parent result"], ["T5", "second answer"], ["T6", "by hand"]
    ]  # fmt: skip


def test_a_reclaim_stops_the_worker_running_here(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    worker = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True
    )
    try:
        with kb.connect_closing() as conn:
            task_id = kb.create_task(conn, title="Hung", assignee="builder")
            claimed = kb.claim_task(conn, task_id)  # this host's claim
            assert claimed is not None
            kb._set_worker_pid(conn, task_id, worker.pid)
            assert kb.reclaim_task(conn, task_id, reason="hung") is True
            assert worker.wait(timeout=60) is not None
            event = [e for e in kb.list_events(conn, task_id) if e.kind == "reclaimed"][-1]
            task = kb.get_task(conn, task_id)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert event.payload is not None
    assert event.payload["host_local"] is True and event.payload["prev_pid"] == worker.pid
    assert task is not None and (task.status, task.worker_pid, task.claim_lock) == (
        "ready", None, None
    )  # fmt: skip


def test_a_reclaim_loses_to_a_move_made_meanwhile(tmp_path: Path, monkeypatch: Any) -> None:
    """Between looking at the task and writing, another process completed it: the reclaim
    changes nothing (its write is held to the claim it saw)."""
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    with kb.connect_closing() as conn, kb.connect_closing() as other:
        task_id = kb.create_task(conn, title="Racing", assignee="builder")
        kb.claim_task(conn, task_id, claimer="elsewhere:1")

        def finish_first(*_: Any, **__: Any) -> dict[str, Any]:
            assert kb.complete_task(other, task_id, result="made it")
            return {}

        monkeypatch.setattr(kb, "_terminate_reclaimed_worker", finish_first)
        assert kb.reclaim_task(conn, task_id) is False
        task = kb.get_task(conn, task_id)
    assert task is not None and (task.status, task.result) == ("done", "made it")


def test_parent_results_read_the_board(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    with kb.connect_closing() as conn:
        parent = kb.create_task(conn, title="p")
        child = kb.create_task(conn, title="c", parents=[parent])
        assert kb.parent_results(conn, child) == []
        kb.complete_task(conn, parent, result="42")
        reader = sqlite3.connect(kb.kanban_db_path())
        try:
            (status,) = reader.execute(
                "SELECT status FROM tasks WHERE id = ?", (parent,)
            ).fetchone()
        finally:
            reader.close()
        assert status == "done" and kb.parent_results(conn, child) == [(parent, "42")]
