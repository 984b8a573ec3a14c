"""What a caller asked of one queued turn, beside its text: a ``QueuedTurn``.

A work item waits in the store's ``gateway_queue`` as JSON, so a restart (or another
gateway, taking over) runs it as asked. ``to_json`` and ``from_json`` are the only places
that payload is shaped; its shape is the one earlier versions stored as a work item's
``options`` dict, so an item queued before an upgrade still reads (and an older gateway
on the same store reads ours). Everything else reads the fields.

The serialisable half of the turn's ``TurnOptions`` lives here (model, instructions, the
caller's tools, sampling); the other half (the sink's callbacks) is made when the turn
starts, from the item's sink (``work.turn_options``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from hermes.agent.model.client import SAMPLING_KEYS


@dataclass(frozen=True)
class QueuedTurn:
    """One turn as its caller asked for it (an API request, a retry, a run)."""

    model: str | None = None  # None: the conversation's own
    instructions: str | None = None  # the caller's system message, this turn only
    client_tools: tuple[Mapping[str, Any], ...] = ()  # schemas whose calls come back
    sampling: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    content_parts: tuple[Mapping[str, Any], ...] | None = None  # text with images
    tool_results: tuple[Mapping[str, Any], ...] | None = None  # answers to client calls
    user_uid: str | None = None  # the question's message_uid, named ahead (retries)
    answer_uid: str | None = None  # the answer's, named ahead (Responses ids, retries)
    retried: bool = False  # a retry that took over a dead gateway's request
    keep_exchange: bool = False  # store a command and its answer as chat
    keep_partial_answer: bool = False  # a stopped stream keeps what its client was sent
    side_request: bool = False  # a chat UI's title and such: no tools, nothing kept
    run_id: str | None = None  # the API run this turn is

    def to_json(self) -> dict[str, Any]:
        """The queue payload's ``options``: only what differs from no choice at all."""
        data: dict[str, Any] = dict(self.sampling)
        fields = {
            "model": self.model,
            "instructions": self.instructions,
            "client_tools": [dict(tool) for tool in self.client_tools] or None,
            "content_parts": _listed(self.content_parts),
            "tool_results": _listed(self.tool_results),
            "user_uid": self.user_uid,
            "answer_uid": self.answer_uid,
            "retried": self.retried,
            "keep_exchange": self.keep_exchange,
            "keep_partial_answer": self.keep_partial_answer,
            "side_request": self.side_request,
            "run_id": self.run_id,
        }
        data.update({key: value for key, value in fields.items() if value})
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> QueuedTurn:
        """A payload's ``options`` (any version's; a key it does not know is ignored)."""
        data = data or {}
        text = _text_or_none
        return cls(
            model=text(data.get("model")),
            instructions=text(data.get("instructions")),
            client_tools=tuple(data.get("client_tools") or ()),
            sampling=MappingProxyType({k: data[k] for k in SAMPLING_KEYS if k in data}),
            content_parts=_tupled(data.get("content_parts")),
            tool_results=_tupled(data.get("tool_results")),
            user_uid=text(data.get("user_uid")),
            answer_uid=text(data.get("answer_uid")),
            retried=bool(data.get("retried")),
            keep_exchange=bool(data.get("keep_exchange")),
            keep_partial_answer=bool(data.get("keep_partial_answer")),
            side_request=bool(data.get("side_request")),
            run_id=text(data.get("run_id")),
        )


def _text_or_none(value: Any) -> str | None:
    return str(value) if value else None


def _tupled(value: Any) -> tuple[Mapping[str, Any], ...] | None:
    return None if value is None else tuple(value)


def _listed(value: tuple[Mapping[str, Any], ...] | None) -> list[dict[str, Any]] | None:
    return None if value is None else [dict(part) for part in value]
