"""Plugin middleware (Hermes Agent 0.19's ``hermes_cli.middleware``): callbacks that change
what a turn does, where hooks only hear of it. ``ctx.register_middleware(kind, callback)``
adds one; hermes/agent/plugin_hooks.py runs them where 0.19 does:

- ``tool_request(tool_name, args, original_args, ...)``: before a tool call's
  ``pre_tool_call`` hooks; an answer ``{"args": {...}}`` replaces the call's arguments;
- ``tool_execution(tool_name, args, original_args, next_call, ...)``: around the tool;
  ``next_call(args=None)`` runs it (once) and what the callback returns is the result;
- ``llm_request(request, original_request, ...)``: before each model request; an answer
  ``{"request": {...}}`` replaces it (``model``, ``messages``, ``tools``, sampling options);
- ``llm_execution(request, original_request, next_call, ...)``: around the model call.

Every call also gets the turn's ``session_id``, ``task_id``, ``turn_id``, ``model``,
``platform`` and 0.19's ``telemetry_schema_version``/``middleware_schema_version``. A
callback that raises is one log line: the chain goes on without it (if its ``next_call``
ran, that answer stands; an error from further down is the caller's, as in 0.19).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger(__name__)

OBSERVER_SCHEMA_VERSION = "hermes.observer.v1"
MIDDLEWARE_SCHEMA_VERSION = "hermes.middleware.v1"

TOOL_REQUEST = "tool_request"
TOOL_EXECUTION = "tool_execution"
LLM_REQUEST = "llm_request"
LLM_EXECUTION = "llm_execution"
VALID_MIDDLEWARE = frozenset({TOOL_REQUEST, TOOL_EXECUTION, LLM_REQUEST, LLM_EXECUTION})

Callback = Callable[..., Any]


def versions(**keywords: Any) -> dict[str, Any]:
    """``keywords`` with 0.19's schema versions, as every middleware call carries them."""
    keywords.setdefault("telemetry_schema_version", OBSERVER_SCHEMA_VERSION)
    keywords.setdefault("middleware_schema_version", MIDDLEWARE_SCHEMA_VERSION)
    return keywords


def rewrite(
    kind: str, callbacks: Sequence[Callback], key: str, payload: dict[str, Any], **context: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Request middleware: the ``key`` payload (``args``, ``request``) each callback may
    replace, in turn, and the trace of those that did (``source``/``reason``/``name``)."""
    original = _copy(payload)
    current = _copy(payload)
    trace: list[dict[str, Any]] = []
    for callback in callbacks:
        try:
            answer = callback(**versions(**context, **{key: current, f"original_{key}": original}))
        except Exception as exc:  # a plugin's bug must not break the turn
            log.warning("middleware %s (%s) failed: %s", kind, _label(callback), exc)
            continue
        if isinstance(answer, dict) and isinstance(answer.get(key), dict):
            current = _copy(answer[key])
            said = {k: answer[k] for k in ("source", "reason", "name") if answer.get(k)}
            trace.append(said or {"source": "plugin"})
    return current, trace


def run_chain(
    kind: str,
    callbacks: Sequence[Callback],
    key: str,
    payload: dict[str, Any],
    last: Callable[[dict[str, Any]], Any],
    **context: Any,
) -> Any:
    """Execution middleware: each callback wraps the rest of the chain (``next_call``),
    ``last`` at its end (the tool, the model call)."""

    class Downstream(Exception):
        """An error from further down the chain, to pass through the callback unchanged."""

        def __init__(self, error: Exception) -> None:
            super().__init__(str(error))
            self.error = error

    def call_at(index: int, given: dict[str, Any]) -> Any:
        if index >= len(callbacks):
            return last(given)
        callback = callbacks[index]
        ran: dict[str, Any] = {}

        def next_call(next_payload: dict[str, Any] | None = None) -> Any:
            if "called" in ran:
                raise RuntimeError(
                    f"middleware {kind} ({_label(callback)}) called next_call() twice; "
                    "what it wraps runs once"
                )
            ran["called"] = True
            try:
                ran["answer"] = call_at(index + 1, given if next_payload is None else next_payload)
            except Exception as exc:
                raise Downstream(exc) from exc
            return ran["answer"]

        try:
            return callback(**versions(**context, **{key: given, "next_call": next_call}))
        except Downstream as exc:
            raise exc.error from None
        except Exception as exc:  # the plugin's own failure: go on without it
            log.warning("middleware %s (%s) failed: %s", kind, _label(callback), exc)
            if "answer" in ran:
                return ran["answer"]
            if "called" in ran:
                raise
            return call_at(index + 1, given)

    return call_at(0, payload)


def _copy(payload: dict[str, Any]) -> dict[str, Any]:
    """A deep copy, or a shallow one when something in it cannot be copied (a client)."""
    try:
        return copy.deepcopy(payload)
    except Exception:
        return dict(payload)


def _label(callback: Callback) -> str:
    return getattr(callback, "__qualname__", None) or repr(callback)
