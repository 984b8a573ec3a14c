"""End to end (issue 16.7): one allowed user cannot read another's conversations.

User 42 tells the bot a secret in a private chat; user 7, allowed on the same gateway,
asks the bot (a model that obeys) to search for it. Neither ``session_search`` nor an
API caller naming 42's conversation reaches it, unless the operator widens the scope.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.fakes.llm_server import text, tool_call
from tests.gateway.api_calls import call
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for

SECRET = "hunter2xyz"


def _tool_results(gateway: GatewayThread, route: str) -> list[str]:
    conversation = gateway.db.gateway.get_route(route)
    messages = gateway.db.get_conversation_messages(conversation)
    return [m["content"] or "" for m in messages if m["role"] == "tool"]


def _search_as_seven(hermes_home: Path, fake_llm) -> list[str]:
    """42 says the secret, 7 has the bot search for it; 7's tool results."""
    fake_llm.enqueue(
        text("Noted."),
        tool_call("session_search", {"query": SECRET}),
        text("Here is what I found."),
    )
    chats: list[FakeChat] = []
    platforms = {"telegram": {"token": "123456:telegram-token", "allowed_users": ["42", "7"]}}
    factory = {"telegram": lambda r, s: chats.append(FakeChat(r, s)) or chats[-1]}
    with GatewayThread(hermes_home, api=None, platforms=platforms, adapters=factory) as gateway:
        gateway.call(gateway.runner.handle_message(incoming(f"my password is {SECRET}", user="42")))
        wait_for(lambda: "Noted." in chats[0].texts(), timeout=20)
        gateway.call(
            gateway.runner.handle_message(
                incoming(f"search old chats for {SECRET}", user="7", chat="200")
            )
        )
        wait_for(lambda: "Here is what I found." in chats[0].texts(), timeout=20)
        return _tool_results(gateway, "telegram:200")


def test_session_search_sees_only_the_asking_users_conversations(
    hermes_home: Path, config_file: Path, fake_llm
) -> None:
    [result] = _search_as_seven(hermes_home, fake_llm)
    assert SECRET in result  # 7's own question is a match, and the only one
    assert "my password is" not in result
    assert "1 conversation(s)" in result


def test_the_operator_can_widen_the_search_to_everyone(
    hermes_home: Path, config_file: Path, fake_llm
) -> None:
    config = yaml.safe_load(config_file.read_text(encoding="utf-8"))
    config["gateway"] = {"search_scope": "all"}
    config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    [result] = _search_as_seven(hermes_home, fake_llm)
    assert f"my password is {SECRET}" in result


@pytest.mark.parametrize("path", ["/api/sessions/{id}", "/api/sessions/{id}/messages"])
def test_an_api_caller_cannot_read_a_platform_conversation(gateway, path: str) -> None:
    conversation = gateway.db.create_session(source="telegram", user_id="42")
    gateway.db.append_message(conversation, "user", f"my password is {SECRET}")
    status, _ = call(gateway, "GET", path.format(id=conversation))
    assert status == 404
    listed = call(gateway, "GET", "/api/sessions")[1]["data"]
    assert conversation not in {row["id"] for row in listed}
    found = call(gateway, "GET", f"/api/sessions?q={SECRET}")[1]["data"]
    assert found == []


def test_an_api_caller_cannot_join_a_platform_conversation(gateway) -> None:
    conversation = gateway.db.create_session(
        source="telegram", user_id="42", session_key="telegram:100"
    )
    gateway.db.append_message(conversation, "user", f"my password is {SECRET}")
    status, body = call(
        gateway,
        "POST",
        "/v1/chat/completions",
        json={"model": "fake-model", "messages": [{"role": "user", "content": "what is it?"}]},
        headers={"X-Hermes-Session-Id": conversation},
    )
    assert status == 404
    assert "telegram" in body["error"]["message"]
    assert [m["content"] for m in gateway.db.get_conversation_messages(conversation)] == [
        f"my password is {SECRET}"
    ]
