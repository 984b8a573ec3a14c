"""The dispatcher's lanes on a real board: a review task runs its assignee's agent with
the reviewer's skill, the respawn guard holds a task whose last run says a new worker
would only repeat it (and says why in an event), and a dry run writes nothing.

Workers are real ``hermes -p PROFILE kanban work`` processes talking to the fake model;
the board is a real SQLite file, read back through sqlite3.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_cli import kanban_db as kb

from hermes import profiles
from hermes.kanban import db as board_db
from hermes.kanban import dispatch, respawn, tasks
from hermes.testing import FakeLLMServer
from hermes.testing import llm_server as fake
from tests.kanban.helpers import wait_for_task

REVIEW_SKILL = (
    "---\nname: sdlc-review\ndescription: Review a pull request and merge it.\n---\n"
    "Check every acceptance criterion, then merge. REVIEW-MARKER-41.\n"
)


@pytest.fixture
def board(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[sqlite3.Connection]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.delenv("HERMES_KANBAN_RATE_LIMIT_COOLDOWN_SECONDS", raising=False)
    with board_db.connect_closing() as conn:
        yield conn


@pytest.fixture
def reviewer(board: sqlite3.Connection, fake_llm: FakeLLMServer, monkeypatch: Any) -> str:
    """A profile ``reviewer`` whose agent talks to the fake model and has 0.19's
    reviewer skill installed."""
    monkeypatch.setenv("HERMES_BASE_URL", fake_llm.url)
    monkeypatch.setenv("HERMES_MODEL", fake.DEFAULT_MODEL)
    home = profiles.create("reviewer")
    skill = home / "skills" / "sdlc-review"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(REVIEW_SKILL, encoding="utf-8")
    return "reviewer"


def wait_for_run(conn: sqlite3.Connection, task_id: str, outcome: str) -> list[kb.Run]:
    """The task's runs once its latest ended with ``outcome`` (or after two minutes)."""
    deadline = time.monotonic() + 120
    while True:
        runs = tasks.list_runs(conn, task_id)
        if (runs and runs[-1].outcome == outcome) or time.monotonic() > deadline:
            return runs
        time.sleep(0.1)


def test_a_review_task_runs_its_reviewers_turn_with_the_review_skill(
    board: sqlite3.Connection, reviewer: str, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(fake.text("Reviewed: every criterion holds, merged."))
    task_id = tasks.create_task(board, title="Review PR 42", assignee=reviewer)
    board.execute("UPDATE tasks SET status = 'review' WHERE id = ?", (task_id,))  # as a worker
    result = dispatch.dispatch_once(board)
    assert [s[:2] for s in result.spawned] == [(task_id, reviewer)]
    done = wait_for_task(board, task_id, "done")
    assert done.status == "done", kb.read_worker_log(task_id)
    assert done.result == "Reviewed: every criterion holds, merged."
    assert done.skills is None  # the reviewer's skill is its worker's, not the task's
    asked = fake_llm.requests[0]["messages"][-1]["content"]
    assert '"sdlc-review" skill' in asked and "REVIEW-MARKER-41" in asked
    assert "Review PR 42" in asked
    claimed = [e for e in tasks.list_events(board, task_id) if e.kind == "claimed"]
    assert claimed[0].payload is not None
    assert claimed[0].payload["source_status"] == "review"
    runs = tasks.list_runs(board, task_id)
    assert [(r.profile, r.outcome) for r in runs] == [(reviewer, "completed")]


def test_a_ready_task_does_not_get_the_review_skill(
    board: sqlite3.Connection, reviewer: str, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(fake.text("Built."))
    task_id = tasks.create_task(board, title="Build it", assignee=reviewer)
    dispatch.dispatch_once(board)
    done = wait_for_task(board, task_id, "done")
    assert done.status == "done", kb.read_worker_log(task_id)
    assert "REVIEW-MARKER-41" not in fake_llm.requests[0]["messages"][-1]["content"]


def test_a_turn_refused_for_the_rate_limit_waits_out_the_cooldown(
    board: sqlite3.Connection,
    reviewer: str,
    fake_llm: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The provider answers 429 to every retry: the worker puts the task back without
    counting a failure; the next tick holds it for the cool-down and says why; with no
    cool-down it runs again."""
    fake_llm.script(*[fake.rate_limited(retry_after=0)] * 5)
    task_id = tasks.create_task(board, title="Summarise the logs", assignee=reviewer)
    first = dispatch.dispatch_once(board)
    assert [s[0] for s in first.spawned] == [task_id]
    runs = wait_for_run(board, task_id, "rate_limited")
    assert [r.outcome for r in runs] == ["rate_limited"], kb.read_worker_log(task_id)
    requeued = tasks.get_task(board, task_id)
    assert requeued is not None
    assert (requeued.status, requeued.consecutive_failures) == ("ready", 0)
    assert requeued.claim_lock is None and "429" in (requeued.last_failure_error or "")

    held = dispatch.dispatch_once(board)
    assert held.spawned == []
    assert held.respawn_guarded == [(task_id, "rate_limit_cooldown")]
    events = [e for e in tasks.list_events(board, task_id) if e.kind == "respawn_guarded"]
    assert [e.payload for e in events] == [{"reason": "rate_limit_cooldown"}]

    fake_llm.script(fake.text("Three errors, all at startup."))
    monkeypatch.setenv("HERMES_KANBAN_RATE_LIMIT_COOLDOWN_SECONDS", "0")
    again = dispatch.dispatch_once(board)
    assert [s[0] for s in again.spawned] == [task_id]
    done = wait_for_task(board, task_id, "done")
    assert (done.status, done.result) == ("done", "Three errors, all at startup.")


def test_a_task_whose_last_failure_was_a_quota_error_is_held_with_the_reason(
    board: sqlite3.Connection,
) -> None:
    started: list[str] = []

    def refused(task: kb.Task, workspace: str) -> int:
        started.append(task.id)
        raise RuntimeError("HTTP 403: API quota exceeded for this key")

    task_id = tasks.create_task(board, title="Fetch the report", assignee="builder")
    first = dispatch.dispatch_once(board, spawn_fn=refused, failure_limit=3)
    assert started == [task_id] and first.auto_blocked == []
    second = dispatch.dispatch_once(board, spawn_fn=refused, failure_limit=3)
    assert started == [task_id]  # not started again
    assert second.respawn_guarded == [(task_id, "blocker_auth")]
    task = tasks.get_task(board, task_id)
    assert task is not None and task.status == "ready"
    reasons = [e.payload for e in tasks.list_events(board, task_id) if e.kind == "respawn_guarded"]
    assert reasons == [{"reason": "blocker_auth"}]


def board_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the board's file, read by a separate connection."""
    reader = sqlite3.connect(path)
    try:
        names = [
            r[0]
            for r in reader.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {n: reader.execute(f"SELECT * FROM {n} ORDER BY rowid").fetchall() for n in names}
    finally:
        reader.close()


def test_a_dry_run_changes_nothing_on_the_board(board: sqlite3.Connection) -> None:
    builder = "default"  # a profile in every home
    clean = tasks.create_task(board, title="Clean", assignee=builder)
    won = tasks.create_task(board, title="Already won", assignee=builder)
    now = int(time.time())
    board.execute(
        "INSERT INTO task_runs (task_id, status, outcome, started_at, ended_at) "
        "VALUES (?, 'done', 'completed', ?, ?)",
        (won, now - 300, now - 60),
    )
    quota = tasks.create_task(board, title="Out of quota", assignee=builder)
    board.execute("UPDATE tasks SET last_failure_error = 'quota exceeded' WHERE id = ?", (quota,))
    review = tasks.create_task(board, title="Review", assignee=builder)
    floater = tasks.create_task(board, title="Review, nobody's")
    ghost = tasks.create_task(board, title="Review, no profile's", assignee="ghost")
    for task_id in (review, floater, ghost):
        board.execute("UPDATE tasks SET status = 'review' WHERE id = ?", (task_id,))
    before = board_rows(kb.kanban_db_path())

    result = dispatch.dispatch_once(board, dry_run=True)

    assert board_rows(kb.kanban_db_path()) == before
    assert [s[0] for s in result.spawned] == [clean, review]
    assert sorted(result.respawn_guarded) == sorted(
        [(won, "recent_success"), (quota, "blocker_auth")]
    )
    assert (result.skipped_unassigned, result.skipped_nonspawnable) == ([floater], [ghost])


def test_a_lane_has_spawnable_work_only_for_a_profile(board: sqlite3.Connection) -> None:
    assert (kb.has_spawnable_ready(board), kb.has_spawnable_review(board)) == (False, False)
    tasks.create_task(board, title="For a terminal", assignee="orion-cc")
    review = tasks.create_task(board, title="Review", assignee="orion-cc")
    board.execute("UPDATE tasks SET status = 'review' WHERE id = ?", (review,))
    assert (kb.has_spawnable_ready(board), kb.has_spawnable_review(board)) == (False, False)
    profiles.create("orion-cc")
    assert (kb.has_spawnable_ready(board), kb.has_spawnable_review(board)) == (True, True)


def test_the_cooldown_setting_falls_back_on_nonsense(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw, expected in (("90", 90), ("0", 0), ("-5", 300), ("soon", 300), ("", 300)):
        monkeypatch.setenv("HERMES_KANBAN_RATE_LIMIT_COOLDOWN_SECONDS", raw)
        assert respawn.rate_limit_cooldown_seconds() == expected
