"""Group commit: write transactions that wait for the writer at once share one COMMIT.

With ``synchronous=FULL`` every COMMIT is an fsync of a few milliseconds, and a
process has one writer connection per file, so threads writing at the same moment (a
gateway answering many chats) would queue for it one fsync each. Instead, each
writer leaves its transaction in ``WriteQueue`` and takes the writer lock; whoever
gets the lock runs every transaction waiting by then, each inside its own SAVEPOINT
(one that fails rolls back alone and gets its own error), commits once, and hands
every caller its result. Nobody returns before the COMMIT that holds its writes, so
durability is what it was; a transaction alone runs exactly as before.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

T = TypeVar("T")
Work = Callable[[Any], T]  # a transaction's body: takes the backend's Tx, returns T


class Writer(Protocol):
    """What the queue needs of a backend (``SQLiteBackend``)."""

    @property
    def conn(self) -> sqlite3.Connection: ...

    def run_alone(self, work: Work[T]) -> T:
        """BEGIN IMMEDIATE, ``work``, COMMIT; rolled back and raised on error."""
        ...

    def begin_write(self) -> None: ...

    def commit(self) -> None: ...

    def call(self, work: Work[T]) -> T:
        """``work`` on this connection, its error translated as ``run_alone`` would."""
        ...


@dataclass
class _Job(Generic[T]):
    work: Work[T]
    result: T | None = None
    error: BaseException | None = None
    done: bool = False

    def outcome(self) -> T:
        if self.error is not None:
            raise self.error
        # Done without an error means ``work`` returned, and ``result`` is what it gave.
        return cast(T, self.result)


class WriteQueue:
    """The write transactions waiting for one connection, run in batches."""

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock  # the writer connection's lock
        self._waiting: list[_Job[Any]] = []  # jobs of every result type
        self._waiting_lock = threading.Lock()

    def run(self, work: Work[T], writer: Writer) -> T:
        """Run ``work`` in a committed transaction, with whatever else waits by then."""
        job = _Job(work)
        with self._waiting_lock:
            self._waiting.append(job)
        with self.lock:
            if not job.done:  # else a batch that ran while we waited took it
                with self._waiting_lock:
                    batch, self._waiting = self._waiting, []
                if len(batch) == 1:
                    _run_alone(job, writer)
                else:
                    _run_batch(batch, writer)
        return job.outcome()


def _run_alone(job: _Job[Any], writer: Writer) -> None:
    try:
        job.result = writer.run_alone(job.work)
    except BaseException as exc:  # handed to the caller, in its own thread
        job.error = exc
    job.done = True


def _run_batch(batch: list[_Job[Any]], writer: Writer) -> None:
    conn = writer.conn
    try:
        writer.begin_write()
        for job in batch:
            conn.execute("SAVEPOINT grouped")
            try:
                job.result = writer.call(job.work)
            except BaseException as exc:
                job.error = exc
                if not conn.in_transaction:
                    # SQLite rolled the whole transaction back (disk full, I/O
                    # error): the jobs before this one lost their writes too.
                    raise
                conn.execute("ROLLBACK TO grouped")
            conn.execute("RELEASE grouped")
        writer.commit()
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        for job in batch:
            if job.error is None:
                job.error, job.result = exc, None
    finally:
        for job in batch:
            job.done = True
