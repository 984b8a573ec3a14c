"""How many connections the webhook port holds open, per sender's address and in all.

Anyone who can reach the port can open connections and send nothing, or a byte a
second, without any secret. Time limits cut each of them off in the end (the server's
keep-alive timer for headers, ``body_deadline`` for the body); the caps here keep them
from piling up meanwhile: a connection beyond ``per_address`` open from one address is
answered 429 at once, one beyond ``total`` 503, each with a JSON reason, and closed
before aiohttp reads a byte of it. So one sender cannot take the port from the others:
a signed event from another address is still served while the cap of the first is
reached.

``Gate`` wraps the protocol aiohttp makes for each connection (``web.Server``), the only
seam of aiohttp's server where a connection is known before its request is parsed.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

DEFAULT_PER_ADDRESS = 16
DEFAULT_TOTAL = 256


@dataclass
class ConnectionLimits:
    """The caps and the connections now open, by address."""

    per_address: int = DEFAULT_PER_ADDRESS
    total: int = DEFAULT_TOTAL
    open: Counter[str] = field(default_factory=Counter)

    def admit(self, address: str) -> bytes | None:
        """Count a new connection from ``address``; else the HTTP answer refusing it."""
        if self.open[address] >= self.per_address:
            return _refusal(
                429,
                "Too Many Requests",
                f"Too many open connections from your address (at most {self.per_address}); "
                "finish or close one first.",
            )
        if sum(self.open.values()) >= self.total:
            return _refusal(
                503,
                "Service Unavailable",
                "The webhook server holds as many connections as it takes; try again shortly.",
            )
        self.open[address] += 1
        return None

    def release(self, address: str) -> None:
        self.open[address] -= 1
        if self.open[address] <= 0:
            del self.open[address]


def _refusal(status: int, reason: str, error: str) -> bytes:
    body = json.dumps({"error": error}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 5\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class Gate(asyncio.Protocol):
    """One connection: refused at once when over a cap, else served by aiohttp's own
    protocol (``make``), to which every transport event is passed on."""

    def __init__(self, limits: ConnectionLimits, make: Callable[[], Any]) -> None:
        self.limits = limits
        self.make = make
        self.inner: Any = None
        self.address = ""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        self.address = str(peer[0]) if peer else ""
        refusal = self.limits.admit(self.address)
        if refusal is not None:
            # A stream transport (uvloop's is not a subclass of asyncio's, hence the cast).
            stream = cast(asyncio.WriteTransport, transport)
            stream.write(refusal)
            stream.close()
            return
        self.inner = self.make()
        self.inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.inner is not None:
            self.limits.release(self.address)
            self.inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.inner is not None else None

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()
