"""The store's turn lock around each work item: one turn at a time per conversation
across every gateway on the store (invariant 11), not only within this one.

Lanes order a conversation's items inside a gateway; before the head of a lane starts,
its lane waits here until this gateway holds the conversation's turn lock
(``db.gateway.try_lock_turn``), polling with a short backoff while another gateway runs
a turn of it. The item stays at the head of its lane meanwhile, so a shutdown keeps it
like any waiting item and ends the wait at once. ``/stop`` does not end it: the reply
being written is the other gateway's, and queued input is still answered after it. The
turn gives the lock back when its route is settled.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from hermes.state.errors import StateError

if TYPE_CHECKING:
    from hermes.state.store import SessionDB

log = logging.getLogger(__name__)

FIRST_POLL = 0.02  # seconds; doubled after each refusal
LAST_POLL = 0.5


class TurnHold:
    """This gateway's hold on one conversation's turn lock, for one work item.

    The turn ``claim``s it when it starts and ``release``s it when it ends; the lane
    releases one whose turn never started. Both are idempotent and safe from any thread
    (the lock belongs to the process, not to a thread).
    """

    def __init__(self, db: SessionDB, conversation_id: str, *, error: str | None = None) -> None:
        self.db = db
        self.conversation_id = conversation_id
        self.error = error  # set when the lock could not be asked for: the turn reports it
        self.claimed = False
        self._released = error is not None
        self._lock = threading.Lock()

    def claim(self) -> bool:
        """The turn starts and will release; False if the lock was given back already."""
        with self._lock:
            if self._released:
                return False
            self.claimed = True
            return True

    def release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self._unlock()

    def release_unclaimed(self) -> None:
        """Release unless a turn claimed it (that turn releases it when it ends)."""
        with self._lock:
            if self._released or self.claimed:
                return
            self._released = True
        self._unlock()

    def _unlock(self) -> None:
        try:
            self.db.gateway.unlock_turn(self.conversation_id)
        except Exception:  # at worst the lock goes with the process; keep the gateway up
            log.exception("could not give back the turn lock of %s", self.conversation_id)


class TurnGate:
    """Takes the turn locks of this gateway's conversations in the store."""

    def __init__(self, db: SessionDB) -> None:
        self.db = db

    async def enter(
        self,
        conversation_id: str,
        closing: asyncio.Event,
        on_wait: Callable[[], None] | None = None,
    ) -> TurnHold | None:
        """Hold the conversation's turn lock, waiting while another gateway holds it
        (``on_wait`` is called once when that starts); None if ``closing`` is set first.
        A store failure comes back as a hold with an ``error`` (held by nobody), for the
        turn to report."""
        delay, told = FIRST_POLL, False
        while not closing.is_set():
            try:
                taken = await self._try_lock(conversation_id)
            except Exception as exc:
                if not isinstance(exc, StateError):
                    log.exception("taking the turn lock of %s failed", conversation_id)
                return TurnHold(self.db, conversation_id, error=_sentence(exc))
            if taken:
                hold = TurnHold(self.db, conversation_id)
                if closing.is_set():
                    await asyncio.to_thread(hold.release)
                    return None
                return hold
            if not told:
                log.info(
                    "conversation %s is answering in another gateway; waiting", conversation_id
                )
                told = True
                if on_wait is not None:
                    on_wait()
            try:
                await asyncio.wait_for(closing.wait(), delay)
            except TimeoutError:
                delay = min(delay * 2, LAST_POLL)
        return None

    async def _try_lock(self, conversation_id: str) -> bool:
        gateway = self.db.gateway
        if gateway.turn_locks_instant:  # a system call: cheaper than a hop to a thread
            return gateway.try_lock_turn(conversation_id)
        return await asyncio.to_thread(gateway.try_lock_turn, conversation_id)


def _sentence(exc: Exception) -> str:
    if isinstance(exc, StateError):
        return f"could not take this conversation's turn lock: {exc}"
    return "hermes failed while answering (the gateway log has the details)"
