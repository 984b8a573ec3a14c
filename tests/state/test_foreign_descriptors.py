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
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hermes.state import SessionDB
from hermes.state.errors import StateError, StoreReplacedError

ROUND = 20
_open_handles: list[SessionDB] = []  # the writer of the running reproduction


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


def open_and_close_elsewhere(path: Path, session_id: str = "s1") -> int:
    """Another process (`hermes sessions list`, say) opens the store and closes it; what
    it found. Closing a writer, it checkpoints and removes the -wal if it believes it is
    the store's last user."""
    return int(
        _python(
            f"""
            from hermes.state import SessionDB
            db = SessionDB(db_path={str(path)!r})
            print(len(db.get_messages({session_id!r})))
            db.close()
            """
        )
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
    _open_handles[:] = [writer]
    writer.create_session("s1", source="cli")
    for i in range(ROUND):
        writer.append_message("s1", role="user", content=f"m{i}")
    touch()
    assert open_and_close_elsewhere(path) == ROUND
    for i in range(ROUND, 2 * ROUND):
        writer.append_message("s1", role="user", content=f"m{i}")
    found = open_and_close_elsewhere(path)
    assert found == 2 * ROUND, "another process misses acknowledged appends"
    writer.append_message("s1", role="user", content="last")
    writer.close()
    assert count_elsewhere(path) == 2 * ROUND + 1, "appends lost once every process exited"


# -- the rule, checked at run time --------------------------------------------------
#
# SQLite opens its files in C, unseen by Python's audit hooks; every descriptor that
# Python code opens raises the "open" audit event. So any "open" event naming the
# store, its -wal or its -shm breaks the rule, wherever in hermes it came from.

_watched: set[str] = set()
_breaches: list[str] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event != "open" or not _watched or not args:
        return
    name, flags = args[0], args[2] if len(args) > 2 else 0
    if isinstance(flags, int) and flags & os.O_CREAT and flags & os.O_EXCL:
        return  # made by this very call: no connection can hold a lock on it yet

    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if isinstance(name, str | os.PathLike):
        found = os.path.realpath(os.fspath(name))
        if found in _watched:
            _breaches.append(found)


sys.addaudithook(_audit)  # a hook cannot be removed: it does nothing unless watching


@pytest.fixture
def path(isolated_home: Path) -> Iterator[Path]:
    """The home's store (the facades and commands find it there), watched: nothing in
    this process may open it, or its -wal or -shm, outside SQLite."""
    store = isolated_home / "state.db"
    real = os.path.realpath(store)
    names = {real, f"{real}-wal", f"{real}-shm"}
    _watched.update(names)
    _breaches.clear()
    try:
        yield store
    finally:
        _watched.difference_update(names)
    assert not _breaches, f"opened outside SQLite: {sorted(set(_breaches))}"


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


def test_the_cron_jobs_facade_loses_nothing(path: Path) -> None:
    from cron.jobs import create_job, list_jobs

    def tasks_panel() -> None:
        create_job(prompt="check the weather", schedule="0 9 * * *", name="weather")
        assert [job["name"] for job in list_jobs()] == ["weather"]

    survive(path, tasks_panel)


def test_the_process_registry_facade_loses_nothing(path: Path, isolated_home: Path) -> None:
    from tools.process_registry import process_registry

    from hermes.tools.processes import events

    def drain() -> None:
        # A completion event of conversation s1: the queue asks the store whether a
        # gateway serves s1 (a read-only handle) before handing the event out.
        event = events.CompletionEvent("proc_1", "s1", "true", 0, "", time.time())
        events.spool_event(isolated_home, event)
        assert process_registry.completion_queue.get_nowait()["session_id"] == "proc_1"

    survive(path, drain)


def test_the_import_dry_run_loses_nothing(path: Path) -> None:
    from hermes.cli.main import main

    survive(path, lambda: main(["import", "hermes-agent", str(path), "--dry-run"]))


def test_doctor_loses_nothing(path: Path) -> None:
    from hermes.cli.main import main

    survive(path, lambda: main(["doctor", "--offline"]))


def test_hermes_agents_session_db_opened_beside_a_writer_loses_nothing(path: Path) -> None:
    import hermes_state

    def a_tool() -> None:  # as a plugin's tool opens it inside a gateway: by default
        for read_only in (False, True):
            other = hermes_state.SessionDB(read_only=read_only)
            assert other.get_session("s1") is not None
            other.close()

    survive(path, a_tool)


# -- the rest of the class: what cannot be prevented is said -------------------------


def test_handles_opened_and_closed_in_another_thread_lose_nothing(path: Path) -> None:
    def in_a_thread() -> None:
        def work() -> None:
            for read_only in (False, True):
                other = SessionDB(db_path=path, read_only=read_only)
                other.get_session("s1")
                other.close()

        thread = threading.Thread(target=work)
        thread.start()
        thread.join(60)

    survive(path, in_a_thread)


def test_a_child_forked_after_open_loses_nothing(path: Path) -> None:
    def fork() -> None:
        # The child inherits the open connection, is refused it, closes it and exits:
        # its closes must not drop the parent's locks (POSIX locks are per process).
        child = os.fork()
        if child == 0:
            code = 0
            try:
                inherited = next(iter(_open_handles))
                try:
                    inherited.get_session("s1")
                    code = 3  # the store must refuse a handle used across fork()
                except StateError:
                    pass
                inherited.close()
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0

    survive(path, fork)


def test_vacuum_into_beside_a_writer_copies_everything_and_loses_nothing(
    path: Path, tmp_path: Path
) -> None:
    # A backup taken while writers run: SQLite's copy (it reads the -wal too), made by a
    # SQLite connection in the writer's own process.
    copy = tmp_path / "backup.db"

    def backup() -> None:
        conn = sqlite3.connect(path)
        try:
            conn.execute("VACUUM INTO ?", (str(copy),))
        finally:
            conn.close()

    survive(path, backup)
    with SessionDB(db_path=copy, read_only=True) as taken:
        assert len(taken.get_messages("s1")) == ROUND


def test_a_wal_deleted_by_hand_takes_no_more_writes(path: Path) -> None:
    db = SessionDB(db_path=path)
    db.create_session("s1", source="cli")
    db.append_message("s1", role="user", content="kept")
    Path(f"{path}-wal").unlink()
    assert not db.in_place()
    with pytest.raises(StoreReplacedError, match="-wal"):
        db.append_message("s1", role="user", content="would be lost")
    db.close()
    with SessionDB(db_path=path) as again:  # a store opened afterwards writes the file
        again.append_message("s1", role="user", content="stored")
    assert count_elsewhere(path) >= 1
