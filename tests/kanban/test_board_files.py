"""A board's file as hermes finds it: damaged, not a database at all, locked by another
writer, or made by a release before 0.19. Every file here is made and damaged through
SQLite, and this process never reads a board's bytes, as hermes's own process never does.

A damaged board is refused in one sentence naming the file and its byte-for-byte copy, and
left as it is; refused again, it is copied once. The copy is made by a child process, so
the SQLite locks this process holds on the file live through it. A busy board is no
damage: that error passes as SQLite gave it, with no copy made.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hermes_cli import kanban_db as kb

from hermes.kanban.board_bytes import copy_damaged


def _damage(path: Path) -> int:
    """Point the ``tasks`` table at its title index's pages, as a torn write could: the
    header stays sound, so only a check of the pages finds it. The damaged root page."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("CREATE INDEX IF NOT EXISTS damage_titles ON tasks(title)")
        index_root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'damage_titles'"
        ).fetchone()[0]
        conn.execute("PRAGMA writable_schema=ON")
        conn.execute("UPDATE sqlite_master SET rootpage = ? WHERE name = 'tasks'", (index_root,))
    return int(index_root)


def _tasks_root(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        row = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'tasks'").fetchone()
    return int(row[0])


@pytest.fixture
def damaged(tmp_path: Path) -> tuple[Path, int]:
    path = tmp_path / "kanban.db"
    with kb.connect_closing(path) as conn:
        for n in range(20):
            kb.create_task(conn, title=f"task {n}")
    return path, _damage(path)


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.corrupt.*"))


def test_a_damaged_board_is_refused_kept_and_copied_once(damaged: tuple[Path, int]) -> None:
    path, root = damaged
    kb._INITIALIZED_PATHS.clear()  # a process that has not opened it yet
    with pytest.raises(kb.KanbanDbCorruptError) as refused:
        kb.connect(path)
    error = refused.value
    assert error.db_path == path and error.backup_path is not None
    message = str(error)
    assert str(path) in message and str(error.backup_path) in message
    assert "move kanban.db aside to start an empty board" in message
    assert _tasks_root(path) == root  # left as it was: no schema written over it
    with contextlib.closing(sqlite3.connect(error.backup_path)) as copy:
        assert copy.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
    for _ in range(3):  # a dispatcher retrying every tick
        kb._INITIALIZED_PATHS.clear()
        with pytest.raises(kb.KanbanDbCorruptError):
            kb.init_db(path)
    assert _backups(path) == [error.backup_path]


def test_a_file_that_is_no_database_is_refused_as_damaged(tmp_path: Path) -> None:
    path = tmp_path / "kanban.db"
    path.write_text("these are someone's notes, not a board\n" * 20, encoding="utf-8")
    with pytest.raises(kb.KanbanDbCorruptError, match="file is not a database"):
        kb.connect(path)
    assert path.read_text(encoding="utf-8").startswith("these are someone's notes")


def test_a_board_busy_with_another_writer_is_not_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = kb.init_db(tmp_path / "kanban.db")
    kb._INITIALIZED_PATHS.clear()
    monkeypatch.setenv("HERMES_KANBAN_BUSY_TIMEOUT_MS", "200")
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as writer:
        writer.execute("BEGIN EXCLUSIVE")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            kb.connect(path)
        writer.execute("ROLLBACK")
    assert _backups(path) == []
    with kb.connect_closing(path) as conn:
        kb.create_task(conn, title="after the writer")


def test_a_board_from_before_0_19_gets_its_columns_and_keeps_its_tasks(tmp_path: Path) -> None:
    path = tmp_path / "kanban.db"
    with contextlib.closing(sqlite3.connect(path)) as old:
        old.execute(
            "CREATE TABLE tasks (id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT, "
            "assignee TEXT, status TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, "
            "created_by TEXT, created_at INTEGER NOT NULL, started_at INTEGER, "
            "completed_at INTEGER, workspace_kind TEXT NOT NULL DEFAULT 'scratch', "
            "workspace_path TEXT, claim_lock TEXT, claim_expires INTEGER)"
        )
        old.execute(
            "INSERT INTO tasks (id, title, status, created_at) VALUES ('t_old', 'kept', 'ready', 1)"
        )
        old.commit()
    with kb.connect_closing(path) as conn:
        assert kb.get_task(conn, "t_old").title == "kept"  # type: ignore[union-attr]
        new = kb.create_task(conn, title="new", tenant="ops", session_id="s1")
        assert [t.id for t in kb.list_tasks(conn, tenant="ops")] == [new]


def test_the_worker_command_says_the_board_is_damaged_in_one_sentence(
    damaged: tuple[Path, int],
) -> None:
    path, _root = damaged
    env = {**os.environ, "HERMES_KANBAN_DB": str(path)}
    run = subprocess.run(
        [sys.executable, "-m", "hermes", "kanban", "work", "t_any"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(path) in lines[0] and ".corrupt." in lines[0], run.stderr


_WRITE_FROM_ANOTHER_PROCESS = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
try:
    conn.execute("INSERT INTO notes VALUES ('from the other process')")
except sqlite3.OperationalError as exc:
    print(exc)
else:
    print("written")
"""


def _write_from_another_process(path: Path) -> str:
    run = subprocess.run(
        [sys.executable, "-c", _WRITE_FROM_ANOTHER_PROCESS, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return run.stdout.strip()


def test_copying_a_board_aside_keeps_this_process_locks_on_it(tmp_path: Path) -> None:
    # A rollback journal keeps the writer's lock on the board's own file (WAL keeps it
    # in -shm), so a descriptor of the file opened and closed here would drop it.
    path = tmp_path / "kanban.db"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("CREATE TABLE notes (text TEXT)")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO notes VALUES ('ours, not yet committed')")
        assert _write_from_another_process(path) == "database is locked"

        copy = copy_damaged(path)

        assert copy is not None and copy.backup.exists()
        assert copy.backup.name == f"kanban.db.corrupt.{copy.sha256[:16]}.bak"
        assert copy.head.startswith(b"SQLite format 3\x00")
        assert copy.backup.stat().st_mode & 0o777 == 0o600  # it may hold task text
        assert _write_from_another_process(path) == "database is locked"
        conn.execute("COMMIT")
    assert _write_from_another_process(path) == "written"


def test_the_copy_of_a_board_in_wal_holds_what_its_log_holds(tmp_path: Path) -> None:
    path = tmp_path / "kanban.db"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")  # the commits stay in kanban.db-wal
        conn.execute("CREATE TABLE notes (text TEXT)")
        conn.execute("INSERT INTO notes VALUES ('only in the log')")

        copy = copy_damaged(path)

    assert copy is not None
    assert copy.backup.with_name(copy.backup.name + "-wal").exists()
    with contextlib.closing(sqlite3.connect(copy.backup)) as backup:
        assert backup.execute("SELECT text FROM notes").fetchall() == [("only in the log",)]


def test_a_copy_left_by_a_killed_child_is_swept_and_a_live_one_kept(tmp_path: Path) -> None:
    path = tmp_path / "kanban.db"
    path.write_bytes(b"not a database at all")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid no process has now (a child killed mid-copy)
    left = tmp_path / f".kanban.db.{dead.pid}.x1y2z3.partial"
    left.write_bytes(b"half a copy")
    live = tmp_path / f".kanban.db.{os.getpid()}.a1b2c3.partial"
    live.write_bytes(b"a copy under way")

    copy = copy_damaged(path)

    assert copy is not None and copy.backup.read_bytes() == b"not a database at all"
    assert not left.exists() and live.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")) == [live.name]
