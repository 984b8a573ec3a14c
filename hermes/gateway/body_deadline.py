"""A request body read within a time limit, for every aiohttp server of the gateway (the
HTTP API and the webhook platform): a sender that trickles its body (slowloris) is
answered 408 and cut off, instead of holding a connection open for ever."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ErrorResponse = Callable[[int, str, str], web.Response]


def body_deadline(seconds: float, error: ErrorResponse) -> Any:
    """An aiohttp middleware that reads a request's body within ``seconds`` (else 408).

    The body is read here, once: handlers' ``request.json()`` then finds it cached.
    """

    @web.middleware
    async def deadline(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.body_exists:
            try:
                async with asyncio.timeout(seconds):  # no task of its own, unlike wait_for
                    await request.read()
            except TimeoutError:
                response = error(
                    408,
                    f"The request body did not arrive within {seconds:g} seconds; send it "
                    "whole and promptly.",
                    "invalid_request_error",
                )
                response.force_close()
                return response
        return await handler(request)

    return deadline
