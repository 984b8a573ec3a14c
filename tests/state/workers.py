"""Process bodies for the race tests: each runs in a "spawn" child on its own SessionDB.

They report through a queue as ``(tag, payload)`` tuples and never raise: an exception
is reported as ``("error", traceback)`` so the test can show it.
"""

from __future__ import annotations

import random
import sqlite3
import time
import traceback
from collections.abc import Callable
from typing import Any

from hermes.state import NotTipError, make_holder

from .helpers import SUMMARY


def _reporting(queue: Any, body: Callable[[], None]) -> None:
    try:
        body()
    except BaseException:
        queue.put(("error", traceback.format_exc()))


def race_rotations(spec: Any, parents: list[str], barrier: Any, hold: float, queue: Any) -> None:
    """For each parent in turn: wait for every racer, then try to rotate it."""

    def body() -> None:
        with spec.open() as db:
            for parent in parents:
                barrier.wait(timeout=120)
                queue.put(("outcome", (parent, rotate_once(db, parent, hold))))

    _reporting(queue, body)


def rotate_once(db: Any, parent: str, hold: float) -> str:
    """The agent's path: lease, re-check, watermark, summarise, publish, release."""
    holder = make_holder()
    if not db.try_acquire_compression_lock(parent, holder):
        return "busy"
    try:
        watermark = db.last_message_id(parent)
        time.sleep(hold)  # the summary call
        db.publish_compression_child(parent, holder=holder, messages=[SUMMARY], watermark=watermark)
        return "won"
    except NotTipError:
        return "not_tip"
    finally:
        db.release_compression_lock(parent, holder)


def append_stream(
    spec: Any,
    start_id: str,
    tag: str,
    count: int,
    follow: bool,
    pause: float,
    started: Any,
    queue: Any,
) -> None:
    """Append ``count`` messages one per transaction, uids ``<tag>-<n>``.

    With ``follow`` the writer adopts the id each write landed in (as the agent does);
    otherwise it keeps writing to its stale ``start_id``. Reports ``ready`` just before
    its first write, sets ``started`` after it, and ``done`` with the segments it hit.
    """

    def body() -> None:
        with spec.open() as db:
            target = start_id
            landed = set()
            queue.put(("ready", tag))
            for n in range(count):
                result = db.append_message(target, "user", f"{tag} {n}", message_uid=f"{tag}-{n}")
                landed.add(result.session_id)
                if follow:
                    target = result.session_id
                if n == 0:
                    started.set()
                time.sleep(random.uniform(0, pause))
            queue.put(("done", (tag, sorted(landed))))

    _reporting(queue, body)


def flush_same(spec: Any, session_id: str, messages: list[dict], barrier: Any, queue: Any) -> None:
    """Re-flush one shared list of messages (same uids) at the same moment as others."""

    def body() -> None:
        with spec.open() as db:
            barrier.wait(timeout=120)
            stored = 0
            for start in range(0, len(messages), 5):
                stored += db.append_messages(session_id, messages[start : start + 5]).stored
            queue.put(("done", stored))

    _reporting(queue, body)


def open_store(spec: Any, barrier: Any, queue: Any) -> None:
    """Open the store (maybe running its migrations) at the same moment as others."""

    def body() -> None:
        barrier.wait(timeout=120)
        with spec.open() as db:
            sid = db.create_session(source="cli")
            db.append_message(sid, "user", "hello")
            queue.put(("done", sid))

    _reporting(queue, body)


def hold_lease(spec: Any, session_id: str, queue: Any) -> None:
    """Take the lease for five minutes and sleep; the test kills us with SIGKILL."""

    def body() -> None:
        db = spec.open()
        holder = make_holder()
        assert db.try_acquire_compression_lock(session_id, holder, ttl_seconds=300)
        queue.put(("holding", holder))
        time.sleep(600)

    _reporting(queue, body)


def hold_write_lock(path: str, seconds: float, queue: Any) -> None:
    """Hold SQLite's write lock with a raw connection, then report what was written meanwhile."""

    def body() -> None:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        conn.execute("BEGIN IMMEDIATE")
        queue.put(("locked", None))
        time.sleep(seconds)
        # Still inside our transaction: nobody else can have committed a message.
        (count,) = conn.execute("SELECT COUNT(*) FROM messages").fetchone()
        conn.execute("COMMIT")
        conn.close()
        queue.put(("released", count))

    _reporting(queue, body)


def race_queue_claims(spec: Any, rounds: int, barrier: Any, queue: Any) -> None:
    """Each round: wait for the rows and every racer, claim as a starting gateway would."""

    def body() -> None:
        holder = make_holder()
        with spec.open() as db:
            for n in range(rounds):
                barrier.wait(timeout=120)
                try:
                    got = db.gateway.claim_gateway_inputs(holder, takeover_after=120.0)
                except BaseException:
                    barrier.abort()  # the test stops waiting and shows the error
                    raise
                queue.put(("claimed", (n, holder, [r["id"] for r in got])))
                barrier.wait(timeout=120)

    _reporting(queue, body)


def hold_turn_locks(
    spec: Any, conversations: list[str], release: Any, finish: Any, queue: Any
) -> None:
    """Take the turn locks of ``conversations`` (reporting which it got), hold them until
    ``release`` (forever when None: the test kills us), then unlock and live on until
    ``finish``."""

    def body() -> None:
        with spec.open() as db:
            queue.put(("locked", [db.gateway.try_lock_turn(c) for c in conversations]))
            if release is None:
                time.sleep(600)
            release.wait(120)
            for conversation in conversations:
                db.gateway.unlock_turn(conversation)
            queue.put(("unlocked", None))
            finish.wait(120)

    _reporting(queue, body)


def try_turn_locks(spec: Any, conversations: list[str], queue: Any) -> None:
    """Report which of the turn locks of ``conversations`` this process can take."""

    def body() -> None:
        with spec.open() as db:
            queue.put(("tried", [db.gateway.try_lock_turn(c) for c in conversations]))

    _reporting(queue, body)
