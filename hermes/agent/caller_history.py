"""A caller's ``conversation_history`` set against what the store holds.

Library callers (Hermes Agent's web UI, scripts) pass the history they hold with every
turn. Storing it again each turn would duplicate every message, so it is compared with
the store first, message by message (role, text, tool-call ids; bookkeeping keys such
as uids and timestamps are not compared):

- it *is* the stored conversation (the live segment's context, or every original
  message of the conversation): nothing is stored, the model gets the store's context;
- it is the stored conversation plus messages after it (a new conversation seeded by
  its caller): those messages are stored once, and the context is the store's plus them;
- anything else (a caller that trimmed, edited or kept its own history): the model gets
  the caller's history for this turn, as Hermes Agent does, and none of it is stored —
  the store's line is never forked or written twice; the turn's own messages are
  appended to it as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from hermes.agent import transcript
from hermes.state.context.message import Message
from hermes.state.history import normalised
from hermes.state.segments import new_message_uid

if TYPE_CHECKING:
    from hermes.agent.binding import ConversationBinding
    from hermes.state.store import SegmentStamp

log = logging.getLogger(__name__)

Key = tuple[str, str, str, tuple[str, ...]]


@dataclass(frozen=True)
class Reconciled:
    """The context a turn starts from, and which of the caller's messages to store."""

    context: list[Message]
    to_store: list[Message]
    detached: bool = False  # the context is the caller's own, not the store's


def reconcile(
    binding: ConversationBinding,
    history: Sequence[Mapping[str, Any]],
    read: tuple[str, SegmentStamp] | None = None,
) -> Reconciled:
    """Set ``history`` against the binding's stored conversation (see the module doc)."""
    given = [_own_copy(m) for m in history if m.get("role") != "system"]
    if not binding.writes_transcript:
        return Reconciled(context=given, to_store=[])
    stored = binding.load_history(read)
    extra = _after_prefix(stored, given)
    if extra is None and binding.session_db is not None and binding.session_id is not None:
        originals = binding.session_db.get_conversation_messages(binding.session_id)
        extra = _after_prefix(transcript.from_store(r for r in originals if not r["undone"]), given)
    if extra is None:
        log.info(
            "the history passed to %s differs from the stored one: it is this turn's"
            " context, and is not stored",
            binding.session_id,
        )
        return Reconciled(context=given, to_store=[], detached=True)
    return Reconciled(context=[*stored, *extra], to_store=extra)


def _after_prefix(
    stored: Sequence[Mapping[str, Any]], given: list[Message]
) -> list[Message] | None:
    """The given messages after ``stored``, when ``stored`` is how they begin."""
    if len(given) < len(stored) or _keys(given[: len(stored)]) != _keys(stored):
        return None
    return given[len(stored) :]


def _keys(messages: Iterable[Mapping[str, Any]]) -> list[Key]:
    return [_key(m) for m in messages]


def _key(message: Mapping[str, Any]) -> Key:
    calls = tuple(str(c.get("id") or "") for c in message.get("tool_calls") or ())
    return (
        str(message.get("role") or ""),
        normalised(message.get("content")),
        str(message.get("tool_call_id") or ""),
        calls,
    )


def _own_copy(message: Mapping[str, Any]) -> Message:
    """A copy the turn may keep, with a uid (its identity once stored)."""
    copy = dict(message)
    if not copy.get("message_uid"):
        copy["message_uid"] = new_message_uid()
    return cast(Message, copy)
