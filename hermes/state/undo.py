"""Undone rows, and the summaries that read them (docs/design.md, invariant 16).

Marking rows undone (an ``/undo``, a ``/retry``, a deleted response, a turn a shutdown
gives back) keeps them in the history and out of every later context. Rows the tip
holds as copies are marked with their originals. A row the tip's context only knows
through a summary is harder: the summary's words still carry it. So every summary the
tip's context holds whose reading (followed through the summaries it read in turn,
``segment_coverage``) reached an undone row is *retired*: marked undone in the tip, so
no context loads it again, and the agent makes the context anew from the rows that
remain before its next model call (``hermes.agent.recontext``).

A summary is a compacted row that is no copy of a stored message (``origin_id`` NULL);
a copy of one carried into a later segment points at it by ``origin_id``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from hermes.state import history, segments
from hermes.state.backend import Tx

# (summary, origin) for every row a summary of the tip's context read, directly or
# through the summaries it read: "summary" is the origin id of the summary row the tip
# holds, "origin" the origin id of a row it reached.
_REACHED = (
    "WITH RECURSIVE held (summary, origin) AS ("
    "  SELECT o.id, o.id FROM messages t JOIN messages o ON o.id = COALESCE(t.origin_id, t.id)"
    "  WHERE t.session_id = ? AND t.undone = 0 AND t.compacted = 1 AND o.compacted = 1"
    "    AND o.origin_id IS NULL"
    "), reached (summary, origin) AS ("
    "  SELECT summary, origin FROM held"
    "  UNION"
    "  SELECT r.summary, c.origin_id FROM reached r"
    "  JOIN messages s ON s.id = r.origin AND s.compacted = 1 AND s.origin_id IS NULL"
    "  JOIN segment_coverage c ON c.session_id = s.session_id"
    ") SELECT r.summary, r.origin, m.undone FROM reached r JOIN messages m ON m.id = r.origin"
)

# A summary the tip held and that was retired: its context must be made again.
_RETIRED = (
    "SELECT 1 AS one FROM messages t JOIN messages o ON o.id = COALESCE(t.origin_id, t.id)"
    " WHERE t.session_id = ? AND t.undone = 1 AND t.compacted = 1 AND o.compacted = 1"
    " AND o.origin_id IS NULL LIMIT 1"
)


def summaries_reaching(tx: Tx, tip_id: str, origins: Collection[int] | None = None) -> set[int]:
    """The summaries the tip's context holds that read one of ``origins`` (None: any
    row marked undone), themselves or through an earlier summary."""
    found = set()
    for row in tx.all(_REACHED, (tip_id,)):
        if row["summary"] == row["origin"]:
            continue
        hit = bool(row["undone"]) if origins is None else int(row["origin"]) in origins
        if hit:
            found.add(int(row["summary"]))
    return found


def origins_of(tx: Tx, message_ids: Sequence[int]) -> set[int]:
    """The origin ids (the original row) of messages given by any of their ids."""
    found: set[int] = set()
    for start in range(0, len(message_ids), 500):
        chunk = list(message_ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        found.update(
            int(r["origin"])
            for r in tx.all(
                f"SELECT COALESCE(origin_id, id) AS origin FROM messages WHERE id IN ({marks})",
                chunk,
            )
        )
    return found


def any_undone(tx: Tx, uids: Sequence[str]) -> bool:
    """Whether a message with one of ``uids`` (an original, a copy, a summary) is undone."""
    for start in range(0, len(uids), 500):
        chunk = list(uids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        if tx.one(
            f"SELECT 1 AS one FROM messages WHERE message_uid IN ({marks}) AND undone = 1 LIMIT 1",
            chunk,
        ):
            return True
    return False


def mark(tx: Tx, session_id: str, message_ids: Sequence[int]) -> int:
    """Mark messages of ``session_id``'s conversation undone, with every copy a rotation
    made of them, and retire the tip's summaries that read them; rows marked."""
    if not message_ids:
        return 0
    segment = segments.tip(tx, session_id)
    tx.lock_session(segment["id"])  # appends extend the digest chain under this lock
    conversation = segment["conversation_id"]
    marks = ", ".join("?" for _ in message_ids)
    marked = tx.run(
        "UPDATE messages SET undone = 1, active = 0"
        f" WHERE (id IN ({marks}) OR origin_id IN ({marks}))"
        " AND session_id IN (SELECT id FROM sessions WHERE conversation_id = ?)",
        (*message_ids, *message_ids, conversation),
    )
    first = tx.one(
        f"SELECT MIN(COALESCE(origin_id, id)) AS first FROM messages WHERE id IN ({marks})",
        tuple(message_ids),
    )
    if marked and first and first["first"] is not None:
        history.recompute(tx, conversation, segment["source"], int(first["first"]))
    if marked:
        retire_stale(tx, segment["id"])
        # Hermes Agent's count of rewinds, on the segment they happened in.
        tx.run("UPDATE sessions SET rewind_count = rewind_count + 1 WHERE id = ?", (segment["id"],))
    return marked


def retire_stale(tx: Tx, tip_id: str) -> int:
    """Retire the summaries of the tip's context that read an undone row; how many
    rows of the tip that marked (the summaries and their carried copies)."""
    stale = summaries_reaching(tx, tip_id)
    if not stale:
        return 0
    marks = ", ".join("?" for _ in stale)
    return tx.run(
        "UPDATE messages SET undone = 1, active = 0 WHERE session_id = ? AND compacted = 1"
        f" AND COALESCE(origin_id, id) IN ({marks})",
        (tip_id, *sorted(stale)),
    )


def holds_retired_summary(tx: Tx, tip_id: str) -> bool:
    """The tip's context lost a summary to an undo and must be made again."""
    return tx.one(_RETIRED, (tip_id,)) is not None
