"""Turns a crash cut off: gateway conversations whose tip ends without an answer.

A gateway stores a turn's user message when the turn starts and its answer when it ends
(invariant 7); a turn that fails, is stopped, or is given back at shutdown stores what
its user was told or is marked undone. So a conversation whose tip's newest standing row
is a user message, a tool result, or a call of one of hermes's own tools still waiting
for its result, is a turn whose process died (invariant 16): at its next start, the
gateway answers it once or tells the user. A compression summary that ends a tip is no
question (a summary is a compacted row that copies no stored message); open calls of a
caller's own tools (the HTTP API's ``tools``) wait for the caller, not for us.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from hermes.state.backend import Row, Tx
from hermes.state.context.message import is_summary_row


@dataclass(frozen=True)
class CutTurn:
    """A conversation whose last turn has no answer, and the question it asked."""

    session_key: str
    conversation_id: str
    platform: str | None
    question: str | None  # the turn's user message text, None when there is none


# Per route on a served platform: the route's conversation's tip and its newest
# standing row, in one read.
_TIPS = (
    "SELECT r.session_key, r.platform, s.conversation_id, s.id AS tip,"
    " m.role, m.content, m.tool_calls, m.compacted, m.origin_id"
    " FROM gateway_routes r JOIN sessions c ON c.id = r.session_id"
    " JOIN sessions s ON s.conversation_id = c.conversation_id AND s.ended_at IS NULL"
    " JOIN messages m ON m.id = (SELECT MAX(x.id) FROM messages x"
    "   WHERE x.session_id = s.id AND x.undone = 0)"
    " WHERE r.platform IN ({platforms})"
)
_TURN = (
    "SELECT id, role, content, tool_calls, compacted, origin_id FROM messages"
    " WHERE session_id = ? AND undone = 0 ORDER BY id DESC LIMIT 200"
)


def find(tx: Tx, platforms: Sequence[str], own_tools: Collection[str]) -> list[CutTurn]:
    """The cut turns of conversations routed from ``platforms``, one per conversation."""
    if not platforms:
        return []
    marks = ", ".join("?" for _ in platforms)
    found: dict[str, CutTurn] = {}
    for tip in tx.all(_TIPS.format(platforms=marks), tuple(platforms)):
        if tip["conversation_id"] in found or not unanswered(tip, own_tools):
            continue
        found[tip["conversation_id"]] = CutTurn(
            session_key=tip["session_key"],
            conversation_id=tip["conversation_id"],
            platform=tip["platform"],
            question=_question(tx, tip["tip"]),
        )
    return list(found.values())


def of_conversation(tx: Tx, conversation_id: str, own_tools: Collection[str]) -> str | None:
    """The question of the conversation's cut turn ("" when it has no text), or None
    when its last turn was answered."""
    tip = tx.one(
        "SELECT id FROM sessions WHERE conversation_id = ? AND ended_at IS NULL", (conversation_id,)
    )
    if tip is None:
        return None
    last = tx.one(
        "SELECT id, role, content, tool_calls, compacted, origin_id FROM messages"
        " WHERE session_id = ? AND undone = 0 ORDER BY id DESC LIMIT 1",
        (tip["id"],),
    )
    if last is None or not unanswered(last, own_tools):
        return None
    return _question(tx, tip["id"]) or ""


def unanswered(row: Row, own_tools: Collection[str]) -> bool:
    """Whether a tip's newest standing row leaves its turn without an answer."""
    role = row["role"]
    if role == "tool":
        return True
    if role == "user":
        return not is_summary_row(row)
    if role == "assistant" and row["tool_calls"]:
        return any(name in own_tools for name in _called(row["tool_calls"]))
    return False


def _question(tx: Tx, tip_id: str) -> str | None:
    """The text of the newest user message of the tip after its last answer."""
    for row in tx.all(_TURN, (tip_id,)):
        if row["role"] == "assistant" and not row["tool_calls"]:
            return None
        if row["role"] == "user" and not is_summary_row(row):
            content = row["content"]
            return content if isinstance(content, str) and content.strip() else None
    return None


def _called(tool_calls: Any) -> list[str]:
    calls = tool_calls
    if isinstance(calls, str):
        try:
            calls = json.loads(calls)
        except ValueError:
            return []
    return [
        str((call.get("function") or {}).get("name") or "")
        for call in calls or []
        if isinstance(call, dict)
    ]
