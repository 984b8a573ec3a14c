"""The transcript: messages as the agent holds them, and their persistence.

The agent's messages are OpenAI-style dicts that also carry a ``message_uid``. The
uid is the message's identity in the store, so persisting the same dict twice, after
a resume or a rotation, writes nothing twice (invariant 7). A message read from the
store, or once stored, also carries ``stored_id``: the id of its row (of the original
row, for a copy carried into a later segment), which a masked tool result names so
the model can get it back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hermes.agent.masking import STORED_ID
from hermes.state.segments import new_message_uid

# Keys the model API understands; everything else stays on our side.
API_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def new_message(role: str, content: Any = None, **fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": content}
    message.update({k: v for k, v in fields.items() if v is not None})
    message.setdefault("message_uid", new_message_uid())
    return message


def api_form(message: Mapping[str, Any]) -> dict[str, Any]:
    """One message as the model API wants it (no uid, no bookkeeping keys). A message
    whose stored text differs from what the model was sent keeps the sent text in
    ``api_content`` (a caller's ``persist_user_message``); the model gets that."""
    item = {k: message[k] for k in API_KEYS if message.get(k) not in (None, [], "")}
    if message.get("api_content") is not None:
        item["content"] = message["api_content"]
    if message.get("role") == "tool" and "name" not in item and message.get("tool_name"):
        item["name"] = message["tool_name"]
    if item.get("role") == "assistant" and "content" not in item:
        item["content"] = None if item.get("tool_calls") else ""
    item.setdefault("content", "")
    return item


def to_api(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages in API form (the agent itself keeps them encoded: ``wire.py``)."""
    return [api_form(m) for m in messages]


def from_store(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Store rows (``SessionDB.get_messages``) back into the agent's message dicts."""
    messages = []
    for row in rows:
        message: dict[str, Any] = {"role": row["role"], "content": row["content"]}
        for key in ("tool_calls", "tool_call_id", "tool_name", "reasoning"):
            if row.get(key):
                message[key] = row[key]
        message["message_uid"] = row["message_uid"]
        if row.get("id") is not None:
            message[STORED_ID] = row.get("origin_id") or row["id"]
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
