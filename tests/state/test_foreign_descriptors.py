"""Nothing acknowledged is lost, whatever else this process opens (issue 53).

POSIX advisory locks belong to a process and an inode: closing ANY descriptor of the
database file drops every lock SQLite holds on it in this process. Another process
that closes its connection then believes it is the last one, checkpoints and deletes
the -wal, and this process goes on committing into an unlinked file. Each variant
here keeps a writer open in this process, does one more thing in this process
(a read-only handle, a facade call, a probe), lets other processes open and close the
store, and then counts from a fresh process: every acknowledged append must be there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.state import SessionDB

ROUND = 20


def _python(code: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def open_and_close_elsewhere(path: Path) -> None:
    """Another process (`hermes sessions list`, say) opens the store and closes it."""
    _python(
        f"""
        from hermes.state import SessionDB
        db = SessionDB(db_path={str(path)!r})
        db.get_messages("s1")
        db.close()
        """
    )


def count_elsewhere(path: Path, session_id: str = "s1") -> int:
    """What a fresh process finds."""
    return int(
        _python(
            f"""
            from hermes.state import SessionDB
            db = SessionDB(db_path={str(path)!r}, read_only=True)
            print(len(db.get_messages({session_id!r})))
            db.close()
            """
        )
    )


def store_descriptors(path: Path) -> list[str]:
    """This process's open descriptors of the store file (SQLite's included)."""
    target = os.path.realpath(path)
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == target:
                found.append(fd)
        except OSError:
            pass
    return found


def survive(path: Path, touch: Callable[[], object]) -> None:
    """The reproduction of issue 53, with ``touch`` as the in-process helper."""
    writer = SessionDB(db_path=path)
    writer.create_session("s1", source="cli")
    for i in range(ROUND):
        writer.append_message("s1", role="user", content=f"m{i}")
    touch()
    open_and_close_elsewhere(path)
    for i in range(ROUND, 2 * ROUND):
        writer.append_message("s1", role="user", content=f"m{i}")
    assert count_elsewhere(path) == 2 * ROUND, "another process misses acknowledged appends"
    open_and_close_elsewhere(path)
    writer.append_message("s1", role="user", content="last")
    assert count_elsewhere(path) == 2 * ROUND + 1
    writer.close()
    assert count_elsewhere(path) == 2 * ROUND + 1, "appends lost once every process exited"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


def test_a_read_only_handle_kept_open_loses_nothing(path: Path) -> None:
    readers: list[SessionDB] = []

    def keep_one() -> None:
        reader = SessionDB(db_path=path, read_only=True)
        reader.get_session("s1")
        readers.append(reader)

    survive(path, keep_one)
    readers[0].close()


def test_a_read_only_handle_closed_at_once_loses_nothing(path: Path) -> None:
    def open_close() -> None:
        reader = SessionDB(db_path=path, read_only=True)
        reader.get_session("s1")
        reader.close()

    survive(path, open_close)


def test_asking_whether_it_is_hermes_agents_store_loses_nothing(path: Path) -> None:
    from hermes.state.store import is_hermes_agent_store

    survive(path, lambda: is_hermes_agent_store(path))
