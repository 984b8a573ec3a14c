"""Whether the gateway's store answers: the gateway's health is the store's health.

A gateway on PostgreSQL outlives the server it writes to. While the server is down a
request would wait out the store's patience (a minute) and then fail, while ``/health``
said all was well. ``StoreHealth`` asks the store every few seconds on a connection of
its own (``Backend.ping``, a few seconds at most); while it gets no answer, ``/health``,
``/health/detailed`` and ``hermes gateway status`` say the store is unreachable and the
HTTP API refuses requests at once (a 503 with ``Retry-After``). A request that meets
the outage before the watcher does marks it too.
"""

from __future__ import annotations

import asyncio
import logging
import time

from hermes.state import SessionDB
from hermes.state.errors import StoreUnavailableError

log = logging.getLogger(__name__)

EVERY = 5.0  # seconds between questions while the store answers
WHILE_DOWN = 2.0  # seconds between questions while it does not
PING_TIMEOUT = 3.0
RETRY_AFTER = 5  # seconds a refused caller is told to wait


class StoreHealth:
    def __init__(self, db: SessionDB) -> None:
        self.db = db
        self.problem: str | None = None  # the store's sentence while it does not answer
        self.since: float | None = None

    @property
    def reachable(self) -> bool:
        return self.problem is None

    def check(self) -> None:
        """Ask the store once (blocking: run it in a thread)."""
        try:
            self.db.backend.ping(PING_TIMEOUT)
        except StoreUnavailableError as exc:
            self.went_down(exc)
            return
        if self.problem is not None:
            log.warning("the store answers again: serving requests")
            self.problem, self.since = None, None

    def went_down(self, exc: StoreUnavailableError) -> None:
        if self.problem is None:
            log.error("the store is unreachable; refusing requests until it answers: %s", exc)
            self.problem, self.since = str(exc), time.time()

    async def watch(self) -> None:
        """Ask the store now and then until cancelled."""
        while True:
            await asyncio.to_thread(self.check)
            await asyncio.sleep(EVERY if self.problem is None else WHILE_DOWN)

    def status(self) -> dict[str, object]:
        if self.problem is None:
            return {"state": "ok"}
        return {"state": "unreachable", "error": self.problem, "since": self.since}
