"""Retried requests: one model call and one stored turn however often a client retries.

A request that names itself (``Idempotency-Key`` or ``X-Request-Id``), or one that an
OpenAI SDK marks as its own retry (``X-Stainless-Retry-Count`` above 0) with the same
route, session header and body bytes as a request made before, gets the first one's
answer: at once when it is known, else when the first one's turn ends, whichever
worker, gateway or host on the store answers it. The memory is the store's
(``hermes.state.gateway.api_requests``), keyed by the request's principal and key: the first
try claims the request before its turn starts; a retry waits while it runs (it looks
every ``LOOK_EVERY`` seconds), gets its answer, or, when the gateway running it died,
takes the request over and finishes its turn from what the store holds. Answers are
kept ``WINDOW`` seconds.

Only requests a client may retry are remembered: ones that name themselves, and ones
from a client that counts its retries (an SDK sends ``X-Stainless-Retry-Count: 0`` on
its first try). An unmarked identical body is a new request, not a retry: a chat UI's
"regenerate" sends exactly the body of the request it regenerates, and must get a new
answer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from hermes.gateway.core import ApiHost
from hermes.gateway.envelopes import WorkResult
from hermes.gateway.http import caller
from hermes.state.gateway.api_requests import ANSWERED, MINE, WINDOW, Claim, RequestStore

log = logging.getLogger(__name__)

__all__ = ["WINDOW", "Attempt", "Retries", "is_retry", "request_key"]

KEY_HEADERS = ("Idempotency-Key", "X-Request-Id")
RETRY_COUNT_HEADER = "X-Stainless-Retry-Count"
LOOK_EVERY = 0.2  # seconds between a waiting retry's looks at the store


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


def may_be_retried(headers: Mapping[str, str]) -> bool:
    """A retry of the request could come: it names itself, or its client counts retries."""
    return any(headers.get(name) for name in KEY_HEADERS) or RETRY_COUNT_HEADER in headers


def encode(result: WorkResult) -> dict[str, Any]:
    return dataclasses.asdict(result)


def decode(data: dict[str, Any]) -> WorkResult:
    known = {f.name for f in dataclasses.fields(WorkResult)}
    return WorkResult(**{k: v for k, v in data.items() if k in known})


class _ClientGone(web.HTTPClientError):
    """The client went away while its retry waited (nobody reads this answer)."""

    status_code = 499


class Retries:
    """The retry memory of one gateway's API server, in its store."""

    def __init__(self, host: ApiHost) -> None:
        db = host.db
        self.store = RequestStore(db.backend, read_only=db.read_only)
        self.host = host
        self._settling: set[asyncio.Task[None]] = set()

    @property
    def takeover_after(self) -> float:
        return self.host.takeover_after

    async def attempt(self, request: web.Request) -> Attempt | None:
        """This try's place: an answer to give again (``Attempt.answer``) or the turn to
        run; None for a request no client retries. Waits while another try runs it."""
        headers = request.headers
        if not may_be_retried(headers) or self.store.read_only:
            return None
        principal = request.get(caller.REQUEST_ITEM) or ""
        key = request_key(request.path, headers, await request.read())
        retry = is_retry(headers)
        while True:
            claim = await asyncio.to_thread(
                self.store.claim,
                principal,
                key,
                self.host.holder,
                retry=retry,
                takeover_after=self.takeover_after,
            )
            if claim.status == MINE and claim.taken_over:
                log.info("a retry takes over a request whose gateway is gone")
            if claim.status != MINE and claim.status != ANSWERED:
                claim = await self._wait(request, principal, key) or claim
            if claim.status in (MINE, ANSWERED):
                return Attempt(self, principal, key, claim)

    async def _wait(self, request: web.Request, principal: str, key: str) -> Claim | None:
        """Wait while another try runs the request: its answer, or None when it is to be
        claimed again (it ran no turn, or its gateway is gone)."""
        while True:
            await asyncio.sleep(LOOK_EVERY)
            if request.transport is None or request.transport.is_closing():
                raise _ClientGone()
            seen = await asyncio.to_thread(self.store.look, principal, key, self.takeover_after)
            if seen is None or seen.status == ANSWERED:
                return seen

    def settle(self, attempt: Attempt, answer: dict[str, Any] | None) -> None:
        """Keep the answer for the retries (None: forget the try); from the loop."""

        async def write() -> None:
            try:
                if answer is None:
                    await asyncio.to_thread(
                        self.store.forget, attempt.principal, attempt.key, attempt.claim.token
                    )
                else:
                    await asyncio.to_thread(
                        self.store.settle,
                        attempt.principal,
                        attempt.key,
                        attempt.claim.token,
                        answer,
                    )
            except Exception:  # a retry then runs the turn's question again, once
                log.exception("could not keep the answer of a request for its retries")

        task = asyncio.ensure_future(write())
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)


class Attempt:
    """One try of a request a client may retry: it replays an answer, or runs the turn
    whose answer its retries get (``follow``); one that ends without a turn is
    forgotten (``close``), so its retry runs anew."""

    def __init__(self, retries: Retries, principal: str, key: str, claim: Claim) -> None:
        self.retries, self.principal, self.key, self.claim = retries, principal, key, claim
        self.linked = False

    @property
    def answer(self) -> dict[str, Any] | None:
        """The earlier try's answer, to give again (None: this try runs the turn)."""
        return self.claim.answer if self.claim.status == ANSWERED else None

    @property
    def answer_uid(self) -> str:
        return self.claim.answer_uid

    def options(self) -> dict[str, Any]:
        """The turn's options that store its question and answer under the claimed
        uids (and, taken over, finish the earlier try's turn: ``turns``)."""
        chosen = {"user_uid": self.claim.user_uid, "answer_uid": self.claim.answer_uid}
        return {**chosen, "retried": True} if self.claim.taken_over else chosen

    async def earlier_conversation(self) -> str | None:
        """Taken over: the conversation the earlier try stored its question in."""
        if not self.claim.taken_over:
            return None
        db = self.retries.host.db
        asked = await asyncio.to_thread(db.find_message, self.claim.user_uid)
        if asked is None:
            return None
        segment = await asyncio.to_thread(db.get_session, asked["session_id"])
        return segment["conversation_id"] if segment else None

    def follow(
        self, turn: asyncio.Future[WorkResult], answer: Callable[[WorkResult], dict[str, Any]]
    ) -> None:
        """Keep ``answer(result)`` for the retries once ``turn`` has its result."""
        self.linked = True

        def settle(done: asyncio.Future[WorkResult]) -> None:
            if done.cancelled() or done.exception() is not None:
                self.retries.settle(self, None)
            else:
                self.retries.settle(self, answer(done.result()))

        turn.add_done_callback(settle)

    def close(self) -> None:
        if not self.linked and self.answer is None:
            self.retries.settle(self, None)
