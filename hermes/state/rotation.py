"""Rotation: end the tip and open its compression child, in one transaction.

Invariant 2, step by step: the caller must hold the lease; the parent must still be
the tip; the parent is ended, the child inserted (inheriting source, user, session
key, model; title "<title> #N"), the compacted messages written into it, the parent's
rows the summary did not read carried over, and gateway routes moved to the child.
All or nothing: the caller runs this inside ``Backend.transact``, and the unique
indexes reject a second child even if the rules above were bypassed.

Coverage (invariant 14): with ``covered_uids`` (the messages the summary model read),
every row of the parent *as stored now* (originals and compacted copies alike) is
either copied into the child or covered; whatever is neither is carried over, with
the rest of its tool call group, and the coverage is recorded in
``segment_coverage``. So an agent with a stale view never drops a row it never saw.
Without ``covered_uids`` (an older caller) the rows above ``watermark``, or whose uid
is not in ``seen_uids``, are carried over and no coverage is claimed.

Coverage by stub: ``stub_covered_uids`` (among ``covered_uids``) are rows the summary
model read as their stub and anchors, not whole. Such a row is covered only if
``recall`` returns it verbatim: an original tool output of this conversation with its
text stored; any other is not covered (so carried over). It is recorded with
``by_stub = 1``, which the store's coverage check holds to the same rule.

Anchors (invariant 14 too): an anchor a segment's summary showed the model (its anchor
index, ``context.anchor_index``) stays shown in the compression child, in the child's
summary or in a row the child holds verbatim; ``dropped_anchors`` lists those that do
not, for the store's coverage check.

Well-formedness (invariant 15): the child's context is put in order (results after
their calls) and refused with ``InvalidContextError`` if a provider would refuse it.

What the user took back (invariant 16): a child whose summary read a row that is undone
(an undo that ran while the summary was written) is refused with
``UndoneInSummaryError``; the caller's next compression reads what remains.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import fields
from typing import Any

from hermes.state import lease, segments, undo
from hermes.state.backend import MessageRow, Tx
from hermes.state.context import anchor_index, wellformed
from hermes.state.errors import (
    InvalidContextError,
    LeaseNotHeldError,
    NotTipError,
    UndoneInSummaryError,
)
from hermes.state.gateway import routes

_ROW_COLUMNS = (
    "id, message_uid, role, content, tool_calls, tool_call_id, tool_name, reasoning,"
    " created_at, token_count, compacted, origin_id, content_parts, finish_reason,"
    " reasoning_content, reasoning_details, codex_reasoning_items, codex_message_items,"
    " platform_message_id, observed, effect_disposition, api_content"
)


def publish(
    tx: Tx,
    parent_id: str,
    *,
    holder: str,
    messages: Sequence[Mapping[str, Any]],
    watermark: int | None,
    child_id: str | None,
    now: float,
    seen_uids: Collection[str] | None = None,
    covered_uids: Collection[str] | None = None,
    stub_covered_uids: Collection[str] = (),
) -> str:
    tx.lock_session(parent_id)
    lease_now = tx.clock()  # leases are timed by the store's clock; rows keep ``now``
    if not lease.held_by(tx, parent_id, holder, lease_now):
        raise LeaseNotHeldError(parent_id, holder, lease.holder_of(tx, parent_id, lease_now))
    parent = segments.require(tx, parent_id)
    if parent["ended_at"] is not None:
        tip = segments.tip_of_conversation(tx, parent["conversation_id"])
        raise NotTipError(parent_id, tip["id"])

    child_id = child_id or segments.new_session_id(now)
    index = parent["segment_index"] + 1
    started_in = tx.one("SELECT cwd FROM sessions WHERE id = ?", (parent_id,))
    # End the parent first: the conversation may have only one live segment.
    tx.run(
        "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?",
        (now, segments.COMPRESSION, parent_id),
    )
    segments.insert(
        tx,
        {
            "id": child_id,
            "conversation_id": parent["conversation_id"],
            "parent_session_id": parent_id,
            "lineage": segments.COMPRESSION,
            "segment_index": index,
            "source": parent["source"],
            "user_id": parent["user_id"],
            "session_key": parent["session_key"],
            "title": segments.numbered_title(parent["title"], index),
            "model": parent["model"],
            "cwd": started_in["cwd"] if started_in else None,
            "started_at": now,
            "last_active_at": now,
        },
    )
    rows = _compacted_rows(tx, parent["conversation_id"], child_id, messages, now)
    if covered_uids is None:
        rows += _carried_over(tx, parent_id, child_id, watermark, rows, seen_uids)
        covered: set[int] = set()
        by_stub: set[int] = set()
    else:
        conversation = parent["conversation_id"]
        by_stub = _recallable(tx, conversation, stub_covered_uids)
        stubs_claimed = set(_origin_ids(tx, conversation, list(stub_covered_uids)).values())
        whole = set(_origin_ids(tx, conversation, list(covered_uids)).values()) - stubs_claimed
        covered = whole | by_stub
        rows += _uncovered(tx, parent_id, child_id, rows, covered)
    rows = _in_order(parent_id, rows)
    segments.add_messages(tx, child_id, rows, now)
    _record_coverage(tx, child_id, covered, by_stub)
    if covered_uids and undo.any_undone(tx, list(covered_uids)):
        raise UndoneInSummaryError(parent_id)  # invariant 16: an undo raced the summary
    routes.follow_rotation(tx, parent_id, child_id, now)
    return child_id


def _compacted_rows(
    tx: Tx,
    conversation_id: str,
    child_id: str,
    messages: Sequence[Mapping[str, Any]],
    now: float,
) -> list[MessageRow]:
    """The child's context as rows marked compacted.

    A message that is a copy of one already stored (its ``message_uid`` exists) links
    to it by ``origin_id`` and gets a derived uid; a new one (the summary) keeps the
    uid the caller gave it, so a later re-flush of the same dict stores nothing twice.
    """
    uids = [m["message_uid"] for m in messages if m.get("message_uid")]
    origins = _origin_ids(tx, conversation_id, uids)
    rows, used = [], set()
    for position, message in enumerate(messages):
        uid = message.get("message_uid")
        origin = origins.get(uid) if uid else None
        own_uid = f"{uid}@{child_id}" if origin else (uid or f"{child_id}:{position}")
        if own_uid in used:
            continue  # the same message listed twice is kept once
        used.add(own_uid)
        rows.append(
            segments.message_row(
                child_id, message, now, message_uid=own_uid, compacted=1, origin_id=origin
            )
        )
    return rows


def _origin_ids(tx: Tx, conversation_id: str, uids: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for start in range(0, len(uids), 500):
        chunk = uids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for row in tx.all(
            "SELECT m.message_uid, COALESCE(m.origin_id, m.id) AS origin FROM messages m"
            f" WHERE m.message_uid IN ({marks})",
            chunk,
        ):
            found[row["message_uid"]] = row["origin"]
    return found


def _recallable(tx: Tx, conversation_id: str, uids: Collection[str]) -> set[int]:
    """The origin ids of ``uids`` that ``recall`` returns verbatim: original tool
    outputs of this conversation, standing, with their text stored."""
    origins = set(_origin_ids(tx, conversation_id, list(uids)).values())
    found: set[int] = set()
    ordered = sorted(origins)
    for start in range(0, len(ordered), 500):
        chunk = ordered[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for row in tx.all(
            f"SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_id"
            f" WHERE m.id IN ({marks}) AND s.conversation_id = ? AND {RECALLABLE_STUB}",
            [*chunk, conversation_id],
        ):
            found.add(int(row["id"]))
    return found


# A row covered by its stub must stay what ``recall(message_id=N)`` returns verbatim:
# an original (not a copy) tool output, not taken back, with its text stored.
RECALLABLE_STUB = (
    "m.role = 'tool' AND m.origin_id IS NULL AND m.undone = 0 AND m.content IS NOT NULL"
)


def _carried_over(
    tx: Tx,
    parent_id: str,
    child_id: str,
    watermark: int | None,
    already: list[MessageRow],
    seen_uids: Collection[str] | None,
) -> list[MessageRow]:
    """Copies of the parent's messages the compressor did not see.

    Without ``seen_uids``: the rows above ``watermark``. With it: every original row
    whose uid is not in it, which also catches a message another process wrote between
    the caller's snapshot and its watermark.
    """
    if watermark is None and seen_uids is None:
        return []
    present = {row.origin_id for row in already if row.origin_id is not None}
    floor = watermark if seen_uids is None else 0
    late = tx.all(
        f"SELECT {_ROW_COLUMNS} FROM messages"
        " WHERE session_id = ? AND id > ? AND undone = 0 ORDER BY id",
        (parent_id, floor or 0),
    )
    seen = set(seen_uids or ())
    rows = []
    for message in late:
        origin = message["origin_id"] or message["id"]
        if origin in present:
            continue
        if seen_uids is not None and (message["compacted"] or message["message_uid"] in seen):
            continue
        rows.append(_copy(message, child_id))
    return rows


def _parent_rows(tx: Tx, parent_id: str) -> list[Any]:
    return tx.all(
        f"SELECT {_ROW_COLUMNS} FROM messages WHERE session_id = ? AND undone = 0 ORDER BY id",
        (parent_id,),
    )


def _origin(row: Mapping[str, Any]) -> int:
    return int(row["origin_id"] or row["id"])


def _uncovered(
    tx: Tx, parent_id: str, child_id: str, already: list[MessageRow], covered: set[int]
) -> list[MessageRow]:
    """Copies of the parent's rows, as stored now, that are neither in the child nor
    covered by its summary, each with the rest of its tool call group (a call and its
    results are never split, even when that repeats what the summary says)."""
    parent_rows = _parent_rows(tx, parent_id)
    present = {row.origin_id for row in already if row.origin_id is not None}
    groups = _tool_groups(parent_rows)
    picked: dict[int, Any] = {}
    for row in parent_rows:
        origin = _origin(row)
        if origin in present or origin in covered or origin in picked:
            continue
        for member in groups.get(row["id"], (row,)):
            if _origin(member) not in present:
                picked.setdefault(_origin(member), member)
    return [_copy(row, child_id) for row in sorted(picked.values(), key=lambda r: r["id"])]


def _tool_groups(rows: Sequence[Any]) -> dict[int, tuple[Any, ...]]:
    """Row id -> every row of its tool call group (the call and its results)."""
    caller: dict[str, Any] = {}
    for row in rows:
        for call in wellformed.call_ids(row):
            caller[call] = row
    members: dict[int, list[Any]] = {}
    for row in rows:
        head = caller.get(str(row["tool_call_id"])) if row["role"] == "tool" else None
        if head is not None:
            members.setdefault(head["id"], [head]).append(row)
    groups: dict[int, tuple[Any, ...]] = {}
    for group in members.values():
        for row in group:
            groups[row["id"]] = tuple(group)
    return groups


# The columns a compacted copy takes from its original as they are: it replays as its
# original does (Hermes Agent's provider fields too).
_COPIED = tuple(
    f.name
    for f in fields(MessageRow)
    if f.name not in ("session_id", "message_uid", "compacted", "origin_id", "observed")
)


def _copy(row: Mapping[str, Any], child_id: str) -> MessageRow:
    return MessageRow(
        **{name: row[name] for name in _COPIED},
        session_id=child_id,
        message_uid=f"{row['message_uid']}@{child_id}",
        compacted=1,
        origin_id=_origin(row),
        observed=row["observed"] or 0,
    )


def _in_order(parent_id: str, rows: list[MessageRow]) -> list[MessageRow]:
    """The child's rows with results after their calls; refused if still invalid."""
    ordered = wellformed.normalise([_view(r) for r in rows])
    problems = wellformed.problems(ordered)
    if problems:
        raise InvalidContextError(parent_id, problems[0])
    return [view["row"] for view in ordered]


def _view(row: MessageRow) -> dict[str, Any]:
    """The fields ``wellformed`` reads of a row, and the row itself to take back."""
    return {
        "role": row.role,
        "content": row.content,
        "tool_calls": row.tool_calls,
        "tool_call_id": row.tool_call_id,
        "row": row,
    }


def _record_coverage(tx: Tx, child_id: str, covered: set[int], by_stub: set[int]) -> None:
    origins = sorted(covered)
    for start in range(0, len(origins), 300):
        chunk = origins[start : start + 300]
        marks = ", ".join("(?, ?, ?)" for _ in chunk)
        params: list[Any] = []
        for origin in chunk:
            params += [child_id, origin, int(origin in by_stub)]
        tx.run(
            f"INSERT INTO segment_coverage (session_id, origin_id, by_stub) VALUES {marks}",
            params,
        )


def dropped_anchors(tx: Tx) -> list[tuple[str, str, str]]:
    """(parent, child, anchor) for every anchor a parent segment's summary showed that
    its compression child shows nowhere (neither in its summary nor in a row it holds
    verbatim). A child whose summary an undo retired is made again, so it is skipped."""
    found = []
    for child in tx.all(
        "SELECT id, parent_session_id AS parent FROM sessions"
        " WHERE lineage = 'compression' AND parent_session_id IS NOT NULL ORDER BY id"
    ):
        shown = [
            str(row["content"])
            for row in tx.all(
                "SELECT content FROM messages WHERE session_id = ? AND undone = 0"
                " AND role = 'user' AND compacted = 1 AND content LIKE ?",
                (child["parent"], anchor_index.SUMMARY_PREFIX + "%"),
            )
        ]
        if not shown:
            continue
        rows = tx.all(
            "SELECT id, origin_id, content, tool_calls, undone FROM messages WHERE session_id = ?",
            (child["id"],),
        )
        if any(
            r["undone"] and str(r["content"] or "").startswith(anchor_index.SUMMARY_PREFIX)
            for r in rows
        ):
            continue
        standing = [r for r in rows if not r["undone"]]
        texts = [f"{r['content'] or ''}\n{r['tool_calls'] or ''}" for r in standing]
        origins = {_origin(r) for r in standing}
        for anchor in anchor_index.dropped(shown, texts, origins):
            found.append((child["parent"], child["id"], anchor))
    return found
