"""Refusals at the HTTP API's edge that hold with or without a bearer key.

A web page in the user's browser can send "simple" cross-site requests to a loopback
server without a CORS preflight (``Content-Type: text/plain``), and DNS rebinding lets
it name the server by a hostile host name. So, before any route runs:

- ``POST``/``PUT``/``PATCH`` must carry ``Content-Type: application/json`` (else 415);
- a request with an ``Origin`` header is refused (403) unless that origin is listed in
  ``gateway.api_allowed_origins`` (browsers send it; ``openai`` clients and curl do not);
- the ``Host`` header must name the bound address, a loopback name when listening on
  loopback, or an entry of ``gateway.api_allowed_hosts`` (else 421). On a wildcard
  address (0.0.0.0, ::) any IP literal passes, since rebinding needs a name.

A client that opens connections and then sends slowly must not hold them for ever
(slowloris): ``body_deadline`` answers 408 to a body that has not arrived within
``gateway.api_read_timeout`` seconds, and the API server closes a connection whose
request headers have not (aiohttp's keep-alive timer, set to the same value).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from aiohttp import web

from hermes.gateway.body_deadline import ErrorResponse, Handler, body_deadline

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "localhost.localdomain"})
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def host_name(header: str) -> str:
    """The host of a ``Host`` header, lower case, without port or IPv6 brackets."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    if header.count(":") > 1:  # a bare IPv6 address, no port
        return header
    return header.partition(":")[0].rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def allowed_hosts(bound: str, loopback: bool, extra: Iterable[str]) -> frozenset[str]:
    """The host names a request may use for a server bound to ``bound``."""
    names = {host_name(bound)} | {host_name(str(name)) for name in extra}
    if loopback:
        names |= _LOOPBACK_NAMES
    return frozenset(names)


def request_guard(
    bound: str,
    loopback: bool,
    hosts: Iterable[str],
    origins: Iterable[str],
    error: ErrorResponse,
) -> Any:
    """An aiohttp middleware applying the three refusals of this module."""
    names = allowed_hosts(bound, loopback, hosts)
    wildcard = host_name(bound) in _WILDCARDS
    allowed_origins = frozenset(str(o).rstrip("/").lower() for o in origins)

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        name = host_name(request.headers.get("Host", ""))
        if name not in names and not (wildcard and _is_ip(name)):
            return error(
                421,
                f"This server does not answer to the host name '{name}'; add it to "
                "gateway.api_allowed_hosts in config.yaml if it is yours.",
                "invalid_request_error",
            )
        origin = request.headers.get("Origin")
        if origin is not None and origin.rstrip("/").lower() not in allowed_origins:
            return error(
                403,
                f"Requests from the web origin '{origin}' are refused; list it in "
                "gateway.api_allowed_origins in config.yaml to allow it.",
                "invalid_request_error",
            )
        if request.method in _BODY_METHODS and request.content_type != "application/json":
            return error(
                415,
                "Send the request body as JSON with 'Content-Type: application/json'.",
                "invalid_request_error",
            )
        return await handler(request)

    return guard


__all__ = ["ErrorResponse", "Handler", "body_deadline", "request_guard"]
