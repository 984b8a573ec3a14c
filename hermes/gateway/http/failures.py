"""Every error the HTTP API answers is JSON in OpenAI's shape, and a store that does
not answer is a 503 at once.

aiohttp answers what no handler catches with a plain-text page ("500 Internal Server
Error", "404: Not Found"), which OpenAI's SDKs and the other clients cannot read.
``json_errors`` (the outermost middleware) turns each into OpenAI's error body: an
unknown path or method, a body too large, and a handler's failure (logged, with its
traceback, for the operator; the caller gets one sentence). A ``StoreUnavailableError``
becomes a 503 with ``Retry-After`` and marks the store down (``StoreHealth``);
``store_gate`` then refuses the requests that need the store at once, until the
watcher hears from the store again, instead of letting each wait out the store's patience.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any

from aiohttp import web

from hermes.gateway.http.common import error_response
from hermes.gateway.http.guard import Handler
from hermes.gateway.store_health import RETRY_AFTER, StoreHealth
from hermes.state.errors import StoreUnavailableError

log = logging.getLogger(__name__)

# Whether this request's answer went out already (a stream, say): an error after that
# cannot be answered. A context variable: a connection's requests may share one task.
PREPARED: ContextVar[bool] = ContextVar("hermes_api_prepared", default=False)
# What answers without the store: whether the gateway is up, and what it offers.
WITHOUT_STORE = ("/health", "/v1/health", "/health/detailed", "/v1/models", "/openapi.json")
FAILED = (
    "The gateway failed on this request (its log says why); try again, or ask the "
    "gateway's operator if it keeps failing."
)


async def mark_prepared(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: after this, an error cannot be answered as a new response."""
    PREPARED.set(True)


def json_errors(health: StoreHealth) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        PREPARED.set(False)
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400 or exc.content_type == "application/json":
                raise
            return _http_error(request, exc)
        except StoreUnavailableError as exc:
            if PREPARED.get():
                raise
            health.went_down(exc)
            return store_down()
        except Exception:
            if PREPARED.get():
                raise
            log.exception("the API failed on %s %s", request.method, request.path)
            return error_response(500, FAILED, "server_error", "internal_error")

    return middleware


def store_gate(health: StoreHealth) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if health.reachable or _without_store(request.path):
            return await handler(request)
        return store_down()

    return middleware


def store_down() -> web.Response:
    return error_response(
        503,
        "The gateway's state store does not answer, so this request cannot be served now; "
        f"retry in {RETRY_AFTER} s (the gateway's operator sees why in its log and in "
        "`hermes gateway status`).",
        "server_error",
        "store_unavailable",
        headers={"Retry-After": str(RETRY_AFTER)},
    )


def _without_store(path: str) -> bool:
    return path in WITHOUT_STORE or path.startswith("/v1/models/")


def _http_error(request: web.Request, exc: web.HTTPException) -> web.Response:
    where = f"{request.method} {request.path[:200]}"
    if exc.status == 404:
        message = f"No such endpoint: {where}. The API's paths are listed at /openapi.json."
        kind, code = "invalid_request_error", "not_found"
    elif exc.status == 405:
        allowed = ", ".join(sorted(getattr(exc, "allowed_methods", ()) or ()))
        message = f"{where} is not allowed" + (f"; use {allowed}." if allowed else ".")
        kind, code = "invalid_request_error", "method_not_allowed"
    elif exc.status == 413:
        message = "The request body is too large for this gateway."
        kind, code = "invalid_request_error", "request_too_large"
    elif exc.status >= 500:
        message, kind, code = FAILED, "server_error", "internal_error"
    else:
        message = f"{exc.reason} ({where})."
        kind, code = "invalid_request_error", None
    headers = {k: v for k, v in exc.headers.items() if k.lower() in ("allow", "retry-after")}
    return error_response(exc.status, message, kind, code, headers=headers or None)
