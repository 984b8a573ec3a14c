"""Group commit on SQLite: writers waiting at once share one COMMIT, and each still
gets its own result or error, only after the commit that holds its writes."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.state import SessionDB
from hermes.state.errors import StateError


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=tmp_path / "state.db") as store:
        yield store


def _commits(db: SessionDB) -> list[str]:
    """Every COMMIT the shared writer connection sends from now on."""
    seen: list[str] = []
    db.backend.conn.set_trace_callback(
        lambda sql: seen.append(sql) if sql.strip().upper() == "COMMIT" else None
    )
    return seen


def _insert(value: str) -> Callable[[Any], str]:
    def work(tx: Any) -> str:
        tx.run("INSERT INTO gate (value) VALUES (?)", (value,))
        return value

    return work


def _fail_with(error: BaseException) -> Callable[[Any], None]:
    def work(tx: Any) -> None:
        tx.run("INSERT INTO gate (value) VALUES (?)", (f"doomed {error}",))
        raise error

    return work


def _batched(db: SessionDB, works: list[Callable[[Any], Any]]) -> list[tuple[str, Any]]:
    """Run ``works`` in threads that all queue while one transaction holds the writer,
    so they wait together; returns each one's ("ok", result) or ("error", exception)."""
    holding, release = threading.Event(), threading.Event()

    def hold(tx: Any) -> None:
        holding.set()
        assert release.wait(10)

    holder = threading.Thread(target=db.backend.transact, args=(hold,), kwargs={"write": True})
    holder.start()
    assert holding.wait(10)
    outcomes: list[tuple[str, Any]] = [("missing", None)] * len(works)

    def call(index: int, work: Callable[[Any], Any]) -> None:
        try:
            outcomes[index] = ("ok", db.backend.transact(work, write=True))
        except BaseException as exc:
            outcomes[index] = ("error", exc)

    threads = [threading.Thread(target=call, args=pair) for pair in enumerate(works)]
    for thread in threads:
        thread.start()
    _wait_until_waiting(db, len(works))
    release.set()
    for thread in [holder, *threads]:
        thread.join(10)
    return outcomes


def _wait_until_waiting(db: SessionDB, count: int) -> None:
    queue = db.backend._shared.writes
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with queue._waiting_lock:
            if len(queue._waiting) >= count:
                return
        time.sleep(0.001)
    raise AssertionError(f"{count} writers never queued up")


def _values(path: Path) -> list[str]:
    with sqlite3.connect(path) as other:  # another connection: only committed rows
        return sorted(row[0] for row in other.execute("SELECT value FROM gate"))


@pytest.fixture
def gate(db: SessionDB) -> SessionDB:
    db.backend.transact(lambda tx: tx.run("CREATE TABLE gate (value TEXT PRIMARY KEY)"), write=True)
    return db


def test_writers_waiting_together_share_one_commit(gate: SessionDB) -> None:
    commits = _commits(gate)
    outcomes = _batched(gate, [_insert(f"v{n}") for n in range(8)])

    assert outcomes == [("ok", f"v{n}") for n in range(8)]
    assert _values(gate.location) == sorted(f"v{n}" for n in range(8))
    assert len(commits) == 2  # the holder's own, then the eight together


def test_a_failing_transaction_in_a_batch_rolls_back_alone(gate: SessionDB) -> None:
    duplicate = _insert("taken")
    gate.backend.transact(duplicate, write=True)
    works = [_insert("a"), duplicate, _fail_with(ValueError("bad")), _insert("b")]

    outcomes = _batched(gate, works)

    assert outcomes[0] == ("ok", "a") and outcomes[3] == ("ok", "b")
    kind, error = outcomes[1]
    assert kind == "error" and isinstance(error, StateError)
    assert "refused the write" in str(error)
    kind, error = outcomes[2]
    assert kind == "error" and isinstance(error, ValueError)
    assert _values(gate.location) == ["a", "b", "taken"]


def test_each_writer_returns_only_after_its_rows_are_committed(gate: SessionDB) -> None:
    seen_at_return: dict[str, list[str]] = {}

    def insert_then_look(value: str) -> Callable[[], None]:
        def go() -> None:
            gate.backend.transact(_insert(value), write=True)
            seen_at_return[value] = _values(gate.location)

        return go

    threads = [threading.Thread(target=insert_then_look(f"w{n}")) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert len(seen_at_return) == 16
    for value, seen in seen_at_return.items():
        assert value in seen


def test_many_threads_appending_land_every_message_once(db: SessionDB) -> None:
    sessions = [db.create_session(source="test") for _ in range(8)]

    def talk(session: str) -> None:
        for turn in range(25):
            db.append_message(session, "user", f"{session} {turn}")

    for _ in range(3):  # a few rounds: batching depends on timing
        threads = [threading.Thread(target=talk, args=(s,)) for s in sessions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)

    for session in sessions:
        texts = [m["content"] for m in db.get_messages(session)]
        assert texts == [f"{session} {turn}" for turn in range(25)] * 3


def test_an_aborted_transaction_fails_every_job_of_its_batch(gate: SessionDB) -> None:
    """When SQLite itself rolls the whole transaction back, nobody is told it worked."""

    def abort(tx: Any) -> None:
        tx.run("ROLLBACK")  # what SQLite does on disk full or an I/O error
        raise sqlite3.OperationalError("disk I/O error")

    outcomes = _batched(gate, [_insert("early"), abort, _insert("late")])

    assert [kind for kind, _ in outcomes] == ["error", "error", "error"]
    assert _values(gate.location) == []
