"""What a Kanban board keeps (``worker_log_rotation_config``, ``gc_events``,
``gc_worker_logs``): ``kanban_retention_session.py`` must print the same under hermes and
under Hermes Agent 0.19; then the dispatcher rotates a task's log, as config.yaml says, when
it starts the task's next worker (a real worker process, the fake model answering)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hermes_cli import kanban_db as kb

from hermes import profiles
from tests.compat.hermes_agent import play_session
from tests.fakes import llm_server as fake
from tests.kanban.helpers import wait_for_task

SESSION = Path(__file__).resolve().with_name("kanban_retention_session.py")


def play(python: Path | str, home: Path) -> dict[str, Any]:
    return play_session(python, SESSION, home)


def test_retention_as_on_hermes_agent(hermes_agent_python: Path, tmp_path: Path) -> None:
    assert play(sys.executable, tmp_path / "hermes") == play(
        hermes_agent_python, tmp_path / "hermes-agent"
    )


def test_the_session_on_hermes(tmp_path: Path) -> None:
    shown = play(sys.executable, tmp_path / "home")
    assert shown["rotation"][:3] == [[2097152, 1], [5, 0], [7, 3]]
    assert shown["rotation_from_config"] == [1234, 3]
    assert shown["gc_events_default"] == 6  # the finished tasks' old events
    assert shown["events_left"] == [["live", "created"], ["live", "commented"],
                                    ["done", "commented"]]  # fmt: skip
    assert (shown["gc_logs_default"], shown["logs_left"]) == (2, ["nested", "t_new.log"])
    assert (shown["side_left"], shown["gc_logs_side"]) == (["t_side.log"], 1)


def test_the_dispatcher_rotates_a_tasks_log_when_its_worker_starts(
    tmp_path: Path, fake_llm: fake.FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("HERMES_BASE_URL", fake_llm.url)
    monkeypatch.setenv("HERMES_MODEL", fake.DEFAULT_MODEL)
    (home / "config.yaml").write_text(
        "kanban:\n  worker_log_rotate_bytes: 100\n  worker_log_backup_count: 2\n"
    )
    profiles.create("builder")
    fake_llm.script(fake.text("Rotated and done."))
    with kb.connect_closing() as conn:
        task_id = kb.create_task(conn, title="Log me", assignee="builder")
        log = kb.worker_log_path(task_id)
        log.parent.mkdir(parents=True)
        log.write_text("the last worker's long output\n" * 10)
        log.with_name(log.name + ".1").write_text("the one before\n")
        kb.dispatch_once(conn)
        done = wait_for_task(conn, task_id, "done")
    assert done.status == "done", kb.read_worker_log(task_id)
    assert log.with_name(log.name + ".1").read_text() == "the last worker's long output\n" * 10
    assert log.with_name(log.name + ".2").read_text() == "the one before\n"
    assert "the last worker" not in log.read_text()
