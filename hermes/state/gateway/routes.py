"""Gateway routes: which conversation a session key (a chat, a thread, a user) talks to.

The row in ``gateway_routes`` is the only record of it, so every gateway on the store
(several processes on one SQLite file, several hosts on one PostgreSQL) sees the same
answer. A row names a segment; reading it resolves that segment's conversation and tip
in O(1) queries (see ``segments``). Besides moving forward to the tip (invariant 4,
also done by rotation in its own transaction), a row changes in three ways only:

* ``set`` — a reset (``/new``) or a key nobody else can know yet: unconditional;
* ``claim`` — only if the key has no route (or one to a deleted conversation);
* ``advance`` — compare-and-set after a turn: only while the key still serves the
  turn's conversation, so a reset made anywhere is never undone.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes.state import segments
from hermes.state.backend import Row, Tx


@dataclass(frozen=True)
class Route:
    """Where a key routes: its conversation and that conversation's tip."""

    conversation_id: str
    session_id: str


_CURRENT = (
    "SELECT r.session_id, s.conversation_id, s.ended_at FROM gateway_routes r"
    " LEFT JOIN sessions s ON s.id = r.session_id WHERE r.session_key = ?"
)
_INSERT = (
    "INSERT INTO gateway_routes (session_key, session_id, platform, updated_at)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (session_key) DO NOTHING"
)
_MOVE = "UPDATE gateway_routes SET session_id = ?, updated_at = ? WHERE session_key = ?"


def current(tx: Tx, key: str) -> Row | None:
    """The key's row with its segment's conversation (None there: a deleted one)."""
    return tx.one(_CURRENT, (key,))


def look_up(tx: Tx, key: str) -> tuple[Row | None, Route | None]:
    """The key's row as stored, and the route it resolves to (None: a deleted one)."""
    row = current(tx, key)
    if row is None or row["conversation_id"] is None:
        return row, None
    tip = row["session_id"]
    if row["ended_at"] is not None:
        tip = segments.tip_of_conversation(tx, row["conversation_id"])["id"]
    return row, Route(row["conversation_id"], tip)


def catch_up(tx: Tx, key: str, seen: str, route: Route | None, now: float) -> None:
    """Move a lagging row to its tip, or forget a deleted conversation's row, unless
    someone changed the row since it was read as ``seen``."""
    if route is None:
        tx.run(
            "DELETE FROM gateway_routes WHERE session_key = ? AND session_id = ?"
            " AND NOT EXISTS (SELECT 1 FROM sessions WHERE id = ?)",
            (key, seen, seen),
        )
    else:
        tx.run(_MOVE + " AND session_id = ?", (route.session_id, now, key, seen))


def claim(tx: Tx, key: str, session_id: str, platform: str | None, now: float) -> bool:
    """Route ``key`` to ``session_id`` only if it has no live route; True if it did."""
    if tx.run(_INSERT, (key, session_id, platform, now)):
        return True
    row = _locked(tx, key)
    if row is None:  # deleted since the insert looked
        return bool(tx.run(_INSERT, (key, session_id, platform, now)))
    if row["conversation_id"] is not None:
        return False
    tx.run(_MOVE, (session_id, now, key))
    return True


def settled(tx: Tx, key: str, conversation_id: str, session_id: str) -> bool | None:
    """What ``advance`` would answer, when a read alone can tell (None: it cannot)."""
    row = current(tx, key)
    if row is None or row["conversation_id"] is None:
        return None
    if row["conversation_id"] != conversation_id:
        return False
    if row["session_id"] == session_id and row["ended_at"] is None:
        return True
    return None


def advance(
    tx: Tx, key: str, conversation_id: str, session_id: str, platform: str | None, now: float
) -> bool:
    """The route takes ``session_id`` (its tip, if it lags) only if the key still routes
    into ``conversation_id``, or nowhere; True if it routes there afterwards."""
    row = _locked(tx, key)
    if _serves_another(row, conversation_id):
        return False
    segment = segments.get(tx, session_id)
    if segment is None or segment["conversation_id"] != conversation_id:
        return False  # deleted meanwhile, or not a segment of that conversation
    target = segment["id"]
    if segment["ended_at"] is not None:
        target = segments.tip_of_conversation(tx, conversation_id)["id"]
    if row is None:
        if tx.run(_INSERT, (key, target, platform, now)):
            return True
        row = _locked(tx, key)  # another gateway routed the key meanwhile
        if row is None or _serves_another(row, conversation_id):
            return False
    if row["session_id"] != target:
        tx.run(_MOVE, (target, now, key))
    return True


def follow_rotation(tx: Tx, parent_id: str, child_id: str, now: float) -> None:
    """The rows that named a rotated segment name its compression child (in the
    rotation's own transaction, so a route never names an ended tip for long)."""
    tx.run(
        "UPDATE gateway_routes SET session_id = ?, updated_at = ? WHERE session_id = ?",
        (child_id, now, parent_id),
    )


def forget_segment(tx: Tx, session_id: str) -> None:
    """Drop the rows that name a segment being deleted."""
    tx.run("DELETE FROM gateway_routes WHERE session_id = ?", (session_id,))


def _serves_another(row: Row | None, conversation_id: str) -> bool:
    return row is not None and row["conversation_id"] not in (None, conversation_id)


def _locked(tx: Tx, key: str) -> Row | None:
    """The key's row, locked until commit.

    The no-op update takes the row lock on PostgreSQL, so the read after it is the
    latest (READ COMMITTED reads per statement) and nobody changes the row before we
    commit; on SQLite ``BEGIN IMMEDIATE`` already keeps every other writer out.
    """
    if not tx.run(
        "UPDATE gateway_routes SET updated_at = updated_at WHERE session_key = ?", (key,)
    ):
        return None
    return current(tx, key)
