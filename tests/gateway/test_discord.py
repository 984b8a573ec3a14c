"""Discord through discord.py's own objects: message -> event, replies split to 2000.

No Discord connection is possible here, so the library's HTTP layer is replaced by a
recorder: everything above it (channels, ``send``, ``typing``) is discord.py's code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import discord  # the extra is part of the dev install
import pytest

from hermes.gateway.adapters.discord import DiscordAdapter, incoming_message  # noqa: E402
from hermes.gateway.envelopes import Origin  # noqa: E402
from hermes.gateway.errors import NotConnected  # noqa: E402
from tests.fakes.llm_server import text  # noqa: E402
from tests.gateway.harness import GatewayThread, wait_for  # noqa: E402

ME = {"id": "999", "username": "hermes", "discriminator": "0", "avatar": None, "bot": True}
ADA = {"id": "42", "username": "ada", "discriminator": "0", "avatar": None}
STAMP = "2024-01-01T00:00:00+00:00"


class Discord:
    """A discord.py client that never connects, with its HTTP calls recorded."""

    def __init__(self) -> None:
        self.client = discord.Client(intents=discord.Intents.default())
        self.state = self.client._connection
        self.state.user = discord.ClientUser(state=self.state, data=ME)
        self.calls: list[tuple[str, str, Any]] = []
        self.client.http.request = self._request
        self.dm = discord.DMChannel(
            me=self.state.user, state=self.state, data={"id": "555", "type": 1, "recipients": [ADA]}
        )
        self.guild = discord.Guild(data={"id": "1", "name": "guild"}, state=self.state)
        self.channel = discord.TextChannel(
            state=self.state,
            guild=self.guild,
            data={"id": "777", "type": 0, "name": "general", "position": 0, "guild_id": "1"},
        )
        self.thread = discord.Thread(
            guild=self.guild,
            state=self.state,
            data={
                "id": "778", "type": 11, "name": "topic", "parent_id": "777", "guild_id": "1", "owner_id": "42",
                "message_count": 0, "member_count": 1, "rate_limit_per_user": 0,
                "thread_metadata": {"archived": False, "auto_archive_duration": 60, "archive_timestamp": STAMP, "locked": False},
            },
        )  # fmt: skip

    def message(
        self,
        channel: Any,
        content: str,
        *,
        author: dict = ADA,
        mentions: tuple = (),
        attachments: tuple = (),
    ) -> Any:
        data = {
            "id": "9001", "type": 0, "content": content, "author": author, "attachments": list(attachments),
            "embeds": [], "mentions": list(mentions), "mention_roles": [], "pinned": False,
            "mention_everyone": False, "tts": False, "timestamp": STAMP, "edited_timestamp": None,
            "channel_id": str(channel.id),
        }  # fmt: skip
        if getattr(channel, "guild", None) is not None:
            data["guild_id"] = "1"
        return discord.Message(state=self.state, channel=channel, data=data)

    def sent(self) -> list[str]:
        return [
            payload["content"] for method, path, payload in self.calls if path.endswith("/messages")
        ]

    async def _request(self, route: Any, **kwargs: Any) -> Any:
        self.calls.append((route.method, route.url, kwargs.get("json")))
        if route.method == "GET" and route.path == "/channels/{channel_id}":
            return {"id": str(route.channel_id), "type": 1, "recipients": [ADA]}
        if route.path.endswith("/messages"):
            body = kwargs["json"]
            return {
                "id": "1", "type": 0, "content": body["content"], "author": ME, "attachments": [], "embeds": [],
                "mentions": [], "mention_roles": [], "pinned": False, "mention_everyone": False, "tts": False,
                "timestamp": STAMP, "edited_timestamp": None, "channel_id": str(route.channel_id),
            }  # fmt: skip
        return None


@pytest.fixture
def fake_discord() -> Discord:
    return Discord()


def test_direct_messages_become_events(fake_discord: Discord) -> None:
    event = incoming_message(
        fake_discord.message(fake_discord.dm, "hello"), fake_discord.state.user
    )
    assert event.origin == Origin("discord", "555", user_id="42", is_group=False, message_id="9001")
    assert event.text == "hello"


def test_in_servers_the_bot_answers_mentions_and_listed_channels(fake_discord: Discord) -> None:
    me = fake_discord.state.user
    assert incoming_message(fake_discord.message(fake_discord.channel, "chatter"), me) is None
    mention = incoming_message(
        fake_discord.message(fake_discord.channel, "<@999> help me", mentions=(ME,)), me
    )
    assert (mention.text, mention.origin.chat_id, mention.origin.is_group) == (
        "help me",
        "777",
        True,
    )
    listed = incoming_message(
        fake_discord.message(fake_discord.thread, "in a thread"), me, channels={"777"}
    )
    assert (listed.origin.chat_id, listed.origin.thread_id) == ("777", "778")


def test_bots_are_ignored_and_attachments_become_references(fake_discord: Discord) -> None:
    me = fake_discord.state.user
    assert incoming_message(fake_discord.message(fake_discord.dm, "beep", author=ME), me) is None
    file = {"id": "5", "filename": "plan.pdf", "size": 1234, "url": "https://cdn.example/plan.pdf",
            "proxy_url": "https://cdn.example/p", "content_type": "application/pdf"}  # fmt: skip
    event = incoming_message(
        fake_discord.message(fake_discord.dm, "see this", attachments=(file,)), me
    )
    assert (
        event.full_text()
        == "see this\n[attachment: plan.pdf (application/pdf, 1234 bytes) https://cdn.example/plan.pdf]"
    )


def test_replies_are_split_to_2000_characters(fake_discord: Discord) -> None:
    import asyncio

    adapter = DiscordAdapter(host=None, settings=None)
    adapter.client = fake_discord.client
    long = "\n".join(f"line {n}: " + "x" * 60 for n in range(100))
    asyncio.run(adapter.send(Origin("discord", "555", user_id="42"), long))
    pieces = fake_discord.sent()
    assert len(pieces) == 4 and all(len(p) <= 2000 for p in pieces)
    assert "\n".join(pieces) == long


@pytest.mark.usefixtures("config_file")
def test_a_conversation_through_the_adapter(
    hermes_home: Path, fake_llm, fake_discord: Discord
) -> None:
    class OfflineDiscord(DiscordAdapter):
        async def start(self) -> str:
            self.client = fake_discord.client
            return "offline"

    fake_llm.enqueue(text("hi Ada", delay=0.2))
    platforms = {"discord": {"token": "discord-token-offline", "allowed_users": ["42"]}}
    with GatewayThread(
        hermes_home, api=None, platforms=platforms, adapters={"discord": OfflineDiscord}
    ) as gateway:
        adapter = gateway.runner.adapters["discord"]
        gateway.call(adapter.on_message(fake_discord.message(fake_discord.dm, "hello")))
        wait_for(lambda: fake_discord.sent())
        assert fake_discord.sent() == ["hi Ada"]
        assert any(url.endswith("/channels/555/typing") for _, url, _ in fake_discord.calls)
        assert gateway.db.gateway.get_route("discord:555") is not None


def test_a_reply_after_the_adapter_closed_says_it_is_not_connected(
    fake_discord: Discord,
) -> None:
    import asyncio

    adapter = DiscordAdapter(host=None, settings=None)
    adapter.client = fake_discord.client

    async def close_then_send() -> None:
        await adapter.close()
        await adapter.send(Origin("discord", "555", user_id="42"), "too late")

    with pytest.raises(NotConnected, match="discord is not connected"):
        asyncio.run(close_then_send())
    assert fake_discord.sent() == []
