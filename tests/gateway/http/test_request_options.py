"""What an API caller asks of a turn (issue 13): its own instructions, the model, and the
sampling parameters, through the real ``openai`` client against a real gateway."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from tests.fakes.llm_server import text, tool_call
from tests.gateway.harness import GatewayThread, write_config

HEADER = "X-Hermes-Session-Id"


def _system(request: dict) -> str:
    [system] = [m for m in request["messages"] if m["role"] == "system"]
    return system["content"]


def test_the_clients_instructions_follow_hermess_prompt_turn_after_turn(
    client, gateway, fake_llm
) -> None:
    instructions = [
        {"role": "system", "content": "Answer like a pirate."},
        {"role": "developer", "content": "Never mention the weather."},
    ]
    raw = client.chat.completions.with_raw_response.create(
        model="fake-model", messages=[*instructions, {"role": "user", "content": "hi"}]
    )
    session = raw.headers[HEADER]
    first = _system(fake_llm.requests[-1])
    assert first.startswith("You are hermes")
    assert first.endswith("Answer like a pirate.\n\nNever mention the weather.")
    client.chat.completions.create(
        model="fake-model",
        messages=[*instructions, {"role": "user", "content": "again"}],
        extra_headers={HEADER: session},
    )
    assert _system(fake_llm.requests[-1]) == first  # byte for byte: the prompt cache hits
    client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "no instructions now"}],
        extra_headers={HEADER: session},
    )
    assert "pirate" not in _system(fake_llm.requests[-1])
    stored = gateway.db.get_conversation_messages(session)
    assert all("pirate" not in (m["content"] or "") for m in stored)


def test_sampling_parameters_reach_the_model_as_given(client, fake_llm) -> None:
    client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "hi"}],
        temperature=0.2,
        max_completion_tokens=50,
        stop=["END"],
        user="customer-7",
    )
    sent = fake_llm.requests[-1]
    assert (sent["temperature"], sent["max_tokens"], sent["stop"], sent["user"]) == (
        0.2, 50, ["END"], "customer-7"
    )  # fmt: skip
    client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "plain"}]
    )
    assert not {"temperature", "stop", "user"} & set(fake_llm.requests[-1])


@pytest.mark.parametrize(
    ("extra", "param"),
    [({"temperature": 3}, "temperature"), ({"temperature": "hot"}, "temperature"),
     ({"max_tokens": 0}, "max_tokens"), ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
     ({"user": 7}, "user"),
     ({"tools": [{"type": "function", "function": {"name": "bad name!"}}]}, "tools"),
     ({"tools": "get_weather"}, "tools"), ({"tool_choice": "sometimes"}, "tool_choice"),
     ({"tool_choice": "required"}, "tool_choice")],
)  # fmt: skip
def test_a_bad_parameter_is_a_400_naming_it(client, fake_llm, extra, param) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hi"}], extra_body=extra
        )
    assert caught.value.body["param"] == param
    assert fake_llm.requests == []


@pytest.fixture
def two_models(hermes_home: Path, fake_llm, model_key) -> GatewayThread:
    write_config(hermes_home, fake_llm.url, gateway={"models": ["fake-model", "big-model"]})
    with GatewayThread(hermes_home) as running:
        yield running


def test_model_selects_among_the_offered_and_models_lists_them(two_models, fake_llm) -> None:
    with openai.OpenAI(base_url=two_models.url, api_key=two_models.api_key, max_retries=0) as api:
        assert [m.id for m in api.models.list().data] == ["fake-model", "big-model"]
        reply = api.chat.completions.create(
            model="big-model", messages=[{"role": "user", "content": "hi"}]
        )
        assert fake_llm.requests[-1]["model"] == "big-model" and reply.model == "big-model"
        with pytest.raises(openai.NotFoundError) as caught:
            api.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
            )
    error = caught.value.body
    assert error["code"] == "model_not_found" and error["param"] == "model"
    assert "gpt-4o" in error["message"] and "big-model" in error["message"]
    assert len(fake_llm.requests) == 1


def test_without_gateway_models_only_the_configured_model_is_offered(client, fake_llm) -> None:
    assert [m.id for m in client.models.list().data] == ["fake-model"]
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="other", messages=[{"role": "user", "content": "x"}])
    assert fake_llm.requests == []


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def test_a_client_tool_call_is_handed_back_and_its_result_continues_the_turn(
    client, gateway, fake_llm
) -> None:
    """Client-side tools as OpenAI documents them: the answer carries the call with
    finish_reason tool_calls; the next request brings the result and the turn goes on."""
    fake_llm.enqueue(tool_call("get_weather", {"city": "Paris"}), text("It is sunny in Paris."))
    question = {"role": "user", "content": "weather in Paris?"}
    raw = client.chat.completions.with_raw_response.create(
        model="fake-model", messages=[question], tools=[WEATHER], tool_choice="auto"
    )
    session, first = raw.headers[HEADER], raw.parse().choices[0]
    offered = [t["function"]["name"] for t in fake_llm.requests[-1]["tools"]]
    assert "get_weather" in offered and "terminal" in offered  # beside hermes's own
    assert fake_llm.requests[-1]["tool_choice"] == "auto"
    assert first.finish_reason == "tool_calls"
    [call] = first.message.tool_calls
    assert call.function.name == "get_weather" and "Paris" in call.function.arguments
    answer = client.chat.completions.create(
        model="fake-model",
        messages=[
            question,
            first.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "sunny, 24 C"},
        ],
        tools=[WEATHER],
        extra_headers={HEADER: session},
    )
    assert answer.choices[0].message.content == "It is sunny in Paris."
    sent = fake_llm.requests[-1]["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": call.id, "content": "sunny, 24 C",
                        "name": "get_weather"}  # fmt: skip
    stored = gateway.db.get_conversation_messages(session)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[1]["tool_calls"][0]["id"] == call.id


def test_a_client_tool_call_streams_as_a_tool_calls_delta(client, fake_llm) -> None:
    fake_llm.enqueue(tool_call("get_weather", {"city": "Oslo"}))
    chunks = list(
        client.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "weather in Oslo?"}],
            tools=[WEATHER],
            stream=True,
        )
    )
    calls = [
        c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls
    ]
    assert calls and calls[0][0].function.name == "get_weather"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"


def test_tool_results_must_answer_an_open_call_of_a_named_conversation(
    client, gateway, fake_llm
) -> None:
    result = {"role": "tool", "tool_call_id": "call_nope", "content": "x"}
    with pytest.raises(openai.BadRequestError, match="call_nope"):
        client.chat.completions.create(model="fake-model", messages=[result])
    session = client.chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}]
    ).headers[HEADER]
    with pytest.raises(openai.BadRequestError, match="answers no open tool call"):
        client.chat.completions.create(
            model="fake-model", messages=[result], extra_headers={HEADER: session}
        )
    assert [m["role"] for m in gateway.db.get_conversation_messages(session)] == [
        "user", "assistant"
    ]  # fmt: skip
