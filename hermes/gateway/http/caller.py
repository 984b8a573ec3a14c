"""Who an HTTP API request speaks for: its ``X-Hermes-Session-Key``, if it sent one.

Hermes Agent's clients send a stable key per end user or channel (hermes-webui's user,
a bot's chat) to scope that caller's conversations and memory apart from the others
sharing the bearer key. The API server sets it for the request being handled; the
conversations the request creates and the turns it queues carry it as their
``user_id``, so per-user tools (session search, memory) keep to that caller.
"""

from __future__ import annotations

from contextvars import ContextVar

_session_key: ContextVar[str | None] = ContextVar("hermes_api_session_key", default=None)


def session_key() -> str | None:
    """The current request's ``X-Hermes-Session-Key`` (None: it sent none)."""
    return _session_key.get()


def set_session_key(key: str | None) -> None:
    _session_key.set(key)
