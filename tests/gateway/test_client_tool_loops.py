"""Client tool loops from the history itself: the stock ``openai`` client against a real
gateway, sending the whole history with the assistant's ``tool_calls`` and its own
``role: "tool"`` results and no X-Hermes-Session-Id, as the OpenAI API documents it.

The results continue the stored turn that made the calls (found by the history's
digests, named by the ``tool_call_id``s): one conversation, every call answered once,
streamed or not; results for calls hermes never made are a 400 naming the id, and a
call the client never answers is closed (once) on its next request.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.fakes.llm_server import text, tool_call, tool_calls
from tests.gateway.harness import GatewayThread

HEADER = "X-Hermes-Session-Id"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def ask(client: openai.OpenAI, messages: list[dict[str, Any]], *, stream: bool = False) -> Any:
    """One request with the client's tool: the assistant message it gets back (as a dict
    ready to go into the next request's history) and the response headers."""
    if not stream:
        raw = client.chat.completions.with_raw_response.create(
            model="fake-model", messages=messages, tools=[WEATHER]
        )
        message = raw.parse().choices[0].message
        return message.model_dump(exclude_none=True), raw.headers
    with client.chat.completions.with_streaming_response.create(
        model="fake-model", messages=messages, tools=[WEATHER], stream=True
    ) as response:
        content, calls = "", []
        for chunk in response.parse():
            delta = chunk.choices[0].delta if chunk.choices else None
            content += (delta.content or "") if delta else ""
            calls += (
                [c.model_dump(exclude_none=True) for c in (delta.tool_calls or [])] if delta else []
            )
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
        return message, response.headers


def result(call: dict[str, Any], content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call["id"], "content": content}


def answered_calls(gateway: GatewayThread, conversation: str) -> Counter[str]:
    rows = gateway.db.get_conversation_messages(conversation)
    return Counter(m["tool_call_id"] for m in rows if m["role"] == "tool")


def the_conversation(gateway: GatewayThread) -> str:
    [conversation] = gateway.db.list_conversations()
    return conversation["conversation_id"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_tool_loop_without_the_header_continues_the_turn_that_made_the_calls(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm, stream: bool
) -> None:
    fake_llm.strict_context = True
    fake_llm.enqueue(
        tool_call("get_weather", {"city": "Paris"}, content="Let me look."),
        text("It is sunny in Paris."),
    )
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "weather in Paris?"},
    ]
    calling, _ = ask(client, history, stream=stream)
    [call] = calling["tool_calls"]
    history += [calling, result(call, "sunny, 24 C")]
    answer, headers = ask(client, history, stream=stream)
    assert answer["content"] == "It is sunny in Paris."
    assert fake_llm.requests[-1]["messages"][-1]["content"] == "sunny, 24 C"
    history.append(answer)
    history.append({"role": "user", "content": "thanks"})
    assert ask(client, history, stream=stream)[0]["content"] == "echo: thanks"
    conversation = the_conversation(gateway)
    assert gateway.db.get_session(headers[HEADER])["conversation_id"] == conversation
    assert answered_calls(gateway, conversation) == {call["id"]: 1}
    stored = gateway.db.get_conversation_messages(conversation)
    assert [m["role"] for m in stored] == [
        "user", "assistant", "tool", "assistant", "user", "assistant"
    ]  # fmt: skip
    assert fake_llm.stats()["invalid_contexts"] == 0


def test_two_rounds_of_parallel_calls_make_one_conversation(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm
) -> None:
    fake_llm.strict_context = True
    fake_llm.enqueue(
        tool_calls(("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})),
        tool_call("get_weather", {"city": "Nice"}),
        text("Oslo cold, Rome warm, Nice mild."),
    )
    history: list[dict[str, Any]] = [{"role": "user", "content": "compare three cities"}]
    first, _ = ask(client, history)
    history += [first, *(result(c, f"weather {n}") for n, c in enumerate(first["tool_calls"]))]
    second, _ = ask(client, history, stream=True)
    history += [second, result(second["tool_calls"][0], "mild")]
    final, _ = ask(client, history)
    assert final["content"] == "Oslo cold, Rome warm, Nice mild."
    conversation = the_conversation(gateway)
    calls = [c["id"] for m in (first, second) for c in m["tool_calls"]]
    assert answered_calls(gateway, conversation) == dict.fromkeys(calls, 1)
    assert fake_llm.stats()["invalid_contexts"] == 0


def test_the_results_continue_the_turn_after_a_restart(
    hermes_home: Path, config_file: Path, fake_llm
) -> None:
    """A gateway that did not make the calls (nothing cached) still finds them open."""
    fake_llm.strict_context = True
    fake_llm.enqueue(tool_call("get_weather", {"city": "Lima"}), text("Lima: grey."))
    history: list[dict[str, Any]] = [{"role": "user", "content": "weather in Lima?"}]
    for leg in range(2):
        with (
            GatewayThread(hermes_home) as gateway,
            openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0) as api,
        ):
            message, _ = ask(api, history)
            if leg == 0:
                history += [message, result(message["tool_calls"][0], "grey, 17 C")]
    assert message["content"] == "Lima: grey."
    with GatewayThread(hermes_home) as gateway:
        conversation = the_conversation(gateway)
        call = history[1]["tool_calls"][0]["id"]
        assert answered_calls(gateway, conversation) == {call: 1}
        assert gateway.db.get_conversation_messages(conversation)[2]["content"] == "grey, 17 C"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_results_for_calls_hermes_never_made_are_a_400_naming_the_id(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm, stream: bool
) -> None:
    fake_llm.enqueue(tool_call("get_weather", {"city": "Bern"}))
    history: list[dict[str, Any]] = [{"role": "user", "content": "weather in Bern?"}]
    calling, _ = ask(client, history)
    made = calling["tool_calls"][0]
    forged = {**made, "id": "call_forged"}
    cases = [
        [*history, {**calling, "tool_calls": [forged]}, result(forged, "x")],  # known history
        [{"role": "user", "content": "never said"}, calling, result(forged, "x")],  # unknown
    ]
    for messages in cases:
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(
                model="fake-model", messages=messages, tools=[WEATHER], stream=stream
            )
        assert "call_forged" in caught.value.body["message"]
    conversation = the_conversation(gateway)
    assert [m["role"] for m in gateway.db.get_conversation_messages(conversation)] == [
        "user", "assistant"
    ]  # fmt: skip
    assert len(fake_llm.requests) == 1


def test_a_call_the_client_never_answers_is_closed_once_on_its_next_request(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm
) -> None:
    fake_llm.strict_context = True
    fake_llm.enqueue(tool_call("get_weather", {"city": "Graz"}))
    history: list[dict[str, Any]] = [{"role": "user", "content": "weather in Graz?"}]
    calling, _ = ask(client, history)
    history += [calling, {"role": "user", "content": "never mind, say hi"}]
    assert ask(client, history)[0]["content"] == "echo: never mind, say hi"
    history += [{"role": "assistant", "content": "echo: never mind, say hi"}]
    history += [{"role": "user", "content": "bye"}]
    assert ask(client, history)[0]["content"] == "echo: bye"
    conversation = the_conversation(gateway)
    assert answered_calls(gateway, conversation) == {calling["tool_calls"][0]["id"]: 1}
    assert fake_llm.stats()["invalid_contexts"] == 0
    assert gateway.db.invariant_violations() == []
