"""The compression lease: one compression per conversation segment at a time.

A lease is a row in ``compression_locks`` with a holder, a TTL and a lifetime cap.
Holder strings look like ``host:pid=N:agent=<uuid>``; a lease whose holder is a dead
process on this host, whose TTL has passed, or that outlived the cap can be taken over
at once. Every decision is made inside one write transaction.
"""

from __future__ import annotations

import os
import platform  # node(): the host name, without importing `socket` (~4 ms)
import re
import uuid

from hermes.state.backend import Row, Tx

DEFAULT_TTL = 300.0
LIFETIME_CAP = 1800.0  # no refresh keeps a lease past this many seconds

_HOLDER = re.compile(r"^(?P<host>[^:]+):pid=(?P<pid>\d+)(?::|$)")


def make_holder(agent_id: str | None = None) -> str:
    """A holder id naming this host, this process and one agent."""
    return f"{platform.node()}:pid={os.getpid()}:agent={agent_id or uuid.uuid4().hex}"


def holder_is_dead(holder: str) -> bool:
    """True when the holder names a process on this host that no longer runs."""
    match = _HOLDER.match(holder)
    if not match or match["host"] != platform.node():
        return False  # another host (or a free-form holder): only the TTL can free it
    pid = int(match["pid"])
    import psutil  # here: it costs ~20 ms to import, and only a contended lease asks

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False


def reclaimable(row: Row, now: float) -> bool:
    return (
        row["expires_at"] <= now
        or row["acquired_at"] + LIFETIME_CAP <= now
        or holder_is_dead(row["holder"])
    )


def current(tx: Tx, session_id: str) -> Row | None:
    return tx.one(
        "SELECT holder, acquired_at, expires_at FROM compression_locks WHERE session_id = ?",
        (session_id,),
    )


def acquire(tx: Tx, session_id: str, holder: str, ttl: float, now: float) -> bool:
    tx.lock_session(session_id)
    row = current(tx, session_id)
    if row and row["holder"] == holder and not reclaimable(row, now):
        return refresh(tx, session_id, holder, ttl, now)
    if row and not reclaimable(row, now):
        return False
    # A compare-and-swap, so two racers never both win even without a row to lock.
    if row is None:
        inserted = tx.run(
            "INSERT INTO compression_locks (session_id, holder, acquired_at, expires_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO NOTHING",
            (session_id, holder, now, now + min(ttl, LIFETIME_CAP)),
        )
        return inserted > 0
    taken = tx.run(
        "UPDATE compression_locks SET holder = ?, acquired_at = ?, expires_at = ?"
        " WHERE session_id = ? AND holder = ? AND acquired_at = ?",
        (holder, now, now + min(ttl, LIFETIME_CAP), session_id, row["holder"], row["acquired_at"]),
    )
    return taken > 0


def refresh(tx: Tx, session_id: str, holder: str, ttl: float, now: float) -> bool:
    row = current(tx, session_id)
    if not row or row["holder"] != holder or row["expires_at"] <= now:
        return False
    cap = row["acquired_at"] + LIFETIME_CAP
    if cap <= now:
        return False
    changed = tx.run(
        "UPDATE compression_locks SET expires_at = ? WHERE session_id = ? AND holder = ?",
        (min(now + ttl, cap), session_id, holder),
    )
    return changed > 0


def release(tx: Tx, session_id: str, holder: str) -> bool:
    return (
        tx.run(
            "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?",
            (session_id, holder),
        )
        > 0
    )


def holder_of(tx: Tx, session_id: str, now: float) -> str | None:
    row = current(tx, session_id)
    if not row or reclaimable(row, now):
        return None
    return str(row["holder"])


def held_by(tx: Tx, session_id: str, holder: str, now: float) -> bool:
    """Held by ``holder`` and not reclaimable: the same rule as ``holder_of``."""
    row = current(tx, session_id)
    return row is not None and row["holder"] == holder and not reclaimable(row, now)
