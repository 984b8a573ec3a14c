"""GatewayStore: the gateway's part of the store, reached as ``db.gateway``.

Routes (``routes``), the queue and its owners' heartbeats (``queue``) and the
per-conversation turn locks (each engine's ``turn_lock``) are what
gateways share through the store; ``SessionDB`` keeps segments, messages, the lease,
search and export. A GatewayStore is built once by its SessionDB on the same backend, so
its writes take the same writer connection and a rotation still moves a route in its
own transaction.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypedDict, TypeVar

from hermes.state.backend import Row
from hermes.state.errors import ReadOnlyStoreError
from hermes.state.gateway import cut_turns, routes
from hermes.state.gateway import queue as gateway_queue
from hermes.state.tables import Tables

T = TypeVar("T")

_SET_ROUTE = (
    "INSERT INTO gateway_routes (session_key, session_id, platform, updated_at)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (session_key) DO UPDATE SET"
    " session_id = excluded.session_id, updated_at = excluded.updated_at"
)


class QueuedInput(TypedDict):
    """Input kept for a busy conversation (a row of ``gateway_queue``)."""

    id: int
    session_key: str
    payload: dict[str, Any]
    enqueued_at: float
    owner: str | None  # the gateway that answers it; None: released, anyone may


class GatewayStore(Tables):
    """Routes, the gateway queue, heartbeats and turn locks, on a SessionDB's backend."""

    # -- turn locks (see each engine's ``turn_lock.py``) ----------------------------

    @property
    def turn_locks_instant(self) -> bool:
        """True if taking and giving back a turn lock never waits on I/O (SQLite's file
        locks): an event loop may then do it without a thread hop."""
        return self.backend.turn_locks.instant

    def try_lock_turn(self, conversation_id: str) -> bool:
        """Take the conversation's turn lock without waiting; False while anyone holds
        it (a gateway in another process or host, or another SessionDB in this one).

        It is held until ``unlock_turn``, the SessionDB's ``close`` or the death of this
        process, and costs no durable write. A read-only store has none.
        """
        if self.read_only:
            raise ReadOnlyStoreError(self.backend.location)
        return self.backend.turn_locks.try_lock(conversation_id)

    def unlock_turn(self, conversation_id: str) -> None:
        """Give the turn lock back; unlocking one this SessionDB does not hold does nothing."""
        if not self.read_only:
            self.backend.turn_locks.unlock(conversation_id)

    # -- routes (see ``routes``) ----------------------------------------------------

    def lookup_route(self, session_key: str) -> routes.Route | None:
        """The key's conversation and its tip, read from ``gateway_routes``.

        One read transaction; it writes only when the row must catch up (it lags behind
        the tip, or names a deleted conversation), never on a read-only store.
        """
        row, route = self._read(lambda tx: routes.look_up(tx, session_key))
        if row is None or self.read_only:
            return route
        if route is None or route.session_id != row["session_id"]:
            now, seen = time.time(), row["session_id"]
            self._write(lambda tx: routes.catch_up(tx, session_key, seen, route, now))
        return route

    def get_route(self, session_key: str) -> str | None:
        """The tip the key routes to (see ``lookup_route``)."""
        route = self.lookup_route(session_key)
        return route.session_id if route else None

    def claim_route(
        self, session_key: str, session_id: str, *, platform: str | None = None
    ) -> bool:
        """Route the key to ``session_id`` unless it already routes to a conversation
        (another gateway's, say); True if it took the route."""
        now = time.time()
        return self._write(lambda tx: routes.claim(tx, session_key, session_id, platform, now))

    def advance_route(
        self,
        session_key: str,
        conversation_id: str,
        session_id: str,
        *,
        platform: str | None = None,
    ) -> bool:
        """Compare-and-set after a turn: the key takes ``session_id`` (or its tip) only if
        it routes into ``conversation_id`` (or nowhere). False when it was pointed at
        another conversation meanwhile, by any gateway: it is never moved back."""
        known = self._read(lambda tx: routes.settled(tx, session_key, conversation_id, session_id))
        if known is not None:
            return known
        now = time.time()
        return self._write(
            lambda tx: routes.advance(tx, session_key, conversation_id, session_id, platform, now)
        )

    def set_route(self, session_key: str, session_id: str, *, platform: str | None = None) -> None:
        """Point the key at ``session_id`` whatever it routed to (``/new``)."""
        now = time.time()
        self._write(lambda tx: tx.run(_SET_ROUTE, (session_key, session_id, platform, now)))

    def delete_route(self, session_key: str) -> None:
        self._write(
            lambda tx: tx.run("DELETE FROM gateway_routes WHERE session_key = ?", (session_key,))
        )

    # -- the queue and heartbeats (see ``queue``) -----------------------------------

    def enqueue_gateway_input(
        self, session_key: str, payload: Mapping[str, Any], *, owner: str | None = None
    ) -> int:
        """Keep input for a busy conversation so it survives a restart; returns its id.

        ``owner`` is the gateway instance that will answer it (None: released)."""
        text = json.dumps(dict(payload), ensure_ascii=False)
        now = time.time()
        return self._write(lambda tx: gateway_queue.enqueue(tx, session_key, text, owner, now))

    def pending_gateway_inputs(self, session_key: str | None = None) -> list[QueuedInput]:
        """Every queued input (any owner) in arrival order."""
        rows = self._read(lambda tx: gateway_queue.pending(tx, session_key))
        return [_queued(r) for r in rows]

    def delete_gateway_input(self, input_id: int, *, owner: str | None = None) -> bool:
        """Delete a queued input only while ``owner`` owns it (None: while released);
        False when it is gone or someone else owns it."""
        return self._write(lambda tx: gateway_queue.delete(tx, input_id, owner))

    def claim_gateway_inputs(
        self,
        holder: str,
        *,
        takeover_after: float,
        accept: Callable[[QueuedInput], bool] | None = None,
    ) -> list[QueuedInput]:
        """Register ``holder`` as a running gateway and take, in one transaction, the
        released inputs and those of gateways that are gone (those ``accept`` takes,
        when given); returns them by id."""
        take = None if accept is None else (lambda row: accept(_queued(row)))
        rows = self._write(
            lambda tx: gateway_queue.claim(tx, holder, takeover_after, tx.clock(), take)
        )
        return [_queued(r) for r in rows]

    def gateway_heartbeat(self, holder: str) -> None:
        """``holder`` (a running gateway) is alive now."""
        self._write(lambda tx: gateway_queue.heartbeat(tx, holder, tx.clock()))

    def release_gateway_inputs(self, holder: str) -> int:
        """Give ``holder``'s queued inputs to whichever gateway starts next (a graceful
        stop) and forget its heartbeat; returns how many were released."""
        return self._write(lambda tx: gateway_queue.release(tx, holder))

    # -- turns a crash cut off (see ``cut_turns``) --------------------------------------

    def cut_turns(
        self, platforms: Sequence[str], own_tools: Collection[str]
    ) -> list[cut_turns.CutTurn]:
        """The conversations routed from ``platforms`` whose last turn has no answer."""
        return self._read(lambda tx: cut_turns.find(tx, platforms, own_tools))

    def cut_turn(self, conversation_id: str, own_tools: Collection[str]) -> str | None:
        """The question of the conversation's unanswered last turn ("" without text), or
        None when it was answered; ask it holding the conversation's turn lock."""
        return self._read(lambda tx: cut_turns.of_conversation(tx, conversation_id, own_tools))


def _queued(row: Row) -> QueuedInput:
    return QueuedInput(
        id=int(row["id"]),
        session_key=row["session_key"],
        payload=json.loads(row["payload"]),
        enqueued_at=float(row["enqueued_at"]),
        owner=row["owner"],
    )
