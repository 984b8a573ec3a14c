"""Retried requests: one model call and one stored turn however often a client retries.

A request that names itself (``Idempotency-Key`` or ``X-Request-Id``), or one that an
OpenAI SDK marks as its own retry (``X-Stainless-Retry-Count`` above 0) with the same
route, session header and body bytes as a request made before, gets the first one's
answer: at once when it is known, else when the first one's turn ends. The memory is
this gateway's, for ``WINDOW`` seconds.

An unmarked identical body is a new request, not a retry: a chat UI's "regenerate" sends
exactly the body of the request it regenerates, and must get a new answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from hermes.gateway.http import caller

WINDOW = 600.0  # seconds a finished request's answer is kept for its retries
LIMIT = 2_000  # requests remembered at most (the oldest are forgotten first)
KEY_HEADERS = ("Idempotency-Key", "X-Request-Id")
RETRY_COUNT_HEADER = "X-Stainless-Retry-Count"


def request_key(path: str, headers: Mapping[str, str], body: bytes) -> str:
    """What names a request for its retries: its own key when it gives one, else its
    route, session header and body bytes; each within its principal's (another
    principal's key names another request)."""
    scope = f"{caller.principal() or ''}\0{path}\0{headers.get('X-Hermes-Session-Id', '')}\0"
    for name in KEY_HEADERS:
        given = headers.get(name)
        if given:
            return hashlib.sha256(f"{scope}{name}\0{given}".encode()).hexdigest()
    return hashlib.sha256(scope.encode() + body).hexdigest()


def is_retry(headers: Mapping[str, str]) -> bool:
    """The request may repeat an earlier one: it names itself, or its SDK says so."""
    if any(headers.get(name) for name in KEY_HEADERS):
        return True
    count = headers.get(RETRY_COUNT_HEADER, "0")
    return count.isdigit() and int(count) > 0


class RetryMemory:
    """The answers of recent requests by key (event loop only)."""

    def __init__(self, window: float = WINDOW, limit: int = LIMIT) -> None:
        self.window = window
        self.limit = limit
        self._answers: OrderedDict[str, tuple[float, asyncio.Future[Any]]] = OrderedDict()

    def earlier(self, key: str | None) -> asyncio.Future[Any] | None:
        """The answer (maybe still to come) of an earlier request with ``key``."""
        if key is None:
            return None
        found = self._answers.get(key)
        if found is None:
            return None
        finished_at, future = found
        if future.done() and time.monotonic() - finished_at > self.window:
            del self._answers[key]
            return None
        return future

    def expect(self, key: str | None) -> asyncio.Future[Any] | None:
        """A future for this request's answer, which its retries will wait on."""
        if key is None:
            return None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._answers[key] = (time.monotonic(), future)
        self._answers.move_to_end(key)
        while len(self._answers) > self.limit:
            self._answers.popitem(last=False)
        return future

    def settle(self, key: str | None, future: asyncio.Future[Any] | None, answer: Any) -> None:
        """The request's answer, for its retries (kept ``window`` seconds from now)."""
        if key is None or future is None or future.done():
            return
        future.set_result(answer)
        if key in self._answers:
            self._answers[key] = (time.monotonic(), future)

    def forget(self, key: str | None, future: asyncio.Future[Any] | None) -> None:
        """The request got no answer worth repeating (it failed before its turn ran):
        a retry runs anew; one waiting already is told to."""
        if key is None or future is None:
            return
        if self._answers.get(key, (0, None))[1] is future:
            del self._answers[key]
        if not future.done():
            future.set_result(None)


class Pending:
    """A request's place in the memory: its retries wait for its turn's answer; one
    that ends without a turn is forgotten, so its retry runs anew."""

    def __init__(self, memory: RetryMemory, key: str) -> None:
        self.memory, self.key = memory, key
        self.future = memory.expect(key)
        self.linked = False

    def follow(self, turn: asyncio.Future[Any], answer: Callable[[Any], Any]) -> None:
        """Answer retries with ``answer(result)`` once ``turn`` has its result."""
        self.linked = True

        def settle(done: asyncio.Future[Any]) -> None:
            if done.cancelled() or done.exception() is not None:
                self.memory.forget(self.key, self.future)
            else:
                self.memory.settle(self.key, self.future, answer(done.result()))

        turn.add_done_callback(settle)

    def close(self) -> None:
        if not self.linked:
            self.memory.forget(self.key, self.future)
