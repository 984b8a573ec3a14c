"""hermes-webui's Kanban panel on hermes: ``hermes_cli.kanban_db`` called as the panel's
bridge (api/kanban_bridge.py) calls it, with the SQL it runs itself, on a real home.

``webui_kanban_bridge.py`` plays a session in the panel (boards, tasks, links, comments,
claim/block/unblock/complete, archive, the board view and its event feed, stats, logs) and
prints what the panel would show; it must print the same under hermes and under Hermes
Agent 0.19. Then what hermes does on its own: the dispatcher, and the guard that keeps
every slug and task id that becomes a path inside the board's folder.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from hermes_cli import kanban_db as kb

from hermes import profiles
from tests.compat.hermes_agent import play_session
from tests.fakes import llm_server as fake
from tests.kanban.helpers import wait_for_task

HERE = Path(__file__).resolve().parent
SESSION = HERE / "webui_kanban_bridge.py"


def play(python: Path | str, home: Path) -> dict[str, Any]:
    return play_session(python, SESSION, home)


def test_the_panel_shows_on_hermes_what_it_shows_on_hermes_agent(
    hermes_agent_python: Path, tmp_path: Path
) -> None:
    ours = play(sys.executable, tmp_path / "hermes")
    theirs = play(hermes_agent_python, tmp_path / "hermes-agent")
    assert ours == theirs


def test_a_panel_session_on_hermes(tmp_path: Path) -> None:
    shown = play(sys.executable, tmp_path / "home")
    columns = shown["board"]["columns"]
    assert [t[:2] for t in columns["done"]] == [["T1", "Write the spec v2"]]
    assert [t[0] for t in columns["ready"]] == ["T2", "T4", "T5"]  # T2 waited for T1
    assert (shown["b_before"], shown["b_after"]) == ("todo", "ready")
    assert shown["board_unchanged"] == {"changed": False, "latest_event_id": 21}
    assert shown["detail_task"]["status"] == "done" and shown["detail_task"]["assignee"] == "bob"
    assert [r[1:4] for r in shown["detail_runs"]] == [
        ["reclaimed", "reclaimed", "status changed to ready (webui/direct)"],
        ["blocked", "blocked", "needs input"],
        ["completed", "completed", "Spec done"],  # never claimed again: a closed run
    ]
    assert shown["boards_after_remove"]["boards"][0][0] == "default"
    assert shown["removed"] == ["side-project", "archived"] and shown["gone"] is False
    assert set(shown["schema"]) >= {"tasks", "task_links", "task_comments", "task_events"}
    assert shown["journal_mode"] == "wal"
    assert shown["bad_slugs"] == ["ValueError"] * 4


@pytest.fixture
def board(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    kb.init_db()
    return home


def test_the_board_is_where_hermes_agent_keeps_it_and_readable_by_sqlite(board: Path) -> None:
    with kb.connect_closing() as conn:
        task_id = kb.create_task(conn, title="Ship it", assignee="ops")
    assert kb.kanban_db_path() == board / "kanban.db"
    reader = sqlite3.connect(board / "kanban.db")
    try:
        row = reader.execute("SELECT title, assignee, status FROM tasks WHERE id = ?", (task_id,))
        assert row.fetchone() == ("Ship it", "ops", "ready")
    finally:
        reader.close()
    meta = kb.create_board("ops-work")
    assert Path(meta["db_path"]) == board / "kanban" / "boards" / "ops-work" / "kanban.db"


def test_a_closing_connection_is_closed(board: Path) -> None:
    with kb.connect_closing() as conn:
        conn.execute("SELECT 1")
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


def test_two_claimers_of_one_task_one_wins(board: Path) -> None:
    """Two processes' connections claim the same ready task: SQLite serialises the
    writers, and the claim's compare-and-set lets only the first through."""
    with kb.connect_closing() as first, kb.connect_closing() as second:
        task_id = kb.create_task(first, title="Contested", assignee="builder")
        won = kb.claim_task(first, task_id, claimer="host:1")
        lost = kb.claim_task(second, task_id, claimer="host:2")
        runs = kb.list_runs(second, task_id)
    assert won is not None and won.claim_lock == "host:1"
    assert lost is None
    assert [(r.status, r.claim_lock) for r in runs] == [("running", "host:1")]


@pytest.fixture
def builder(board: Path, fake_llm: fake.FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A profile ``builder`` whose agent talks to the fake model."""
    monkeypatch.setenv("HERMES_BASE_URL", fake_llm.url)
    monkeypatch.setenv("HERMES_MODEL", fake.DEFAULT_MODEL)
    profiles.create("builder")
    return "builder"


def test_dispatch_runs_a_task_as_a_turn_of_its_assignees_agent(
    board: Path, builder: str, fake_llm: fake.FakeLLMServer
) -> None:
    fake_llm.script(fake.text("The spec: three endpoints, one table."))
    with kb.connect_closing() as conn:
        spec = kb.create_task(conn, title="Write the spec", assignee=builder)
        build = kb.create_task(conn, title="Build it", assignee=builder, parents=[spec])
        kb.add_comment(conn, spec, "webui", "Keep it short")
        # As the panel's Dispatch button calls it (bridge's _dispatch_payload).
        result = kb.dispatch_once(conn, dry_run=False, max_spawn=8)
        assert [s[:2] for s in result.spawned] == [(spec, builder)]
        done = wait_for_task(conn, spec, "done")
        runs = kb.list_runs(conn, spec)
        child = wait_for_task(conn, build, "ready")  # promoted just after the parent is done
    assert done.status == "done", kb.read_worker_log(spec)
    assert done.result == "The spec: three endpoints, one table."
    assert [(r.profile, r.outcome, r.summary) for r in runs] == [
        (builder, "completed", "The spec: three endpoints, one table.")
    ]
    assert child is not None and child.status == "ready"  # it waited for the spec
    asked = fake_llm.requests[0]["messages"][-1]["content"]
    assert "Write the spec" in asked  # 0.19's worker context: the comment under its author
    assert "comment from worker `webui`:\nKeep it short" in asked
    assert "The spec: three endpoints" in (kb.read_worker_log(spec) or "")


def test_a_task_dispatched_on_a_board_not_current_runs_on_its_board(
    board: Path, builder: str, fake_llm: fake.FakeLLMServer
) -> None:
    """The panel dispatches ``?board=side`` on that board's connection while ``default``
    is the active board: the worker must find its task where it was claimed."""
    fake_llm.script(fake.text("Done on the side board."))
    kb.create_board("side")
    with kb.connect_closing(board="side") as conn:
        task_id = kb.create_task(conn, title="Side work", assignee=builder)
        kb.dispatch_once(conn)
        done = wait_for_task(conn, task_id, "done")
    assert kb.get_current_board() == "default"
    assert (done.status, done.result) == ("done", "Done on the side board."), kb.read_worker_log(
        task_id
    )


def test_a_turn_that_fails_blocks_its_task_with_the_reason(
    board: Path, builder: str, fake_llm: fake.FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens
    with kb.connect_closing() as conn:
        task_id = kb.create_task(conn, title="Unreachable", assignee=builder, max_retries=1)
        kb.dispatch_once(conn)
        blocked = wait_for_task(conn, task_id, "blocked")
        runs = kb.list_runs(conn, task_id)
    assert blocked.status == "blocked", kb.read_worker_log(task_id)
    assert runs[-1].outcome == "blocked" and runs[-1].summary


def test_a_task_whose_assignee_is_no_profile_waits(
    board: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with kb.connect_closing() as conn:
        ready = kb.create_task(conn, title="Assigned", assignee="ghost")
        kb.create_task(conn, title="Nobody's")
        with caplog.at_level(logging.WARNING, logger="hermes.kanban"):
            result = kb.dispatch_once(conn, dry_run=False, max_spawn=8)
        task = kb.get_task(conn, ready)
    assert task is not None and task.status == "ready"
    assert result.spawned == [] and result.skipped_nonspawnable == [ready]
    assert len(result.skipped_unassigned) == 1
    assert f"Kanban task {ready} waits: its assignee 'ghost' is no profile" in caplog.text


def test_dispatch_starts_a_task_through_the_callers_spawn_fn(board: Path) -> None:
    started: list[tuple[str, str, str | None]] = []

    def spawn(task: kb.Task, workspace: str, board: str | None = None) -> int:
        started.append((task.id, workspace, board))
        return 4242

    with kb.connect_closing() as conn:
        task_id = kb.create_task(conn, title="Assigned", assignee="builder")
        result = kb.dispatch_once(conn, spawn_fn=spawn)
        task = kb.get_task(conn, task_id)
    workspace = str(board / "kanban" / "workspaces" / task_id)
    assert started == [(task_id, workspace, None)]
    assert result.spawned == [(task_id, "builder", workspace)]
    assert task is not None and (task.status, task.worker_pid) == ("running", 4242)
    assert task.workspace_path == workspace and Path(workspace).is_dir()


def test_a_spawn_that_fails_puts_the_task_back_then_gives_up(board: Path) -> None:
    def broken(task: kb.Task, workspace: str) -> int:
        raise OSError("no such worker")

    with kb.connect_closing() as conn:
        task_id = kb.create_task(conn, title="Assigned", assignee="builder")
        first = kb.dispatch_once(conn, spawn_fn=broken, failure_limit=2)
        after_one = kb.get_task(conn, task_id)
        second = kb.dispatch_once(conn, spawn_fn=broken, failure_limit=2)
        after_two = kb.get_task(conn, task_id)
        runs = kb.list_runs(conn, task_id)
    assert first.spawned == [] and first.auto_blocked == []
    assert after_one is not None and (after_one.status, after_one.claim_lock) == ("ready", None)
    assert second.auto_blocked == [task_id]
    assert after_two is not None and after_two.status == "blocked"
    assert after_two.last_failure_error == "no such worker"
    assert [r.outcome for r in runs] == ["spawn_failed", "gave_up"]


# --- the path guard: an attacker names files outside the board ---------------------------

ATTACK_ROOT = Path("/var/tmp/hermes-kanban-attack")


@pytest.fixture
def attacked(monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A home whose root holds a secret ending in ``.log`` (what a worker-log path reads),
    and a folder beside it with another; outside /tmp, where the sandbox shows files."""
    case = ATTACK_ROOT / f"{os.getpid()}-{os.urandom(4).hex()}"
    home, outside = case / "home", case / "outside"
    home.mkdir(parents=True)
    outside.mkdir()
    (home / "secret.log").write_text("OPENAI_API_KEY=sk-planted-home\n")
    (outside / "secret.log").write_text("OPENAI_API_KEY=sk-planted-outside\n")
    (outside / "kanban.db").write_bytes(b"")
    monkeypatch.setenv("HERMES_HOME", str(home))
    yield home, outside
    import shutil

    shutil.rmtree(case, ignore_errors=True)


def test_a_task_id_cannot_read_a_file_outside_the_logs(attacked: tuple[Path, Path]) -> None:
    home, outside = attacked
    for task_id in ("../../secret", str(outside / "secret"), "..\\..\\secret", "..", ""):
        with pytest.raises(ValueError, match="invalid task id"):
            kb.read_worker_log(task_id)
        with pytest.raises(ValueError, match="invalid task id"):
            kb.worker_log_path(task_id)
    logs = home / "kanban" / "logs"
    logs.mkdir(parents=True)
    (logs / "t_1234abcd.log").write_text("line one\nline two\n")
    assert kb.read_worker_log("t_1234abcd") == "line one\nline two\n"
    assert kb.read_worker_log("t_1234abcd", tail_bytes=12) == "line two\n"


@pytest.mark.parametrize("slug", ["../../outside", "../outside", str(ATTACK_ROOT), "a/b", ".."])
def test_a_board_slug_cannot_leave_the_boards_folder(
    attacked: tuple[Path, Path], slug: str
) -> None:
    home, outside = attacked
    calls = [
        lambda: kb.create_board(slug),
        lambda: kb.connect(board=slug),
        lambda: kb.init_db(board=slug),
        lambda: kb.set_current_board(slug),
        lambda: kb.remove_board(slug, archive=False),
        lambda: kb.write_board_metadata(slug, name="x"),
        lambda: kb.kanban_db_path(slug),
        lambda: kb.read_worker_log("t_1", board=slug),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="invalid board slug"):
            call()
    assert sorted(p.name for p in outside.iterdir()) == ["kanban.db", "secret.log"]
    assert (outside / "kanban.db").read_bytes() == b""
    assert not (home / "kanban" / "current").exists()
