"""``X-Hermes-Session-Key``: checked on arrival, remembered for the request, echoed back.

The key names the caller a request speaks for (``hermes.gateway.http.caller``). As in Hermes
Agent 0.19 it is at most 256 characters without control characters (else a 400), and
every answer to a request that sent one carries it back, streams included.
"""

from __future__ import annotations

import re

from aiohttp import web

from hermes.gateway.http import caller
from hermes.gateway.http.common import error_response
from hermes.gateway.http.guard import Handler

HEADER = "X-Hermes-Session-Key"
MAX_LENGTH = 256
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@web.middleware
async def session_key(request: web.Request, handler: Handler) -> web.StreamResponse:
    key = request.headers.get(HEADER, "").strip() or None
    if key is not None and (_CONTROL.search(key) or len(key) > MAX_LENGTH):
        return error_response(
            400,
            f"{HEADER} must be 1-{MAX_LENGTH} characters without control characters.",
            "invalid_request_error",
            "invalid_session_key",
        )
    caller.set_session_key(key)  # this request's task only: a context variable
    return await handler(request)


async def echo(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: the caller's key goes back with the answer's headers."""
    key = request.headers.get(HEADER, "").strip()
    if key and not _CONTROL.search(key) and len(key) <= MAX_LENGTH:
        response.headers[HEADER] = key
