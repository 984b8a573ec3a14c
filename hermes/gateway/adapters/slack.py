"""Slack, through slack-bolt in Socket Mode (the ``slack`` extra): no public URL needed.

Settings (``gateway.platforms.slack``): ``bot_token`` (``xoxb-``, or ``SLACK_BOT_TOKEN``),
``app_token`` (``xapp-``, or ``SLACK_APP_TOKEN``), ``allowed_users`` (member ids like
``U012AB3CD``) and ``base_url`` for the Web API (tests). The bot answers direct
messages, and mentions in channels, in a thread under the mention; each DM and each
thread is a conversation. While a turn runs an hourglass reaction sits on the message
(Slack has no typing indicator for bots). Replies go out in pieces of 4000 characters.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from hermes.gateway.adapters.base import ChatAdapter
from hermes.gateway.core import AdapterHost
from hermes.gateway.envelopes import IncomingMessage, Origin
from hermes.gateway.errors import NotConnected, PlatformStartError
from hermes.gateway.settings import PlatformSettings
from hermes.redaction import redact

log = logging.getLogger(__name__)

BUSY_REACTION = "hourglass_flowing_sand"
# Message subtypes that are not someone talking to the bot.
_IGNORED_SUBTYPES = frozenset(
    {
        "bot_message",
        "message_changed",
        "message_deleted",
        "channel_join",
        "channel_leave",
        "thread_broadcast",
    }
)
_MENTION = re.compile(r"<@[A-Z0-9]+>\s*")


class SlackAdapter(ChatAdapter):
    name = "slack"
    max_length = 4000
    typing_every = 3600.0  # one reaction per turn, removed when it ends

    def __init__(self, host: AdapterHost, settings: PlatformSettings | None) -> None:
        super().__init__(host, settings)
        self.client: AsyncWebClient | None = None
        self.handler: AsyncSocketModeHandler | None = None
        self.bot_user_id: str | None = None

    async def start(self) -> str:
        settings = self.settings
        bot_token = settings.secret("bot_token") if settings else None
        app_token = settings.secret("app_token") if settings else None
        if settings is None or not bot_token or not app_token:
            raise PlatformStartError(
                self.name,
                "Socket Mode needs a bot token (xoxb-) and an app token (xapp-): set bot_token and "
                "app_token under gateway.platforms.slack, or SLACK_BOT_TOKEN and SLACK_APP_TOKEN.",
            )
        base_url = settings.get("base_url") or AsyncWebClient.BASE_URL
        client = AsyncWebClient(token=bot_token, base_url=str(base_url))
        identity = await self._call(client.auth_test(), "the bot token")
        self.bot_user_id = identity.get("user_id")
        app = AsyncApp(
            client=client, token=bot_token, logger=logging.getLogger("slack_bolt.hermes")
        )
        app.event("message")(self._on_message)
        app.event("app_mention")(self._on_mention)
        handler = AsyncSocketModeHandler(app, app_token)
        await self._call(handler.connect_async(), "the app token")
        self.client, self.handler = client, handler
        return f"connected in Socket Mode as {identity.get('user') or self.bot_user_id}"

    async def _call(self, awaitable: Any, what: str) -> Any:
        try:
            return await awaitable
        except SlackApiError as exc:
            error = exc.response.get("error", "error") if exc.response is not None else "error"
            raise PlatformStartError(self.name, f"Slack rejected {what} ({error}).") from None
        except (SlackClientError, OSError) as exc:
            raise PlatformStartError(self.name, f"cannot reach Slack: {redact(str(exc))}") from None

    async def stop_receiving(self) -> None:
        if self.handler is not None:
            await self.handler.disconnect_async()

    async def close(self) -> None:
        handler, self.handler = self.handler, None
        if handler is not None:
            await handler.close_async()

    # -- in -------------------------------------------------------------------------------

    async def _on_message(self, event: dict[str, Any]) -> None:
        if event.get("channel_type") != "im":
            return  # in channels the bot answers mentions (app_mention), not every message
        message = incoming_message(event, self.bot_user_id)
        if message is not None:
            await self.host.handle_message(message)

    async def _on_mention(self, event: dict[str, Any]) -> None:
        message = incoming_message(event, self.bot_user_id, in_thread=True)
        if message is not None:
            await self.host.handle_message(message)

    # -- out ------------------------------------------------------------------------------

    async def send_piece(self, origin: Origin, text: str) -> None:
        await self._client().chat_postMessage(
            channel=origin.chat_id, text=text, thread_ts=origin.thread_id
        )

    async def send_typing(self, origin: Origin) -> None:
        if origin.message_id:
            await self._client().reactions_add(
                channel=origin.chat_id, timestamp=origin.message_id, name=BUSY_REACTION
            )

    async def typing_done(self, origin: Origin) -> None:
        if origin.message_id:
            await self._client().reactions_remove(
                channel=origin.chat_id, timestamp=origin.message_id, name=BUSY_REACTION
            )

    def _client(self) -> AsyncWebClient:
        if self.client is None:
            raise NotConnected(self.name)
        return self.client


def incoming_message(
    event: dict[str, Any], bot_user_id: str | None, *, in_thread: bool = False
) -> IncomingMessage | None:
    """The gateway's view of a Slack message event (None for what it does not answer)."""
    if event.get("bot_id") or event.get("subtype") in _IGNORED_SUBTYPES:
        return None
    user = event.get("user")
    if not user or user == bot_user_id:
        return None
    thread = event.get("thread_ts") or (event.get("ts") if in_thread else None)
    origin = Origin(
        platform="slack",
        chat_id=str(event["channel"]),
        thread_id=str(thread) if thread else None,
        user_id=str(user),
        is_group=event.get("channel_type") != "im",
        message_id=event.get("ts"),
    )
    text = _MENTION.sub("", event.get("text") or "").strip()
    files = [
        f"[attachment: {f.get('name') or 'file'} ({f.get('mimetype') or 'unknown type'}, "
        f"{f.get('size') or 0} bytes) {f.get('url_private') or ''}]".replace(" ]", "]")
        for f in event.get("files") or []
    ]
    return IncomingMessage(origin=origin, text=text, attachments=tuple(files))
