"""The Responses API as standard clients use it: the whole ``input`` list resent every
turn (the Agents SDK's ``to_input_list()`` pattern), client ``function`` tools with
``function_call`` / ``function_call_output`` items, and ``text.format``.

The resent list maps to its conversation as chat completions' history does (one
conversation, a branch where it diverges); a function call loop continues the turn that
made the calls, with or without ``previous_response_id``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import openai
import pytest

from tests.fakes.llm_server import text, tool_call
from tests.gateway.harness import GatewayThread

HEADER = "X-Hermes-Session-Id"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def items_of(response: Any) -> list[dict[str, Any]]:
    """A response's output as input items for the next request (``to_input_list``)."""
    return [item.model_dump(exclude_none=True) for item in response.output]


def contents(gateway: GatewayThread, conversation: str) -> list[str | None]:
    return [m["content"] for m in gateway.db.get_conversation_messages(conversation)]


def test_the_whole_input_list_resent_makes_one_conversation(
    client: openai.OpenAI, gateway: GatewayThread
) -> None:
    conversation: list[dict[str, Any]] = []
    for words in ("one", "two", "three"):
        conversation.append({"role": "user", "content": words})
        response = client.responses.create(model="fake-model", input=conversation)
        assert response.output_text == f"echo: {words}"
        conversation += items_of(response)
    [listed] = gateway.db.list_conversations()
    assert contents(gateway, listed["conversation_id"]) == [
        "one", "echo: one", "two", "echo: two", "three", "echo: three"
    ]  # fmt: skip
    # An edited second message branches there, once.
    edited = [*conversation[:2], {"role": "user", "content": "TWO"}]
    raw = client.responses.with_raw_response.create(model="fake-model", input=edited)
    assert raw.headers["X-Hermes-Branched-From"] == listed["conversation_id"]
    assert len(gateway.db.list_conversations()) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_function_call_loop_resending_the_input_list(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm, stream: bool
) -> None:
    fake_llm.strict_context = True
    fake_llm.enqueue(
        tool_call("get_weather", {"city": "Oslo"}, content="Checking."), text("Oslo: snow.")
    )
    items: list[dict[str, Any]] = [{"role": "user", "content": "weather in Oslo?"}]

    def create() -> Any:
        if not stream:
            return client.responses.create(model="fake-model", input=items, tools=[WEATHER])
        with client.responses.stream(model="fake-model", input=items, tools=[WEATHER]) as s:
            for _ in s:
                pass
            return s.get_final_response()

    first = create()
    [call] = [item for item in first.output if item.type == "function_call"]
    assert (call.name, call.arguments) == ("get_weather", '{"city": "Oslo"}')
    items += items_of(first)
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "snow"})
    assert create().output_text == "Oslo: snow."
    [listed] = gateway.db.list_conversations()
    rows = gateway.db.get_conversation_messages(listed["conversation_id"])
    assert Counter(m["tool_call_id"] for m in rows if m["role"] == "tool") == {call.call_id: 1}
    assert [m["role"] for m in rows] == ["user", "assistant", "tool", "assistant"]
    assert fake_llm.stats()["invalid_contexts"] == 0


def test_a_function_call_loop_with_previous_response_id(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm
) -> None:
    fake_llm.enqueue(tool_call("get_weather", {"city": "Rome"}), text("Rome: warm."))
    first = client.responses.create(model="fake-model", input="weather in Rome?", tools=[WEATHER])
    [call] = first.output
    assert client.responses.retrieve(first.id).output[-1].call_id == call.call_id
    final = client.responses.create(
        model="fake-model",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "warm"}],
        tools=[WEATHER],
    )
    assert final.output_text == "Rome: warm."
    [listed] = gateway.db.list_conversations()
    assert contents(gateway, listed["conversation_id"])[-2:] == ["warm", "Rome: warm."]


def test_outputs_for_calls_never_made_are_a_400(client: openai.OpenAI, fake_llm) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(
            model="fake-model",
            input=[
                {"role": "user", "content": "nobody asked this"},
                {"type": "function_call", "call_id": "call_x", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_x", "output": "1"},
            ],
        )
    assert "call_x" in caught.value.body["message"]
    assert fake_llm.requests == []


def test_text_format_and_tool_parameters_reach_the_model(client: openai.OpenAI, fake_llm) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    fake_llm.enqueue(text('{"n": 3}'))
    client.responses.create(
        model="fake-model",
        input="a number",
        tools=[WEATHER],
        tool_choice={"type": "function", "name": "get_weather"},
        parallel_tool_calls=False,
        top_p=0.5,
        text={"format": {"type": "json_schema", "name": "number", "schema": schema}},
        reasoning={"effort": "low"},
    )
    sent = fake_llm.requests[-1]
    assert sent["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "number", "schema": schema}
    }  # fmt: skip
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert (sent["parallel_tool_calls"], sent["top_p"], sent["reasoning_effort"]) == (
        False, 0.5, "low"
    )  # fmt: skip


def test_openai_agents_with_the_responses_model(gateway: GatewayThread, fake_llm) -> None:
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)
    fake_llm.strict_context = True
    fake_llm.enqueue(tool_call("get_weather", {"city": "Nice"}), text("Nice: mild."))

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"mild in {city}"

    async def run() -> list[str]:
        client = openai.AsyncOpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0)
        agent = Agent(
            name="weather",
            tools=[get_weather],
            model=OpenAIResponsesModel(model="fake-model", openai_client=client),
        )
        first = await Runner.run(agent, "weather in Nice?")
        second = await Runner.run(
            agent, [*first.to_input_list(), {"role": "user", "content": "ok"}]
        )
        await client.close()
        return [str(first.final_output), str(second.final_output)]

    assert asyncio.run(run()) == ["Nice: mild.", "echo: ok"]
    [listed] = gateway.db.list_conversations()
    rows = gateway.db.get_conversation_messages(listed["conversation_id"])
    assert [m["role"] for m in rows] == ["user", "assistant", "tool", "assistant", "user",
                                         "assistant"]  # fmt: skip
    assert rows[2]["content"] == "mild in Nice"
