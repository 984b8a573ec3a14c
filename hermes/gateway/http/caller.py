"""Who an HTTP API request speaks for: its principal, and its ``X-Hermes-Session-Key``.

The **principal** is the owner of the bearer key the request carried: the name of an
entry of ``gateway.api_keys``, or None for the operator's single ``gateway.api_key``.
A principal is a user like a Telegram user, on the platform ``api`` with its name as
user id: the conversations it starts are stored with ``source='api'`` and
``user_id=<name>``, and it sees only those (another principal's ids are unknown ids).
The operator sees everything but the chat platforms' conversations (unless
``gateway.search_scope`` is ``all``), as before principals existed.

Hermes Agent's clients also send a stable key per end user or channel (hermes-webui's
user, a bot's chat) to scope that caller's conversations and memory apart from the
others sharing the operator's key. The conversations an operator's request creates and
the turns it queues carry it as their ``user_id``, so per-user tools (session search,
memory) keep to that caller. A principal is one user whatever key it sends.

Both are set for the request being handled, in context variables that the request's
task and the threads it hands work to (``asyncio.to_thread``) see.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from aiohttp import web

from hermes.gateway.settings import API_PRINCIPALS, API_SERVER

REQUEST_ITEM = "hermes.principal"  # request[REQUEST_ITEM]: the principal's name or None

_session_key: ContextVar[str | None] = ContextVar("hermes_api_session_key", default=None)
_principal: ContextVar[str | None] = ContextVar("hermes_api_principal", default=None)


def session_key() -> str | None:
    """The current request's ``X-Hermes-Session-Key`` (None: it sent none)."""
    return _session_key.get()


def set_session_key(key: str | None) -> None:
    _session_key.set(key)


def principal() -> str | None:
    """The current request's principal (None: the operator)."""
    return _principal.get()


def mark(request: web.Request, name: str | None) -> None:
    """Set the request's principal: ``request["hermes.principal"]`` for handlers, and the
    context variable for what they call."""
    with warnings.catch_warnings():
        # The agreed name is a plain string, which aiohttp would rather see as a RequestKey.
        warnings.simplefilter("ignore", web.NotAppKeyWarning)
        request[REQUEST_ITEM] = name
    _principal.set(name)


def source() -> str:
    """The ``source`` of the conversations the current request starts."""
    return API_SERVER if principal() is None else API_PRINCIPALS


def user_id() -> str | None:
    """The ``user_id`` of the conversations and turns of the current request."""
    name = principal()
    return session_key() if name is None else name


def may_see(segment: Mapping[str, Any], hidden_sources: Sequence[str]) -> bool:
    """Whether the current request may read or continue the conversation of ``segment``
    (any of its segments): a principal only its own, the operator all but
    ``hidden_sources``."""
    name = principal()
    if name is None:
        return segment.get("source") not in hidden_sources
    return segment.get("source") == API_PRINCIPALS and segment.get("user_id") == name
