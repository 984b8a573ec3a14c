"""The gateway's queue: input that waits for a busy conversation, and who answers it.

Every row of ``gateway_queue`` names its ``owner``, the gateway instance (a
``lease.make_holder`` string) that saved or claimed it; NULL means released (a graceful
stop, or a row older than owners), so any gateway may take it. Only the owner answers
a row and deletes it.

A running gateway keeps a heartbeat row in ``gateway_instances``. A starting gateway
claims, in one write transaction, the released rows and the rows of owners that are
gone: a dead process on this host (``lease.holder_is_dead``), or no heartbeat for
``takeover_after`` seconds (a crashed host, or no heartbeat row at all). The claim is a
compare-and-set on ``owner``, so two gateways starting at once never both get a row.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes.state import lease
from hermes.state.backend import Row, Tx

COLUMNS = "id, session_key, payload, enqueued_at, owner"


def enqueue(tx: Tx, session_key: str, payload: str, owner: str | None, now: float) -> int:
    row = tx.one(
        "INSERT INTO gateway_queue (session_key, payload, enqueued_at, owner)"
        " VALUES (?, ?, ?, ?) RETURNING id",
        (session_key, payload, now, owner),
    )
    assert row is not None
    return int(row["id"])


def pending(tx: Tx, session_key: str | None) -> list[Row]:
    if session_key is None:
        return tx.all(f"SELECT {COLUMNS} FROM gateway_queue ORDER BY id")
    return tx.all(
        f"SELECT {COLUMNS} FROM gateway_queue WHERE session_key = ? ORDER BY id", (session_key,)
    )


def delete(tx: Tx, input_id: int, owner: str | None) -> bool:
    """Delete the row only while ``owner`` owns it (None: only while it is released)."""
    if owner is None:
        return tx.run("DELETE FROM gateway_queue WHERE id = ? AND owner IS NULL", (input_id,)) > 0
    return tx.run("DELETE FROM gateway_queue WHERE id = ? AND owner = ?", (input_id, owner)) > 0


def heartbeat(tx: Tx, holder: str, now: float) -> None:
    tx.run(
        "INSERT INTO gateway_instances (holder, started_at, seen_at) VALUES (?, ?, ?)"
        " ON CONFLICT (holder) DO UPDATE SET seen_at = excluded.seen_at",
        (holder, now, now),
    )


def claim(
    tx: Tx,
    holder: str,
    takeover_after: float,
    now: float,
    accept: Callable[[Row], bool] | None = None,
) -> list[Row]:
    """Register ``holder``'s heartbeat and take every claimable row (that ``accept``
    takes, when given: a row it refuses stays where it is); returns them by id."""
    heartbeat(tx, holder, now)
    # Owners before heartbeats: on PostgreSQL (READ COMMITTED) an owner that committed
    # its claim before the first read has its heartbeat visible to the second.
    owners = [
        r["owner"]
        for r in tx.all(
            "SELECT DISTINCT owner FROM gateway_queue WHERE owner IS NOT NULL AND owner != ?",
            (holder,),
        )
    ]
    cutoff = now - takeover_after
    seen = {
        r["holder"]: r["seen_at"] for r in tx.all("SELECT holder, seen_at FROM gateway_instances")
    }
    gone = [o for o in owners if _gone(o, seen.get(o), cutoff)]
    for other, at in seen.items():
        if other != holder and _gone(other, at, cutoff):
            tx.run("DELETE FROM gateway_instances WHERE holder = ?", (other,))
    # Compare-and-set: a row another claimer took meanwhile no longer matches (PostgreSQL
    # re-checks the WHERE on the row's latest version), and the owners named here are
    # only ones already judged gone, never a live claimer.
    where = "owner IS NULL"
    if gone:
        where += f" OR owner IN ({', '.join('?' for _ in gone)})"
    params: tuple[object, ...] = tuple(gone)
    if accept is not None:
        candidates = tx.all(f"SELECT {COLUMNS} FROM gateway_queue WHERE {where}", params)
        ids = [r["id"] for r in candidates if accept(r)]
        if not ids:
            return []
        where = f"({where}) AND id IN ({', '.join('?' for _ in ids)})"
        params += tuple(ids)
    rows = tx.all(
        f"UPDATE gateway_queue SET owner = ? WHERE {where} RETURNING {COLUMNS}", (holder, *params)
    )
    return sorted(rows, key=lambda r: r["id"])


def release(tx: Tx, holder: str) -> int:
    """Give ``holder``'s rows back (owner NULL) and drop its heartbeat; rows released."""
    released = tx.run("UPDATE gateway_queue SET owner = NULL WHERE owner = ?", (holder,))
    tx.run("DELETE FROM gateway_instances WHERE holder = ?", (holder,))
    return released


def _gone(holder: str, seen_at: float | None, cutoff: float) -> bool:
    return seen_at is None or seen_at < cutoff or lease.holder_is_dead(holder)
