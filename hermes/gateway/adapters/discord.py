"""Discord, through discord.py (the ``discord`` extra), over the gateway websocket.

Settings (``gateway.platforms.discord``): ``token`` (or ``DISCORD_BOT_TOKEN``),
``allowed_users`` (numeric user ids) and ``channels`` (channel ids where the bot
answers every message; elsewhere in servers it answers when mentioned; in DMs always).
The bot needs the Message Content intent, enabled in the developer portal. Each DM,
channel and thread is a conversation. Replies go out in pieces of 2000 characters;
"typing…" shows while a turn runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Collection
from typing import Any

import discord

from hermes.gateway.adapters.base import ChatAdapter
from hermes.gateway.core import AdapterHost
from hermes.gateway.envelopes import IncomingMessage, Origin
from hermes.gateway.errors import NotConnected, PlatformStartError
from hermes.gateway.settings import PlatformSettings
from hermes.redaction import redact

log = logging.getLogger(__name__)

READY_TIMEOUT = 60.0


class DiscordAdapter(ChatAdapter):
    name = "discord"
    max_length = 2000
    typing_every = 8.0  # Discord shows typing for about ten seconds

    def __init__(self, host: AdapterHost, settings: PlatformSettings | None) -> None:
        super().__init__(host, settings)
        self.client: discord.Client | None = None
        self.channels = (
            frozenset(str(c) for c in (settings.get("channels") or [])) if settings else frozenset()
        )
        self._connection: asyncio.Task[None] | None = None
        self.receiving = True

    async def start(self) -> str:
        token = self.settings.secret("token") if self.settings else None
        if not token:
            raise PlatformStartError(
                self.name,
                "no bot token: set gateway.platforms.discord.token in config.yaml or DISCORD_BOT_TOKEN.",
            )
        intents = discord.Intents.default()
        intents.message_content = True
        client = discord.Client(intents=intents)
        client.event(self._make_listener())
        self.client = client
        try:
            await client.login(token)
        except discord.LoginFailure:
            raise PlatformStartError(
                self.name,
                "Discord rejected the bot token; check gateway.platforms.discord.token or DISCORD_BOT_TOKEN.",
            ) from None
        except (discord.HTTPException, OSError) as exc:
            raise PlatformStartError(
                self.name, f"cannot reach Discord: {redact(str(exc))}"
            ) from None
        connection = self._connection = asyncio.create_task(client.connect(reconnect=True))
        await self._wait_ready(client, connection)
        return f"connected as {client.user}"

    async def _wait_ready(self, client: discord.Client, connection: asyncio.Task[None]) -> None:
        ready = asyncio.create_task(client.wait_until_ready())
        done, _ = await asyncio.wait(
            {ready, connection}, timeout=READY_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
        )
        if ready in done:
            return
        ready.cancel()
        if connection in done and connection.exception() is not None:
            error = connection.exception()
            if isinstance(error, discord.PrivilegedIntentsRequired):
                reason = (
                    "enable the Message Content intent for the bot in the Discord developer portal."
                )
            else:
                reason = f"the connection failed: {redact(str(error))}"
            raise PlatformStartError(self.name, reason)
        raise PlatformStartError(self.name, f"not connected after {READY_TIMEOUT:.0f} s.")

    async def stop_receiving(self) -> None:
        self.receiving = False

    async def close(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.close()
        if self._connection is not None:
            self._connection.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._connection

    # -- in -------------------------------------------------------------------------------

    def _make_listener(self) -> Any:
        async def on_message(message: discord.Message) -> None:
            await self.on_message(message)

        return on_message

    async def on_message(self, message: discord.Message) -> None:
        if not self.receiving or self.client is None:
            return
        event = incoming_message(message, self.client.user, self.channels)
        if event is not None:
            await self.host.handle_message(event)

    # -- out ------------------------------------------------------------------------------

    async def send_piece(self, origin: Origin, text: str) -> None:
        channel = await self._channel(origin)
        await channel.send(text, allowed_mentions=discord.AllowedMentions.none())

    async def send_typing(self, origin: Origin) -> None:
        channel = await self._channel(origin)
        await channel.typing()

    async def _channel(self, origin: Origin) -> Any:
        client = self.client
        if client is None:
            raise NotConnected(self.name)
        channel_id = int(origin.thread_id or origin.chat_id)
        channel = client.get_channel(channel_id)
        if channel is None:
            channel = await client.fetch_channel(channel_id)
        return channel


def incoming_message(
    message: discord.Message, me: discord.abc.User | None, channels: Collection[str] = ()
) -> IncomingMessage | None:
    """The gateway's view of a Discord message (None for what the bot does not answer)."""
    if message.author.bot or (me is not None and message.author.id == me.id):
        return None
    channel = message.channel
    in_dm = message.guild is None
    thread = channel if isinstance(channel, discord.Thread) else None
    home = str(thread.parent_id) if thread is not None else str(channel.id)
    mentioned = me is not None and any(user.id == me.id for user in message.mentions)
    if (
        not in_dm
        and not mentioned
        and home not in channels
        and (thread is None or str(thread.id) not in channels)
    ):
        return None
    origin = Origin(
        platform="discord",
        chat_id=home,
        thread_id=str(thread.id) if thread is not None else None,
        user_id=str(message.author.id),
        is_group=not in_dm,
        message_id=str(message.id),
    )
    text = message.content
    if me is not None:
        text = re.sub(rf"<@!?{me.id}>\s*", "", text)
    files = [
        f"[attachment: {a.filename} ({a.content_type or 'unknown type'}, {a.size} bytes) {a.url}]"
        for a in message.attachments
    ]
    return IncomingMessage(
        origin=origin, text=text.strip(), user_name=str(message.author), attachments=tuple(files)
    )
