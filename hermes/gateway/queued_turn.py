"""One queued turn as its caller asked for it: a ``QueuedTurn``.

A work item waits in the store's ``gateway_queue`` as JSON, so a restart (or another
gateway, taking over) runs it as asked. The turn's part of that payload (its text, the
caller's history, the caller's choices under ``options``) is shaped only in ``to_json``
and ``from_json``; the work item adds where it goes (kind, conversation, origin,
arrival order). The shape is the one earlier versions stored, so an item queued before
an upgrade still reads (and an older gateway on the same store reads ours). Everything
else reads the fields.

The serialisable half of the turn's ``TurnOptions`` lives here (model, instructions, the
caller's tools, sampling); the other half (the sink's callbacks) is made when the turn
starts, from the item's sink (``work.turn_options``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from hermes.agent.model.client import SAMPLING_KEYS

# The choices of ``options`` by the kind of their value (the payload keeps their names).
_TEXTS = ("model", "instructions", "user_uid", "answer_uid", "run_id")
_FLAGS = ("retried", "keep_exchange", "keep_partial_answer", "side_request")
_LISTS = ("content_parts", "tool_results")


@dataclass(frozen=True)
class QueuedTurn:
    """One turn as its caller asked for it (a chat message, an API request, a retry, a
    run, a command, a process's completion notice)."""

    text: str = ""  # the message (or the command, the notice) as it arrived
    content_parts: tuple[Mapping[str, Any], ...] | None = None  # the text with images
    history: tuple[Mapping[str, Any], ...] | None = None  # seeds a new conversation (API)
    model: str | None = None  # None: the conversation's own
    instructions: str | None = None  # the caller's system message, this turn only
    client_tools: tuple[Mapping[str, Any], ...] = ()  # schemas whose calls come back
    sampling: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    tool_results: tuple[Mapping[str, Any], ...] | None = None  # answers to client calls
    user_uid: str | None = None  # the question's message_uid, named ahead (retries)
    answer_uid: str | None = None  # the answer's, named ahead (Responses ids, retries)
    retried: bool = False  # a retry that took over a dead gateway's request
    keep_exchange: bool = False  # store a command and its answer as chat
    keep_partial_answer: bool = False  # a stopped stream keeps what its client was sent
    side_request: bool = False  # a chat UI's title and such: no tools, nothing kept
    run_id: str | None = None  # the API run this turn is

    @property
    def user_message(self) -> str | list[dict[str, Any]]:
        """What the model is sent: the parts when the text came with images, else the text."""
        if self.content_parts:
            return [dict(part) for part in self.content_parts]
        return self.text

    def to_json(self) -> dict[str, Any]:
        """The turn's keys of the queue payload: ``text``, ``history`` and ``options``
        (only the choices that differ from no choice at all)."""
        chosen: dict[str, Any] = {name: getattr(self, name) for name in (*_TEXTS, *_FLAGS)}
        chosen |= {name: _listed(getattr(self, name)) for name in _LISTS}
        chosen["client_tools"] = [dict(tool) for tool in self.client_tools] or None
        options = dict(self.sampling) | {key: value for key, value in chosen.items() if value}
        return {"text": self.text, "history": _listed(self.history), "options": options}

    @classmethod
    def from_json(cls, payload: Mapping[str, Any] | None) -> QueuedTurn:
        """The turn of a queue payload (any version's; a key it does not know is ignored)."""
        payload = payload or {}
        data = payload.get("options") or {}
        chosen: dict[str, Any] = {name: _text_or_none(data.get(name)) for name in _TEXTS}
        chosen |= {name: bool(data.get(name)) for name in _FLAGS}
        chosen |= {name: _tupled(data.get(name)) for name in _LISTS}
        return cls(
            text=str(payload.get("text") or ""),
            history=_tupled(payload.get("history")),
            client_tools=tuple(data.get("client_tools") or ()),
            sampling=MappingProxyType({k: data[k] for k in SAMPLING_KEYS if k in data}),
            **chosen,
        )

    @classmethod
    def from_request(
        cls,
        text: str,
        options: Mapping[str, Any],
        history: Sequence[Mapping[str, Any]] | None = None,
    ) -> QueuedTurn:
        """The turn an HTTP request asks for: its text, its choices (``options``, parsed
        as the payload holds them) and the caller's history seeding a new conversation."""
        return cls.from_json({"text": text, "history": history, "options": options})


def _text_or_none(value: Any) -> str | None:
    return str(value) if value else None


def _tupled(value: Any) -> tuple[Mapping[str, Any], ...] | None:
    return None if value is None else tuple(value)


def _listed(value: tuple[Mapping[str, Any], ...] | None) -> list[dict[str, Any]] | None:
    return None if value is None else [dict(part) for part in value]
