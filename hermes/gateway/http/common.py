"""What the API server's routes share: OpenAI-shaped error answers, the caller's sentence
for a failed model endpoint, and the conversation headers.

The chat-completions route (``server``) and the Responses API (``responses``)
answer errors the same way, so both take them from here.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from aiohttp import web

from hermes.gateway.envelopes import WorkResult
from hermes.gateway.lanes import ResultSink

SESSION_HEADER = "X-Hermes-Session-Id"
RESUME_HEADER = "X-Hermes-Resume"  # "1": a stale id goes back to its own conversation
BRANCHED_HEADER = "X-Hermes-Branched-From"  # the conversation a new branch started from
NO_RETRY_HEADER = "x-should-retry"  # "false": the OpenAI SDKs do not retry the request
SESSION_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
DISCONNECT_CHECK = 0.5  # seconds between looks at a streaming client's connection
UPSTREAM_FAILED = (
    "The model endpoint behind this gateway failed to answer; try again later, or ask the"
    " gateway's operator if it keeps failing."
)


def caller_error(result: WorkResult) -> str:
    """What the HTTP caller is told; the operator's advice is in the gateway log."""
    if result.upstream_failed:
        return UPSTREAM_FAILED
    return result.error or ""


def error_response(
    status: int,
    message: str,
    type_: str,
    code: str | None = None,
    *,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    """An answer with OpenAI's error body (``error_body``)."""
    return web.json_response(
        error_body(message, type_, code, param), status=status, headers=headers
    )


def error_body(
    message: str, type_: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error body: ``{"error": {message, type, param, code}}``."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def bad_request(message: str, code: str | None = None) -> web.HTTPBadRequest:
    """A 400 to raise, with OpenAI's error body (aiohttp answers it for the handler)."""
    body = error_body(message, "invalid_request_error", code)
    return web.HTTPBadRequest(text=json.dumps(body), content_type="application/json")


async def json_object(
    request: web.Request, *, code: str | None = None, allow_empty: bool = False
) -> dict[str, Any]:
    """The request body as a JSON object, or a raised 400 saying what is wrong with it."""
    if allow_empty and not request.body_exists:
        return {}
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise bad_request("The request body is not valid JSON.", code) from None
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object.", code)
    return body


def session_of(request: web.Request) -> str | None:
    """The ``X-Hermes-Session-Id`` the caller named (None: none), or a raised 400."""
    session = request.headers.get(SESSION_HEADER) or None
    if session is not None and not SESSION_ID.match(session):
        raise bad_request(f"{SESSION_HEADER} must be 1-128 letters, digits, '.', '_' or '-'.")
    return session


async def next_piece(request: web.Request, sink: ResultSink) -> Any:
    """The sink's next streamed piece; raises ``ConnectionResetError`` as soon as the
    client has gone, even while the model is silent (a write would only tell later)."""
    while True:
        try:
            return await asyncio.wait_for(sink.deltas.get(), DISCONNECT_CHECK)
        except TimeoutError:
            transport = request.transport
            if transport is None or transport.is_closing():
                raise ConnectionResetError("the client disconnected") from None
