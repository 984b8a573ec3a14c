"""Small things standard clients expect: ``/help`` typed in a chat UI keeps the chat in
one conversation, and ``GET /v1/models/{id}`` answers JSON (``models.retrieve()``)."""

from __future__ import annotations

import openai
import pytest

from tests.gateway.harness import GatewayThread

HEADER = "X-Hermes-Session-Id"


def test_help_in_a_chat_ui_answers_with_a_session_and_the_chat_goes_on(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm
) -> None:
    history: list[dict[str, str]] = [{"role": "user", "content": "hello"}]
    first = client.chat.completions.create(model="fake-model", messages=history)
    history += [{"role": "assistant", "content": first.choices[0].message.content},
                {"role": "user", "content": "/help"}]  # fmt: skip
    raw = client.chat.completions.with_raw_response.create(model="fake-model", messages=history)
    helped = raw.parse().choices[0].message.content
    assert "/new" in helped and "/stop" in helped
    history += [{"role": "assistant", "content": helped}, {"role": "user", "content": "thanks"}]
    raw_next = client.chat.completions.with_raw_response.create(
        model="fake-model", messages=history
    )
    assert raw_next.parse().choices[0].message.content == "echo: thanks"
    [conversation] = gateway.db.list_conversations()
    assert raw.headers[HEADER] == raw_next.headers[HEADER] == conversation["tip_id"]
    assert "X-Hermes-Branched-From" not in raw_next.headers
    stored = gateway.db.get_conversation_messages(conversation["conversation_id"])
    assert [m["content"] for m in stored] == [m["content"] for m in history] + ["echo: thanks"]
    assert len(fake_llm.requests) == 2  # /help asked no model


def test_help_as_the_first_message_starts_the_conversation(
    client: openai.OpenAI, gateway: GatewayThread
) -> None:
    history = [{"role": "user", "content": "/help"}]
    raw = client.chat.completions.with_raw_response.create(model="fake-model", messages=history)
    assert raw.headers[HEADER]
    history += [{"role": "assistant", "content": raw.parse().choices[0].message.content},
                {"role": "user", "content": "hi"}]  # fmt: skip
    client.chat.completions.create(model="fake-model", messages=history)
    assert len(gateway.db.list_conversations()) == 1


def test_models_retrieve(client: openai.OpenAI) -> None:
    model = client.models.retrieve("fake-model")
    assert (model.id, model.object, model.owned_by) == ("fake-model", "model", "hermes")
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("gpt-unknown")
    assert caught.value.body["code"] == "model_not_found"
    assert "gpt-unknown" in caught.value.body["message"]
