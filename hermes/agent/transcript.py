"""The transcript: messages as the agent holds them, and their forms for the store
and for the wire.

The agent's messages are ``Message`` dicts (OpenAI's shape) that also carry a
``message_uid``. The uid is the message's identity in the store, so persisting the
same dict twice, after a resume or a rotation, writes nothing twice (invariant 7).
A message read from the store, or once stored, also carries ``stored_id``: the id of
its row (of the original row, for a copy carried into a later segment), which a
masked tool result names so the model can get it back. What a model endpoint is
sent is ``hermes.state.context.message.wire_form``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from hermes.state.context.message import Message
from hermes.state.segments import new_message_uid


def new_message(role: str, content: Any = None, **fields: Any) -> Message:
    message: dict[str, Any] = {"role": role, "content": content}
    message.update({k: v for k, v in fields.items() if v is not None})
    message.setdefault("message_uid", new_message_uid())
    return cast(Message, message)


def from_store(rows: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Store rows (``SessionDB.get_messages``) back into the agent's messages."""
    messages = []
    for row in rows:
        message: Message = {"role": row["role"], "content": row["content"]}
        for key in ("tool_calls", "tool_call_id", "tool_name", "reasoning"):
            if row.get(key):
                message[key] = row[key]
        message["message_uid"] = row["message_uid"]
        if row.get("id") is not None:
            message["stored_id"] = row.get("origin_id") or row["id"]
        messages.append(message)
    return messages


def for_store(message: Mapping[str, Any]) -> dict[str, Any]:
    """The fields ``SessionDB.append_messages`` takes from one agent message."""
    return {
        "role": message.get("role"),
        "content": message.get("content"),
        "tool_calls": message.get("tool_calls"),
        "tool_call_id": message.get("tool_call_id"),
        "tool_name": message.get("tool_name") or message.get("name"),
        "reasoning": message.get("reasoning"),
        "message_uid": message.get("message_uid"),
        "token_count": message.get("token_count"),
        "finish_reason": message.get("finish_reason"),
        "created_at": message.get("created_at"),
    }
