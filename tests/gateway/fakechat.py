"""A chat adapter that records what the gateway sends, for tests of the chat path."""

from __future__ import annotations

import threading

from hermes.gateway.adapters.base import ChatAdapter
from hermes.gateway.core import AdapterHost
from hermes.gateway.envelopes import IncomingMessage, Origin
from hermes.gateway.settings import PlatformSettings


class FakeChat(ChatAdapter):
    """Stands in for a platform: messages go in with ``incoming``, replies land in ``sent``."""

    max_length = 500
    typing_every = 0.05

    def __init__(
        self, host: AdapterHost, settings: PlatformSettings | None, *, name: str = "telegram"
    ) -> None:
        super().__init__(host, settings)
        self.name = name
        self.sent: list[tuple[Origin, str]] = []
        self.typing_count = 0
        self._lock = threading.Lock()

    async def start(self) -> str:
        return "fake chat started"

    async def send_piece(self, origin: Origin, text: str) -> None:
        with self._lock:
            self.sent.append((origin, text))

    async def send_typing(self, origin: Origin) -> None:
        self.typing_count += 1

    def texts(self, chat_id: str | None = None) -> list[str]:
        with self._lock:
            return [t for o, t in self.sent if chat_id is None or o.chat_id == chat_id]


def incoming(
    text: str,
    *,
    user: str = "42",
    chat: str = "100",
    thread: str | None = None,
    group: bool = False,
    platform: str = "telegram",
) -> IncomingMessage:
    origin = Origin(platform=platform, chat_id=chat, thread_id=thread, user_id=user, is_group=group)
    return IncomingMessage(origin=origin, text=text)
