"""The settings commands in a messaging chat and over the HTTP API, on a real gateway
with the fake model: what a chat sets is what its next turns' requests carry."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.gateway.runner import QUEUED_ACK
from tests.gateway.api_calls import ask
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for


@pytest.fixture
def chat_gateway(hermes_home: Path, config_file: Path):
    chats: list[FakeChat] = []

    def make(runner, settings):
        chats.append(FakeChat(runner, settings))
        return chats[0]

    platforms = {"telegram": {"token": "123:not-a-real-token", "allowed_users": [42]}}
    with GatewayThread(
        hermes_home, api=None, platforms=platforms, adapters={"telegram": make}
    ) as gateway:
        gateway.chat = chats[0]
        yield gateway


def _say(gateway: GatewayThread, text: str, *, chat: str = "100") -> str:
    """Send ``text`` to the chat and wait for its answer (not the queued note)."""
    before = len(gateway.chat.texts(chat))

    def answered() -> list[str]:
        return [t for t in gateway.chat.texts(chat)[before:] if t != QUEUED_ACK]

    gateway.call(gateway.runner.handle_message(incoming(text, chat=chat)))
    wait_for(lambda: bool(answered()))
    return answered()[0]


def test_a_messaging_chat_sets_its_own_requests(chat_gateway, fake_llm, config_file) -> None:
    assert "Reasoning effort set to high" in _say(chat_gateway, "/reasoning high")
    assert "Fast mode on" in _say(chat_gateway, "/fast on")
    assert "Personality set to pirate" in _say(chat_gateway, "/personality pirate")
    assert _say(chat_gateway, "hello") == "echo: hello"
    request = fake_llm.requests[-1]
    assert request["reasoning_effort"] == "high" and request["service_tier"] == "priority"
    assert "buccaneer" in request["messages"][0]["content"]
    # Another chat's conversation has its own settings.
    assert _say(chat_gateway, "hi", chat="200") == "echo: hi"
    other = fake_llm.requests[-1]
    assert "reasoning_effort" not in other and "buccaneer" not in other["messages"][0]["content"]


def test_what_a_messaging_chat_cannot_do_is_said(chat_gateway, config_file) -> None:
    before = config_file.read_text()
    refused = _say(chat_gateway, "/fast on --global")
    assert "only the terminal chat (hermes chat) may do" in refused
    assert config_file.read_text() == before  # the operator's config is untouched
    assert "works in the terminal chat only" in _say(chat_gateway, "/verbose")
    assert "speech-to-text" in _say(chat_gateway, "/voice on")
    assert _say(chat_gateway, "/voice status").startswith("Voice mode: off")
    assert _say(chat_gateway, "/codex_runtime").startswith("Runtime: auto")
    assert "Usage: /reasoning" in _say(chat_gateway, "/reasoning sideways")
    assert "Only the terminal chat" in _say(chat_gateway, "/reasoning show")
    _say(chat_gateway, "/help")  # a long answer comes in pieces
    wait_for(lambda: any("/personality [name]" in t for t in chat_gateway.chat.texts()))


def test_the_http_api_keeps_a_conversations_settings(client, gateway, fake_llm) -> None:
    _, session = ask(client, "one")
    answer, _ = ask(client, "/reasoning low", session)
    assert "Reasoning effort set to low" in answer
    ask(client, "two", session)
    assert fake_llm.requests[-1]["reasoning_effort"] == "low"
    # A request's own parameter wins for that request.
    client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "three"}],
        reasoning_effort="high",
        extra_headers={"X-Hermes-Session-Id": session},
    )
    assert fake_llm.requests[-1]["reasoning_effort"] == "high"
