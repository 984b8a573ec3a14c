"""A plug-in's context engine in the compressor's place (docs/design.md, "Context engines").

``context.engine: <name>`` selects the ``ContextEngine`` a plugin registered under that
name. ``EngineCompressor`` gives it the compressor's seat in the compression path
(``compression.py``), which stays hermes's: the lease is taken before the engine runs and
refreshed while it runs, and the rotation publishes what it made under the store's
rules. The engine decides *when* (``should_compress``) and *what* the compacted context
is; the store decides what may be dropped — nothing:

- a message of the engine's list that is one of ours unchanged (same ``message_uid``
  and content) is a kept copy; anything else it returns (its summaries, a message it
  rewrote) is new, and the messages it left out count as read by it — but only if it
  wrote something new: an engine that only drops covers nothing, and the store carries
  every row back (no progress, so the compression counts as failed);
- the store checks that coverage at publish time (invariant 14) and refuses a child a
  provider would refuse (invariant 15); the parent keeps every row (invariant 9);
- an engine that raises, or returns no shorter list, is a failed compression
  (invariant 5): nothing changes and a cooldown starts.
"""

from __future__ import annotations

import copy
import inspect
import logging
import time
import weakref
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

from hermes.agent.summariser import NOTHING_TO_COMPRESS
from hermes.agent.tokens import estimate_tokens
from hermes.plugins.engine import ContextEngine
from hermes.state.context.message import Message
from hermes.tools.registry import Tool, ToolContext

log = logging.getLogger(__name__)


class _Told:
    """The conversation each engine was last told (an engine that cannot be copied is
    shared by the agents of a process, and told again whenever another conversation
    takes a turn). By engine identity; an engine's entry goes when the engine does, so
    dropped agents leave nothing and a new engine at a freed address is told afresh."""

    def __init__(self) -> None:
        self._told: dict[int, str] = {}
        self._watched: dict[int, Any] = {}  # the finalizer, or the engine itself if unreferable

    def get(self, engine: Any) -> str | None:
        return self._told.get(id(engine))

    def set(self, engine: Any, conversation_id: str | None) -> None:
        key = id(engine)
        if conversation_id is None:
            self._told.pop(key, None)
            return
        if key not in self._watched:
            try:
                self._watched[key] = weakref.finalize(engine, self._forget, key)
            except TypeError:  # no weak reference: keep it, so its address stays its own
                self._watched[key] = engine
        self._told[key] = conversation_id

    def _forget(self, key: int) -> None:
        self._told.pop(key, None)
        self._watched.pop(key, None)


_BOUND = _Told()
# What identifies a message's content: a kept copy must match its original on all.
_CONTENT_KEYS = ("role", "content", "tool_calls", "tool_call_id")


@dataclass(frozen=True)
class Endpoint:
    """Where the agent's model is served: what 0.19's ``update_model`` tells an engine
    beside the model and its window (its summaries may call the same endpoint)."""

    base_url: str = ""
    api_key: str = ""
    provider: str = ""
    api_mode: str = "chat_completions"  # the one API hermes speaks


class EngineCompressor:
    """A ``ContextEngine`` seated where ``Summariser`` sits, with its attributes."""

    def __init__(
        self,
        engine: ContextEngine,
        *,
        model: str,
        context_length: int,
        cooldown_seconds: float,
        endpoint: Endpoint | None = None,
    ) -> None:
        self.engine = engine
        self.model = model
        self.endpoint = endpoint or Endpoint()
        self.cooldown_seconds = cooldown_seconds
        self.last_covered_uids: frozenset[str] = frozenset()
        self._last_summary_error: str | None = None
        self._last_compress_aborted = False
        self._last_aux_model_failure_model: str | None = None
        self._cooldown_until = 0.0
        self.update_model(model, context_length)

    @property
    def name(self) -> str:
        return self.engine.name

    @property
    def context_length(self) -> int:
        return int(self.engine.context_length or 0)

    @context_length.setter
    def context_length(self, window: int) -> None:
        self.update_model(self.model, window)

    def update_model(
        self, model: str, context_length: int, endpoint: Endpoint | None = None
    ) -> None:
        """Tell the engine the model it compresses for, and so its window, changed (at
        its seating, ``/model``, a window the provider stated): 0.19's ``update_model``
        with the model, its window and the endpoint (``endpoint``, else the last one)."""
        self.model = model
        self.endpoint = endpoint or self.endpoint
        told = {"model": model, "context_length": context_length, **asdict(self.endpoint)}
        try:
            self.engine.update_model(**_accepted(self.engine.update_model, told))
        except Exception as exc:  # the engine's bug must not break the agent
            log.warning("context engine %s: update_model failed: %s", self.name, exc)

    @property
    def threshold_tokens(self) -> int:
        return int(self.engine.threshold_tokens or 0)

    @property
    def last_prompt_tokens(self) -> int:
        return int(self.engine.last_prompt_tokens or 0)

    @last_prompt_tokens.setter
    def last_prompt_tokens(self, tokens: int) -> None:
        usage = {"prompt_tokens": tokens, "completion_tokens": 0, "total_tokens": tokens}
        self.engine.update_from_response(usage)

    def start_cooldown(self, reason: str) -> None:
        self._cooldown_until = time.monotonic() + self.cooldown_seconds

    def should_compress(
        self, prompt_tokens: int | None = None, messages: Sequence[Message] | None = None
    ) -> bool:
        if time.monotonic() < self._cooldown_until:
            return False
        if prompt_tokens is None and messages is not None:
            prompt_tokens = estimate_tokens(messages)
        try:
            return bool(self.engine.should_compress(prompt_tokens))
        except Exception as exc:  # the engine's bug must not break the turn
            log.warning("context engine %s: should_compress failed: %s", self.name, exc)
            return False

    # Summariser.compress's signature, repeated: an engine stands where the Summariser does
    # (ContextWindow.compressor).
    def compress(
        self,
        messages: list[Message],
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        whole: bool = False,
    ) -> list[Message]:
        """The engine's compacted list with coverage noted, or ``messages`` itself."""
        self.last_covered_uids = frozenset()
        self._last_summary_error, self._last_compress_aborted = None, False
        given = [copy.deepcopy(dict(m)) for m in messages]  # the engine cannot touch ours
        try:
            asked = {"current_tokens": current_tokens, "focus_topic": focus_topic, "force": whole}
            made = self.engine.compress(given, **_accepted(self.engine.compress, asked))
        except Exception as exc:
            return self._failed(messages, f"the context engine {self.name} failed: {exc}")
        if not isinstance(made, list) or len(made) >= len(messages):
            return self._failed(messages, NOTHING_TO_COMPRESS, cooldown=False)
        kept, new = _sorted_out(messages, made)
        if not new:
            return self._failed(messages, f"the context engine {self.name} wrote no summary")
        self.last_covered_uids = frozenset(
            str(m["message_uid"]) for m in messages if m.get("message_uid") not in kept
        )
        return cast(list[Message], made)

    def bind(self, conversation_id: str, **about: Any) -> None:
        """Tell the engine which conversation it serves (its ``on_session_start``), once
        per conversation: hermes's conversation id is the engine's session id, so its
        state follows the conversation across rotations."""
        if _BOUND.get(self.engine) == conversation_id:
            return
        _BOUND.set(self.engine, conversation_id)  # by engine: a shared one is told too
        try:
            self.engine.on_session_start(conversation_id, conversation_id=conversation_id, **about)
        except Exception as exc:
            log.warning("context engine %s: on_session_start failed: %s", self.name, exc)

    def end(self, conversation_id: str, messages: list[Message]) -> None:
        """Tell the engine its conversation ended (the user started another or left):
        its ``on_session_end`` with the conversation's messages, then
        ``on_session_reset``. Only an engine told of that conversation hears it."""
        if _BOUND.get(self.engine) != conversation_id:
            return
        _BOUND.set(self.engine, None)  # the next conversation is told again
        calls = (
            ("on_session_end", (conversation_id, [dict(m) for m in messages])),
            ("on_session_reset", ()),
        )
        for hook, arguments in calls:
            method = getattr(self.engine, hook, None)
            if method is None:
                continue
            try:
                method(*arguments)
            except Exception as exc:
                log.warning("context engine %s: %s failed: %s", self.name, hook, exc)

    def _failed(self, messages: list[Message], reason: str, cooldown: bool = True) -> list[Message]:
        self._last_summary_error = reason
        self._last_compress_aborted = True
        if cooldown:
            log.warning("%s; compression waits %ss", reason, self.cooldown_seconds)
            self.start_cooldown(reason)
        return messages


def _accepted(method: Any, keywords: dict[str, Any]) -> dict[str, Any]:
    """The keywords ``method`` takes (an engine written for an older 0.19 takes fewer)."""
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return keywords
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return keywords
    return {k: v for k, v in keywords.items() if k in parameters}


def _sorted_out(messages: list[Message], made: list[Any]) -> tuple[set[str], list[Any]]:
    """(uids of ours the engine kept unchanged, the messages it made); a made message
    loses a uid it shares with one of ours it changed, so it is stored as new."""
    ours = {str(m["message_uid"]): m for m in messages if m.get("message_uid")}
    kept: set[str] = set()
    new = []
    for message in made:
        uid = message.get("message_uid") if isinstance(message, dict) else None
        original = ours.get(str(uid)) if uid else None
        if original is not None and all(message.get(k) == original.get(k) for k in _CONTENT_KEYS):
            kept.add(str(uid))
            continue
        if isinstance(message, dict):
            message.pop("message_uid", None)
            message.pop("stored_id", None)
        new.append(message)
    return kept, new


def engine_tools(engine: ContextEngine) -> list[Tool]:
    """The tools the engine offers (``get_tool_schemas``), run by ``handle_tool_call``, in
    the ``context_engine`` toolset (0.19's name)."""
    tools = []
    for schema in _schemas(engine):
        name = str(schema["name"])

        def run(args: dict[str, Any], ctx: ToolContext, name: str = name) -> str:
            return str(engine.handle_tool_call(name, args, session_id=ctx.session_id))

        tools.append(
            Tool(
                name=name,
                description=str(schema.get("description") or name),
                parameters=schema.get("parameters") or {"type": "object", "properties": {}},
                handler=run,
                toolsets=("context_engine",),
            )
        )
    return tools


def _schemas(engine: ContextEngine) -> list[dict[str, Any]]:
    try:
        found = engine.get_tool_schemas()
    except Exception as exc:
        log.warning("context engine %s: its tools cannot be listed: %s", engine.name, exc)
        return []
    schemas = []
    for schema in found or []:
        inner = schema.get("function", schema) if isinstance(schema, dict) else None
        if isinstance(inner, dict) and inner.get("name"):
            schemas.append(inner)
    return schemas


def chosen_engine(name: str, registered: ContextEngine | None) -> ContextEngine | None:
    """A copy of the plugin's engine for one agent (0.19 copies it too, so one agent's
    model switch cannot change another's); the shared one if it cannot be copied."""
    if registered is None:
        log.warning(
            "context engine %r is not registered by any loaded plugin; "
            "the built-in compressor is used",
            name,
        )
        return None
    try:
        return copy.deepcopy(registered)
    except Exception as exc:  # engines holding connections or locks
        log.info("context engine %s cannot be copied (%s); agents share it", name, exc)
        return registered
