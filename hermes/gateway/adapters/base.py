"""What every platform adapter is: start, stop, send (split to the limit), typing.

An adapter turns the platform's messages into ``IncomingMessage`` and hands them to its
host's ``handle_message`` (``core.AdapterHost``: the runner); the runner calls ``send``
with the answer and wraps each turn in ``typing``. Adapters import their platform library lazily, in ``start``
or in their module, so the gateway runs without the extras it does not use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from hermes.gateway.envelopes import Origin
from hermes.gateway.split import Measure, split_message

if TYPE_CHECKING:
    from hermes.gateway.core import AdapterHost
    from hermes.gateway.settings import PlatformSettings

log = logging.getLogger(__name__)


class Adapter(ABC):
    """A platform the gateway listens on."""

    name: str = ""

    def __init__(self, host: AdapterHost, settings: PlatformSettings | None) -> None:
        self.host = host
        self.settings = settings

    @abstractmethod
    async def start(self) -> str:
        """Connect and start receiving; return how it runs, for the log line.

        Raise ``PlatformStartError`` with a sentence when it cannot start.
        """

    async def stop_receiving(self) -> None:
        """Stop taking new messages; replies of running turns may still be sent."""
        return None

    async def close(self) -> None:
        """Disconnect and free everything."""
        return None


class ChatAdapter(Adapter):
    """A messaging platform: replies are split to its limit, typing shows during a turn."""

    max_length: int = 4000
    measure: Measure = staticmethod(len)
    typing_every: float = 4.0

    async def send(self, origin: Origin, text: str) -> None:
        for piece in self.split(text):
            await self.send_piece(origin, piece)

    def split(self, text: str) -> list[str]:
        return split_message(text, self.max_length, self.measure)

    @abstractmethod
    async def send_piece(self, origin: Origin, text: str) -> None:
        """Send one piece that already fits the platform's limit."""

    async def send_typing(self, origin: Origin) -> None:
        """Show "typing…" in the chat for a few seconds (default: nothing)."""

    async def typing_done(self, origin: Origin) -> None:
        """Undo whatever ``send_typing`` left behind (default: nothing)."""

    @contextlib.asynccontextmanager
    async def typing(self, origin: Origin) -> AsyncIterator[None]:
        task = asyncio.create_task(self._keep_typing(origin))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            try:
                await self.typing_done(origin)
            except Exception as exc:  # cosmetic: never let it hide the answer
                log.debug("%s: clearing the typing indicator failed: %s", self.name, exc)

    async def _keep_typing(self, origin: Origin) -> None:
        while True:
            try:
                await self.send_typing(origin)
            except Exception as exc:  # cosmetic: never let it break the turn
                log.debug("%s: typing indicator failed: %s", self.name, exc)
            await asyncio.sleep(self.typing_every)
