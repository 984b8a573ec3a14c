"""Responses of the Responses API as the store holds them.

A response id is ``resp_`` + the ``message_uid`` of the stored final answer (the gateway
names the uid before the turn runs, so a stream can announce the id first). The id is
thus derived from the store alone: any gateway on the store, before or after a
restart, finds the response, and an old segment's answer still resolves (compression
copies rows, it never renames them). Nothing else is kept: what ``GET`` shows is
rebuilt from the conversation (the answer, its model, the response before it), and
the request's ``instructions`` and token usage are not stored, so they read as null.

A deleted response is its turn (the user message, any tool calls and results, the
answer) marked undone: it leaves the conversation's context and ``GET`` no longer finds
it, but no row is removed (invariant 9); a compression summary that read it is retired
with it, and the conversation's next turn makes its context again from what remains
(invariant 16).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes.agent import review, transcript
from hermes.gateway.http import caller
from hermes.state.context.message import Message
from hermes.state.history import EMPTY_RESPONSE_NOTE

if TYPE_CHECKING:
    from hermes.state.store import SessionDB


@dataclass(frozen=True)
class StoredResponse:
    """A final answer in the store, with the segment that holds it."""

    row: dict[str, Any]
    segment: dict[str, Any]

    @property
    def conversation_id(self) -> str:
        conversation: str = self.segment["conversation_id"]
        return conversation


def find(db: SessionDB, uid: str, hidden_sources: Sequence[str]) -> StoredResponse | None:
    """The live answer stored under ``uid`` (a final answer, or the message that handed
    function calls to the client); None if there is none, it was undone, or its
    conversation is not the caller's (a chat platform user's: ``hidden_sources``, or
    another API principal's)."""
    row = db.find_message(uid)
    if row is None or row["undone"] or row["compacted"]:
        return None
    if row["role"] != "assistant":  # an answer, or the calls a turn handed the client
        return None
    segment = db.get_session(row["session_id"])
    if segment is None or not caller.may_see(segment, hidden_sources):
        return None
    return StoredResponse(row=row, segment=segment)


def is_latest(db: SessionDB, found: StoredResponse) -> bool:
    """True when nothing live follows the answer in its conversation (the tip's newest
    live row is the answer or a rotation's copy of it)."""
    tip = db.find_tip(found.row["session_id"])
    rows = db.get_messages(tip["id"]) if tip is not None else []
    return bool(rows) and (rows[-1].get("origin_id") or rows[-1]["id"]) == found.row["id"]


def context_until(db: SessionDB, found: StoredResponse) -> list[Message]:
    """The conversation's live messages up to and including the answer, as the agent
    holds messages (the history of a turn that continues it without storing)."""
    rows, at = _live_rows(db, found)
    return transcript.from_store(rows[: at + 1])


def previous_uid(db: SessionDB, found: StoredResponse) -> str | None:
    """The uid of the final answer before this response's turn, if there is one."""
    rows, at = _live_rows(db, found)
    for row in reversed(rows[: _turn_start(rows, at)]):
        if row["role"] == "assistant" and not row.get("tool_calls"):
            uid: str | None = row["message_uid"]
            return uid
    return None


def undo(db: SessionDB, found: StoredResponse) -> int:
    """Mark the response's turn undone; returns how many messages that was."""
    rows, at = _live_rows(db, found)
    turn = rows[_turn_start(rows, at) : at + 1]
    review.withdraw(found.conversation_id)  # a running review may hold this turn
    return db.mark_undone(found.conversation_id, [row["id"] for row in turn])


def _live_rows(db: SessionDB, found: StoredResponse) -> tuple[list[dict[str, Any]], int]:
    """The conversation's live original rows, and the answer's place among them."""
    rows = [m for m in db.get_conversation_messages(found.conversation_id) if not m["undone"]]
    at = next(i for i, row in enumerate(rows) if row["id"] == found.row["id"])
    return rows, at


def _turn_start(rows: list[dict[str, Any]], at: int) -> int:
    """Where the turn ending at ``rows[at]`` starts: its user message (the notes the agent
    adds after an empty answer belong to the turn)."""
    start = at
    while start > 0 and (rows[start]["role"] != "user" or _is_note(rows[start])):
        start -= 1
    return start


def _is_note(row: dict[str, Any]) -> bool:
    return row["role"] == "user" and row.get("content") == EMPTY_RESPONSE_NOTE
