"""Telegram, through python-telegram-bot (the ``telegram`` extra), by long polling.

Settings (``gateway.platforms.telegram``): ``token`` (or ``TELEGRAM_BOT_TOKEN``),
``allowed_users`` (numeric user ids), and ``base_url`` for a self-hosted Bot API
server (default ``https://api.telegram.org/bot``; the token is appended). Each chat is
a conversation, each forum topic too. Replies are plain text in pieces of at most
4096 UTF-16 units; "typing…" shows while a turn runs.
"""

from __future__ import annotations

import logging
from typing import Any

from telegram import Update
from telegram.constants import ChatAction
from telegram.error import InvalidToken, NetworkError, TelegramError
from telegram.ext import Application, ContextTypes, MessageHandler, filters

from hermes.gateway.adapters.base import ChatAdapter
from hermes.gateway.core import AdapterHost
from hermes.gateway.envelopes import IncomingMessage, Origin
from hermes.gateway.errors import NotConnected, PlatformStartError
from hermes.gateway.settings import PlatformSettings
from hermes.gateway.split import utf16_length
from hermes.redaction import redact

log = logging.getLogger(__name__)

GROUP_TYPES = ("group", "supergroup")


class TelegramAdapter(ChatAdapter):
    name = "telegram"
    max_length = 4096
    measure = staticmethod(utf16_length)
    typing_every = 4.0  # Telegram shows a chat action for about five seconds

    def __init__(self, host: AdapterHost, settings: PlatformSettings | None) -> None:
        super().__init__(host, settings)
        self.app: Application[Any, Any, Any, Any, Any, Any] | None = None

    async def start(self) -> str:
        settings = self.settings
        token = settings.secret("token") if settings else None
        if settings is None or not token:
            raise PlatformStartError(
                self.name,
                "no bot token: set gateway.platforms.telegram.token in config.yaml or TELEGRAM_BOT_TOKEN.",
            )
        builder = Application.builder().token(token)
        base_url = settings.get("base_url")
        if base_url:
            builder = builder.base_url(str(base_url)).base_file_url(
                str(settings.get("base_file_url") or base_url)
            )
        app = self.app = builder.build()
        app.add_handler(MessageHandler(filters.UpdateType.MESSAGE, self._on_update))
        try:
            await app.initialize()
        except InvalidToken:
            raise PlatformStartError(
                self.name,
                "Telegram rejected the bot token; check gateway.platforms.telegram.token or TELEGRAM_BOT_TOKEN.",
            ) from None
        except (NetworkError, TelegramError) as exc:
            raise PlatformStartError(
                self.name, f"cannot reach the Telegram Bot API: {redact(str(exc))}"
            ) from None
        await app.start()
        assert app.updater is not None  # the builder makes one unless told not to
        await app.updater.start_polling(
            poll_interval=float(settings.get("poll_interval", 0.0)),
            timeout=int(settings.get("poll_timeout", 10)),
            allowed_updates=["message"],
        )
        return f"polling as @{app.bot.username}"

    async def stop_receiving(self) -> None:
        if self.app is not None and self.app.updater is not None and self.app.updater.running:
            await self.app.updater.stop()

    async def close(self) -> None:
        app, self.app = self.app, None
        if app is None:
            return
        if app.running:
            await app.stop()
        await app.shutdown()

    # -- in -------------------------------------------------------------------------------

    async def _on_update(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = incoming_message(update)
        if message is not None:
            await self.host.handle_message(message)

    # -- out ------------------------------------------------------------------------------

    async def send_piece(self, origin: Origin, text: str) -> None:
        await self._app().bot.send_message(
            chat_id=int(origin.chat_id), text=text, message_thread_id=_thread(origin)
        )

    async def send_typing(self, origin: Origin) -> None:
        await self._app().bot.send_chat_action(
            chat_id=int(origin.chat_id), action=ChatAction.TYPING, message_thread_id=_thread(origin)
        )

    def _app(self) -> Application[Any, Any, Any, Any, Any, Any]:
        if self.app is None:
            raise NotConnected(self.name)
        return self.app


def incoming_message(update: Update) -> IncomingMessage | None:
    """The gateway's view of a Telegram update (None for what it does not answer)."""
    message = update.message
    if message is None or message.from_user is None or message.from_user.is_bot:
        return None
    chat = message.chat
    thread = message.message_thread_id if message.is_topic_message else None
    origin = Origin(
        platform="telegram",
        chat_id=str(chat.id),
        thread_id=str(thread) if thread else None,
        user_id=str(message.from_user.id),
        is_group=chat.type in GROUP_TYPES,
        message_id=str(message.message_id),
    )
    text = message.text or message.caption or ""
    return IncomingMessage(
        origin=origin,
        text=text,
        user_name=message.from_user.username or message.from_user.full_name,
        attachments=tuple(_attachments(message)),
    )


def _attachments(message: Any) -> list[str]:
    found = []
    if message.photo:
        biggest = message.photo[-1]
        found.append(
            f"[attachment: photo {biggest.width}x{biggest.height}, file_id={biggest.file_id}]"
        )
    for kind in ("document", "audio", "voice", "video", "video_note"):
        item = getattr(message, kind, None)
        if item is not None:
            name = getattr(item, "file_name", None) or kind
            mime = getattr(item, "mime_type", None) or "unknown type"
            found.append(
                f"[attachment: {kind} {name} ({mime}, {item.file_size or 0} bytes), file_id={item.file_id}]"
            )
    if message.sticker is not None:
        found.append(f"[sticker {message.sticker.emoji or ''}]")
    if message.location is not None:
        found.append(f"[location: {message.location.latitude}, {message.location.longitude}]")
    return found


def _thread(origin: Origin) -> int | None:
    return int(origin.thread_id) if origin.thread_id else None
