"""Turn locks (``db.gateway.try_lock_turn`` / ``unlock_turn``): exclusive across processes
and within one, freed when the holder dies, one per conversation (invariant 11 across
gateways). Every test runs on SQLite and on PostgreSQL, with real "spawn" processes.
"""

from __future__ import annotations

import logging
import os
import stat
import time
import uuid
from pathlib import Path

import pytest

from hermes.state import ReadOnlyStoreError, SessionDB, StoreUnavailableError

from . import workers
from .helpers import StoreSpec
from .procs import CTX, Processes


def conversation() -> str:
    # Advisory locks are database-wide: ids of their own keep parallel tests apart.
    return f"conv-{uuid.uuid4().hex}"


def eventually(predicate, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_lock_held_in_one_process_is_refused_in_another_until_unlocked(
    db: SessionDB, store: StoreSpec
) -> None:
    c = conversation()
    release, finish = CTX.Event(), CTX.Event()
    with Processes() as procs:
        procs.start(workers.hold_turn_locks, store, [c], release, finish)
        assert procs.expect("locked") == [[True]]
        assert db.gateway.try_lock_turn(c) is False
        procs.start(workers.try_turn_locks, store, [c])
        assert procs.expect("tried") == [[False]]
        release.set()
        procs.expect("unlocked")  # the holder lives on: unlock freed it, not its death
        assert db.gateway.try_lock_turn(c) is True
        procs.start(workers.try_turn_locks, store, [c])
        assert procs.expect("tried") == [[False]]
        db.gateway.unlock_turn(c)
        procs.start(workers.try_turn_locks, store, [c])
        assert procs.expect("tried") == [[True]]
        finish.set()


def test_a_holder_killed_with_sigkill_frees_its_locks(db: SessionDB, store: StoreSpec) -> None:
    held = [conversation(), conversation()]
    with Processes() as procs:
        proc = procs.start(workers.hold_turn_locks, store, held, None, None)
        assert procs.expect("locked") == [[True, True]]
        assert db.gateway.try_lock_turn(held[0]) is False
        proc.kill()
        proc.join()
        procs.procs.remove(proc)
    # The OS (SQLite) or the server, on seeing the session's socket close, frees them.
    assert eventually(lambda: db.gateway.try_lock_turn(held[0]))
    assert db.gateway.try_lock_turn(held[1]) is True


def test_locks_of_different_conversations_are_independent(db: SessionDB, store: StoreSpec) -> None:
    mine, theirs = conversation(), conversation()
    release, finish = CTX.Event(), CTX.Event()
    with Processes() as procs:
        procs.start(workers.hold_turn_locks, store, [theirs], release, finish)
        assert procs.expect("locked") == [[True]]
        assert db.gateway.try_lock_turn(mine) is True
        assert db.gateway.try_lock_turn(theirs) is False
        procs.start(workers.try_turn_locks, store, [mine, theirs, conversation()])
        assert procs.expect("tried") == [[False, False, True]]
        db.gateway.unlock_turn(mine)
        release.set()
        procs.expect("unlocked")
        finish.set()


def test_within_a_process_a_lock_is_exclusive_and_unlocking_is_harmless(make_db) -> None:
    one, two = make_db(), make_db()
    c = conversation()
    one.gateway.unlock_turn(c)  # never held: nothing happens
    assert one.gateway.try_lock_turn(c) is True
    assert one.gateway.try_lock_turn(c) is False  # not re-entrant
    assert two.gateway.try_lock_turn(c) is False  # another SessionDB of this process
    two.gateway.unlock_turn(c)  # not its lock: still held
    assert two.gateway.try_lock_turn(c) is False
    one.gateway.unlock_turn(c)
    one.gateway.unlock_turn(c)  # twice: harmless
    assert two.gateway.try_lock_turn(c) is True
    assert one.gateway.try_lock_turn(c) is False
    two.close()  # closing gives back what it held
    assert one.gateway.try_lock_turn(c) is True
    one.gateway.unlock_turn(c)


def test_closing_another_store_handle_keeps_this_ones_locks(make_db, store: StoreSpec) -> None:
    # POSIX drops every lock of a process on a file when any descriptor of it closes.
    holder = make_db()
    c = conversation()
    assert holder.gateway.try_lock_turn(c) is True
    other = make_db()
    assert other.gateway.try_lock_turn(conversation()) is True
    other.close()
    with Processes() as procs:
        procs.start(workers.try_turn_locks, store, [c])
        assert procs.expect("tried") == [[False]]


def test_only_a_local_file_lock_says_an_event_loop_may_take_it_in_place(
    make_db, store: StoreSpec
) -> None:
    # The gateway takes an instant lock on its loop; a server round trip needs a thread.
    assert make_db().gateway.turn_locks_instant is (store.kind == "sqlite")


def test_a_read_only_store_has_no_turn_locks(make_db, store: StoreSpec) -> None:
    make_db()  # the store exists
    reader = make_db(read_only=True)
    with pytest.raises(ReadOnlyStoreError):
        reader.gateway.try_lock_turn(conversation())
    reader.gateway.unlock_turn(conversation())  # harmless
    if store.kind == "sqlite":
        assert not Path(f"{store.path}.turns").exists()


on_sqlite = pytest.mark.parametrize("store", ["sqlite"], indirect=True)
on_postgres = pytest.mark.parametrize("store", ["postgres"], indirect=True)


@on_sqlite
def test_the_sqlite_lock_file_is_private_and_made_on_first_use(make_db, store: StoreSpec) -> None:
    db = make_db()
    path = Path(f"{store.path}.turns")
    assert not path.exists()  # opening never writes
    assert db.gateway.try_lock_turn(conversation()) is True
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


# -- PostgreSQL: the dedicated connection breaks ---------------------------------------


def _kill_lock_session(db: SessionDB, store: StoreSpec) -> None:
    """End the server session holding this store's turn locks, as a restart would."""
    pid = db.backend.turn_locks._conn.info.backend_pid
    assert store.execute("SELECT pg_terminate_backend(?)", (pid,)) == [(True,)]
    assert eventually(
        lambda: (
            not store.execute(
                "SELECT 1 FROM pg_locks WHERE pid = ? UNION ALL"
                " SELECT 1 FROM pg_stat_activity WHERE pid = ?",
                (pid, pid),
            )
        )
    )


@on_postgres
def test_after_the_connection_breaks_the_held_locks_are_taken_back(
    db: SessionDB, store: StoreSpec, caplog
) -> None:
    caplog.set_level(logging.WARNING, logger="hermes.state")
    held = conversation()
    assert db.gateway.try_lock_turn(held) is True
    _kill_lock_session(db, store)
    assert db.gateway.try_lock_turn(conversation()) is True  # reconnects, takes `held` back first
    assert "took 1 of 1 back" in caplog.text
    with Processes() as procs:
        procs.start(workers.try_turn_locks, store, [held])
        assert procs.expect("tried") == [[False]]
    db.gateway.unlock_turn(held)
    assert "was lost" not in caplog.text


@on_postgres
def test_a_lock_taken_by_another_while_the_connection_was_down_is_reported_lost(
    db: SessionDB, store: StoreSpec, caplog
) -> None:
    caplog.set_level(logging.WARNING, logger="hermes.state")
    held, during_turn = conversation(), conversation()
    assert db.gateway.try_lock_turn(held) is True
    assert db.gateway.try_lock_turn(during_turn) is True
    _kill_lock_session(db, store)
    release, finish = CTX.Event(), CTX.Event()
    with Processes() as procs:
        procs.start(workers.hold_turn_locks, store, [held], release, finish)
        assert procs.expect("locked") == [[True]]  # the server freed it with the session
        db.gateway.unlock_turn(during_turn)  # its turn ends: the lock is gone, and it says so
        assert f"the turn lock of conversation {during_turn} was lost" in caplog.text
        assert db.gateway.try_lock_turn(conversation()) is True  # reconnects; cannot take `held`
        assert f"lost the turn lock of conversation {held}" in caplog.text
        assert db.gateway.try_lock_turn(held) is False
        release.set()
        procs.expect("unlocked")
        assert db.gateway.try_lock_turn(held) is True
        finish.set()


@on_postgres
def test_an_unreachable_server_is_an_error_not_an_unlocked_turn(
    db: SessionDB, store: StoreSpec
) -> None:
    assert db.gateway.try_lock_turn(conversation()) is True
    locks = db.backend.turn_locks
    locks._connect = _refuse  # from now on the server cannot be reached
    _kill_lock_session(db, store)
    with pytest.raises(StoreUnavailableError, match="Cannot reach PostgreSQL"):
        db.gateway.try_lock_turn(conversation())


def _refuse():
    import psycopg

    raise psycopg.OperationalError("connection refused")
