"""A gateway that runs one fake Telegram chat, and what tests read of it: for tests of
several gateways on one store."""

from __future__ import annotations

from pathlib import Path

from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread

KEY = "telegram:100"


def chat_gateway(home: Path) -> GatewayThread:
    chats: list[FakeChat] = []
    platforms = {"telegram": {"token": "123:two-gateways", "allowed_users": [42]}}
    factory = {"telegram": lambda r, s: chats.append(FakeChat(r, s)) or chats[-1]}
    gateway = GatewayThread(home, api=None, platforms=platforms, adapters=factory).start()
    gateway.chat = chats[0]
    return gateway


def say(gateway: GatewayThread, words: str) -> None:
    gateway.call(gateway.runner.handle_message(incoming(words)))


def conversation(gateway: GatewayThread) -> str:
    return gateway.db.get_session(gateway.db.gateway.get_route(KEY))["conversation_id"]


def stored(gateway: GatewayThread, conversation_id: str) -> list[str]:
    return [m["content"] for m in gateway.db.get_conversation_messages(conversation_id)]
