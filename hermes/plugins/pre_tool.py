"""What decides, before a tool runs, that it does not (0.19's ``pre_tool_call``
directives), and the tools a thread may call at all.

A ``pre_tool_call`` callback may answer ``{"action": "block", "message": m}`` (the call
is answered with ``m``) or ``{"action": "approve", "message": why, "rule_key": k}`` (the
user is asked; where nobody can be asked, or the asking fails, the call is blocked). The
first such answer wins. ``set_thread_allowed`` keeps a thread's calls to a set of tools
(0.19's ``set_thread_tool_whitelist``): any other is blocked before the hooks are asked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

DEFAULT_DENIED = "Tool '{tool_name}' denied: not in this thread's tool whitelist"

_allowed = threading.local()


@dataclass(frozen=True)
class Directive:
    """What the hooks said of one call: ``block``, ``approve`` or nothing (``None``)."""

    action: str | None = None
    message: str | None = None
    rule_key: str | None = None


def set_thread_allowed(allowed: Iterable[str] | None, denied: str = DEFAULT_DENIED) -> None:
    """Only ``allowed`` tools run on this thread (None: any); ``denied`` is the answer to
    another, ``{tool_name}`` in it filled."""
    _allowed.names = None if allowed is None else frozenset(allowed)
    _allowed.denied = denied


def clear_thread_allowed() -> None:
    _allowed.names = None


def thread_refusal(tool_name: str) -> str | None:
    names = getattr(_allowed, "names", None)
    if names is None or tool_name in names:
        return None
    return str(getattr(_allowed, "denied", DEFAULT_DENIED)).format(tool_name=tool_name)


def directive(answers: Iterable[Any]) -> Directive:
    """The first ``block`` (with a message) or ``approve`` among the hooks' answers."""
    for answer in answers:
        if not isinstance(answer, dict) or answer.get("action") not in ("block", "approve"):
            continue
        message = answer.get("message")
        message = message if isinstance(message, str) and message else None
        if answer["action"] == "block" and message is None:
            continue
        key = answer.get("rule_key") if answer["action"] == "approve" else None
        key = key.strip() if isinstance(key, str) and key.strip() else None
        return Directive(answer["action"], message, key)
    return Directive()


def block_message(
    found: Directive, tool_name: str, ask: Callable[[str, str], bool] | None
) -> str | None:
    """The answer a blocked call gets, or None when it may run. ``ask(tool, why)`` asks
    the user for an ``approve``; None: nobody can be asked here."""
    if found.action == "block":
        return found.message
    if found.action != "approve":
        return None
    if ask is None:
        return f"BLOCKED: plugin approval required for {tool_name}"
    try:
        approved = bool(ask(tool_name, found.message or ""))
    except Exception:  # a broken prompt must not run what a plugin flagged
        return f"BLOCKED: plugin approval gate failed for {tool_name}"
    return None if approved else f"BLOCKED: plugin approval required for {tool_name}"


def verify_continue(answers: Iterable[Any]) -> str | None:
    """0.19's ``pre_verify`` answers: the first ``{"action": "continue", "message": m}``
    (or ``{"decision": "block", "reason": m}``) message, stripped."""
    for answer in answers:
        if not isinstance(answer, dict):
            continue
        action = str(answer.get("action") or answer.get("decision") or "").strip().lower()
        message = answer.get("message") or answer.get("reason")
        if action in ("continue", "block") and isinstance(message, str) and message.strip():
            return message.strip()
    return None
