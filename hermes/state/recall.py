"""The exact stored messages of one conversation: the store's half of ``recall``.

A summary replaces messages in the context, never in the store (invariant 9), so the
way back to what it dropped is a read: the messages of every segment of the one
conversation that holds a given segment (root to tip, never another conversation,
never across a branch) that contain some exact text, or one of them by id.

Only originals are read: a compacted copy stands for an original already in the chain
(a stored id of a copy leads to its original), and a summary is not what was said.
Rows the user took back (``undone``) are never found (invariant 16). The text is
matched as a case-insensitive substring of the content or of the tool calls' JSON, in
SQL both engines speak alike, by a scan of that conversation's rows through the
``messages_session`` index. A matching tool call brings its results along (a path
names the file; what was read from it is in the result), and the calls and results of
the looking-up tool itself are left out (they only repeat what they found).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hermes.state.backend import Row, Tx

COLUMNS = (
    "m.id, m.session_id, m.message_uid, m.role, m.content, m.tool_calls, m.tool_call_id,"
    " m.tool_name, m.reasoning, m.created_at, m.token_count, m.compacted, m.origin_id,"
    " m.undone, m.content_parts, s.segment_index"
)
_IN_CONVERSATION = "s.conversation_id = (SELECT conversation_id FROM sessions WHERE id = ?)"
_MATCH = (
    "(lower(m.content) LIKE lower(?) ESCAPE '\\' OR lower(m.tool_calls) LIKE lower(?) ESCAPE '\\')"
)


@dataclass(frozen=True)
class Matches:
    """The first matching rows in full (each tool result a matching call brought along
    follows its call, with ``result_of`` set to the call's id), and the ids of every
    match found (oldest first); ``capped`` when the search stopped at its limit."""

    rows: list[Row]
    ids: list[int]
    capped: bool


def matching(
    tx: Tx, session_id: str, text: str, *, rows: int, scan: int, skip_tool: str | None = None
) -> Matches:
    """The conversation's standing originals containing ``text``: the first ``rows`` of
    them whole, and the ids of up to ``scan`` of them; ``skip_tool``'s calls and results
    are not matches."""
    pattern = "%" + escape_like(text) + "%"
    found = tx.all(
        "SELECT m.id, m.tool_name, m.tool_calls,"
        " CASE WHEN lower(m.content) LIKE lower(?) ESCAPE '\\' THEN 1 ELSE 0 END AS in_content"
        " FROM messages m JOIN sessions s ON s.id = m.session_id"
        f" WHERE {_IN_CONVERSATION} AND m.compacted = 0 AND m.undone = 0 AND {_MATCH}"
        " ORDER BY m.id LIMIT ?",
        (pattern, session_id, pattern, pattern, scan + 1),
    )
    ids = [int(r["id"]) for r in found if not _only_skipped(r, text, skip_tool)]
    shown = by_ids(tx, ids[:rows]) if ids else []
    return Matches(
        rows=_with_results(tx, shown, skip_tool), ids=ids[:scan], capped=len(found) > scan
    )


def _only_skipped(row: Row, text: str, skip_tool: str | None) -> bool:
    """The row matched only as a call or result of ``skip_tool``."""
    if skip_tool is None:
        return False
    if row["tool_name"] == skip_tool:
        return True
    if row["in_content"]:
        return False
    wanted = text.lower()
    return not any(
        wanted in json.dumps(call, ensure_ascii=False).lower()
        for call in _calls(row["tool_calls"])
        if _call_name(call) != skip_tool
    )


def _with_results(tx: Tx, shown: list[Row], skip_tool: str | None) -> list[Row]:
    """``shown`` with the stored results of their tool calls after each call."""
    out: list[Row] = []
    have = {r["id"] for r in shown}
    for row in shown:
        out.append(row)
        calls = [c for c in _calls(row["tool_calls"]) if _call_name(c) != skip_tool]
        call_ids = [str(c.get("id")) for c in calls if c.get("id")]
        if row["role"] != "assistant" or not call_ids:
            continue
        marks = ", ".join("?" for _ in call_ids)
        for result in tx.all(
            f"SELECT {COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id"
            f" WHERE m.session_id = ? AND m.id > ? AND m.tool_call_id IN ({marks})"
            " AND m.compacted = 0 AND m.undone = 0 ORDER BY m.id",
            (row["session_id"], row["id"], *call_ids),
        ):
            if result["id"] not in have:
                have.add(result["id"])
                out.append({**result, "result_of": row["id"]})
    return out


def _calls(tool_calls: str | None) -> list[dict[str, object]]:
    try:
        calls = json.loads(tool_calls) if tool_calls else []
    except ValueError:
        return []
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _call_name(call: dict[str, object]) -> object:
    function = call.get("function")
    return function.get("name") if isinstance(function, dict) else None


def by_ids(tx: Tx, ids: list[int]) -> list[Row]:
    marks = ", ".join("?" for _ in ids)
    return tx.all(
        f"SELECT {COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id"
        f" WHERE m.id IN ({marks}) ORDER BY m.id",
        ids,
    )


def one(tx: Tx, session_id: str, message_id: int) -> Row | None:
    """Row ``message_id`` if it belongs to the conversation holding ``session_id`` (a
    compacted copy's original in its place), else None; undone rows included, marked."""
    row = _in_conversation(tx, session_id, message_id)
    if row is not None and row["compacted"] and row["origin_id"] is not None:
        return _in_conversation(tx, session_id, int(row["origin_id"]))
    return row


def _in_conversation(tx: Tx, session_id: str, message_id: int) -> Row | None:
    return tx.one(
        f"SELECT {COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id"
        f" WHERE m.id = ? AND {_IN_CONVERSATION}",
        (message_id, session_id),
    )


def escape_like(text: str) -> str:
    """``text`` as a literal inside a LIKE pattern with ``ESCAPE '\\'``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
