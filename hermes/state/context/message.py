"""A conversation's message as hermes holds it, and the form a model endpoint is sent.

``Message`` is OpenAI's chat message (``role``, ``content``, ``tool_calls``,
``tool_call_id``, ``name``) plus hermes's own keys: the ``message_uid`` that is its
identity in the store, the ``tool_name`` a result is stored under, the model's
``reasoning``, and bookkeeping the store keeps. ``WireMessage`` is what crosses the
wire; ``wire_form`` makes one from a ``Message`` (the only
place that does). Both live in ``state``, the lowest room, so the store, the agent and
the gateway all name the same type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Required, TypedDict, cast

# Keys the model API understands; everything else stays on our side.
WIRE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
# The columns of a stored message row that say what the message says (the store, its
# export and its copy's checksum read them; the rest is identity and bookkeeping).
SAID_COLUMNS = ("role", "content", "tool_calls", "tool_call_id", "tool_name", "reasoning")


class Message(TypedDict, total=False):
    """One message of a conversation, as the agent and the store exchange it."""

    role: Required[str]  # "system", "user", "assistant" or "tool"
    content: Any  # text, a list of content parts, or None beside tool calls
    # OpenAI's ``[{"id", "type": "function", "function": {"name", "arguments"}}]``.
    tool_calls: list[dict[str, Any]]
    tool_call_id: str  # the call a tool result answers
    name: str
    # hermes's own: never sent as such.
    message_uid: str  # the message's identity in the store (a rewrite writes nothing twice)
    tool_name: str  # the tool a result came from (sent as ``name``)
    reasoning: str  # the model's thinking, kept beside its answer
    api_content: Any  # what the model was sent when the stored content differs
    finish_reason: str
    created_at: float
    token_count: int
    stored_id: int  # the row (the original row, for a carried copy) a masked stub names


class WireMessage(TypedDict, total=False):
    """One message as a chat-completions request carries it."""

    role: Required[str]
    content: Required[Any]
    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    name: str


def wire_form(message: Mapping[str, Any]) -> WireMessage:
    """One message as a model endpoint is sent it: only the wire's keys (no uid, no
    bookkeeping), no empty extras (OpenAI refuses an empty ``tool_calls``). A message
    whose stored text differs from what the model was sent keeps the sent text in
    ``api_content`` (a caller's ``persist_user_message``); the model gets that. A tool
    result names its tool; a message always has a ``content`` (None only beside an
    assistant's tool calls)."""
    item = {k: message[k] for k in WIRE_KEYS if message.get(k) not in (None, [], "")}
    if message.get("api_content") is not None:
        item["content"] = message["api_content"]
    if message.get("role") == "tool" and "name" not in item and message.get("tool_name"):
        item["name"] = message["tool_name"]
    if item.get("role") == "assistant" and "content" not in item:
        item["content"] = None if item.get("tool_calls") else ""
    item.setdefault("content", "")
    return cast(WireMessage, item)


def is_summary_row(row: Mapping[str, Any]) -> bool:
    """A stored compaction summary: a compacted row that copies no message. It has the
    role ``user`` (providers want one there) but asks nothing."""
    return bool(row.get("compacted")) and row.get("origin_id") is None
