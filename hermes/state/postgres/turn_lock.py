"""Turn locks on PostgreSQL: session-level advisory locks on one dedicated connection.

Not a pooled connection: a session lock lives as long as its connection, which would
then stay checked out for a whole turn. Each backend opens one connection of its own at
its first ``try_lock`` and guards it with a lock. The server frees the locks when that
session ends: at once when the process dies, and within about a minute for a host that
vanished (this session's TCP keepalive is set short).

Keys use the two-int form ``(TURN_LOCK_SPACE, hash)``, a key space of its own (the
one-bigint form, used by the migration lock and maybe by other programs, never meets
it). The hash covers the schema, so stores in different schemas of one database do not
share locks; a 32-bit collision only makes two conversations take turns.

If the connection breaks, the next call reconnects and takes back the locks this backend
holds (with a warning); one it cannot get back, or finds gone at unlock, is logged as
lost: its turn may have overlapped another. A call that cannot reach the server raises
``StateError``, so a turn never runs unlocked without saying so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from typing import TypeGuard

import psycopg
from psycopg.rows import DictRow

from hermes.state.backend import conversation_key
from hermes.state.errors import StateError

log = logging.getLogger(__name__)

Connection = psycopg.Connection[DictRow]  # made with row_factory=dict_row

TURN_LOCK_SPACE = 0x68726D74  # "hrmt": the first int of every turn lock's key
# Best effort (a Unix socket ignores the keepalives; idle_session_timeout is 14+).
_SESSION_SETTINGS = (
    "SET tcp_keepalives_idle = 30",
    "SET tcp_keepalives_interval = 10",
    "SET tcp_keepalives_count = 3",
    "SET idle_session_timeout = 0",
)
_TRY = "SELECT pg_try_advisory_lock(%s, %s) AS ok"
_UNLOCK = "SELECT pg_advisory_unlock(%s, %s) AS ok"


def advisory_key(conversation_id: str, namespace: str) -> tuple[int, int]:
    """The ``(int, int)`` advisory lock key of a conversation in a schema."""
    low = conversation_key(conversation_id, namespace) & 0xFFFFFFFF
    return TURN_LOCK_SPACE, low - (1 << 32) if low >= 1 << 31 else low


class AdvisoryTurnLocks:
    """The turn locks of one PostgreSQL backend (one SessionDB)."""

    instant = False  # a round trip to the server

    def __init__(
        self,
        connect: Callable[[], Connection],
        explain: Callable[[psycopg.Error], StateError],
    ) -> None:
        self._connect = connect
        self._explain = explain  # a driver error as one sentence without the password
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._namespace = ""
        self._held: set[str] = set()
        self._pid = os.getpid()
        self._closed = False

    def try_lock(self, conversation_id: str) -> bool:
        """Take the conversation's lock without waiting; False if anyone holds it."""
        with self._lock:
            if self._closed:
                raise StateError("The state store is closed.")
            if self._pid != os.getpid():
                raise StateError(
                    "A SessionDB cannot be used across fork(); open a new one in the child."
                )
            if conversation_id in self._held:
                return False
            ok = self._try(conversation_id)
            if ok:
                self._held.add(conversation_id)
            return ok

    def unlock(self, conversation_id: str) -> None:
        """Give the lock back; nothing happens unless this backend holds it."""
        with self._lock:
            if conversation_id not in self._held:
                return
            self._held.discard(conversation_id)
            conn, released = self._conn, False
            if _usable(conn):
                try:
                    released = self._ask(conn, _UNLOCK, conversation_id)
                except psycopg.Error as exc:
                    if _usable(conn):
                        raise self._explain(exc) from exc
                    self._drop()  # the lock ended with the session
            if not released:
                log.warning(
                    "the turn lock of conversation %s was lost while its turn ran (the "
                    "connection to PostgreSQL broke); another gateway may have answered it "
                    "at the same time",
                    conversation_id,
                )

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._held.clear()
            if _usable(self._conn):
                # Given back now: on a mere disconnect the server frees them only once
                # its backend process has noticed and exited, a moment later.
                with contextlib.suppress(psycopg.Error):
                    self._conn.execute("SELECT pg_advisory_unlock_all()")
            self._drop()

    # -- the connection ---------------------------------------------------------------

    def _try(self, conversation_id: str) -> bool:
        conn = self._connection()
        try:
            return self._ask(conn, _TRY, conversation_id)
        except psycopg.Error as exc:
            if _usable(conn):
                raise self._explain(exc) from exc
        self._drop()  # reconnect (taking back what we held) and ask once more
        try:
            return self._ask(self._connection(), _TRY, conversation_id)
        except psycopg.Error as exc:
            raise self._explain(exc) from exc

    def _ask(self, conn: Connection, sql: str, conversation_id: str) -> bool:
        row = conn.execute(sql, advisory_key(conversation_id, self._namespace)).fetchone()
        return bool(row and row["ok"])

    def _connection(self) -> Connection:
        if _usable(self._conn):
            return self._conn
        self._drop()
        try:
            conn = self._connect()
        except psycopg.Error as exc:
            raise self._explain(exc) from None
        try:
            for statement in _SESSION_SETTINGS:
                try:
                    conn.execute(statement)
                except psycopg.errors.UndefinedObject:
                    pass  # a server without that setting
            row = conn.execute("SELECT current_schema() AS s").fetchone()
            self._namespace = (row and row["s"]) or ""
            self._take_back(conn)
        except psycopg.Error as exc:
            conn.close()
            raise self._explain(exc) from exc
        self._conn = conn
        return conn

    def _take_back(self, conn: Connection) -> None:
        """After a reconnection: take again the locks the broken session held."""
        if not self._held:
            return
        lost = sorted(c for c in self._held if not self._ask(conn, _TRY, c))
        self._held.difference_update(lost)
        log.warning(
            "the connection to PostgreSQL that holds the turn locks broke; took %d of %d back",
            len(self._held),
            len(self._held) + len(lost),
        )
        for conversation_id in lost:
            log.warning(
                "lost the turn lock of conversation %s: another gateway took it while the "
                "connection was down, so their turns may overlap",
                conversation_id,
            )

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error:
                pass


def _usable(conn: Connection | None) -> TypeGuard[Connection]:
    """Whether there is a connection that is neither broken nor closed."""
    return conn is not None and not conn.broken and not conn.closed
