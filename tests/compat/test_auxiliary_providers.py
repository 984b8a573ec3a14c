"""0.19's side-task clients over other providers' APIs (agent.auxiliary_client's Codex,
Anthropic and Bedrock wrappers, sync and async): a caller's real SDK client (openai on the
Responses API, anthropic, boto3's bedrock-runtime) talks real HTTP to a local fake model
(tests/compat/provider_wire.py), and the caller asks in the openai client's shape.

Each wrapper is checked for a plain answer with the system message, and a tool call's round
trip: the call comes back as the chat API's ``tool_calls``, and the assistant's call and
the tool's result sent back reach the provider in its own shape.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from hermes.testing.llm_server import Reply, text, tool_call
from tests.compat.provider_wire import COMPLETION_TOKENS, PROMPT_TOKENS, ProviderWireServer

SYSTEM = {"role": "system", "content": "Answer in one word."}
QUESTION = {"role": "user", "content": "Capital of France?"}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ASK_WEATHER = {"role": "user", "content": "Weather in Paris?"}
TOOL_RESULT = {"role": "tool", "tool_call_id": "call_w1", "content": "sunny, 24C"}
BEDROCK_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"


@pytest.fixture(scope="module")
def server() -> Iterator[ProviderWireServer]:
    wire = ProviderWireServer()
    yield wire
    wire.close()


@pytest.fixture
def wire(server: ProviderWireServer) -> ProviderWireServer:
    server.requests.clear()
    return server


def ask(client: Any, **options: Any) -> ChatCompletion:
    """``client.chat.completions.create(**options)``, awaited for an async client."""
    answer = client.chat.completions.create(**options)
    return asyncio.run(answer) if inspect.iscoroutine(answer) else answer


def assert_plain_answer(answer: ChatCompletion, model: str) -> None:
    assert isinstance(answer, ChatCompletion)
    assert answer.model == model
    choice = answer.choices[0]
    assert choice.message.content == "Paris."
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (
        PROMPT_TOKENS,
        COMPLETION_TOKENS,
    )
    assert answer.usage.total_tokens == PROMPT_TOKENS + COMPLETION_TOKENS


def round_trip(client: Any, wire: ProviderWireServer) -> tuple[dict, dict]:
    """A tool call and its result sent back; the two request bodies the provider saw."""
    wire.enqueue(tool_call("get_weather", {"city": "Paris"}, id="call_w1"), text("Sunny."))
    first = ask(client, messages=[SYSTEM, ASK_WEATHER], tools=[WEATHER], max_tokens=64)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    (call,) = choice.message.tool_calls
    assert call.id == "call_w1"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    # The caller sends back the assistant's message as the SDK gave it, and the result.
    called = choice.message.model_dump(exclude_none=True)
    messages = [SYSTEM, ASK_WEATHER, called, TOOL_RESULT]
    second = ask(client, messages=messages, tools=[WEATHER], max_tokens=64)
    assert second.choices[0].message.content == "Sunny."
    assert second.choices[0].finish_reason == "stop"
    assert len(wire.requests) == 2
    return wire.requests[0].body, wire.requests[1].body


# -- Codex: an openai client on the Responses API ----------------------------------------


@pytest.fixture(params=["sync", "async"])
def codex(request: pytest.FixtureRequest, wire: ProviderWireServer) -> Iterator[Any]:
    import openai
    from agent.auxiliary_client import AsyncCodexAuxiliaryClient, CodexAuxiliaryClient

    client = CodexAuxiliaryClient(
        openai.OpenAI(api_key="codex-token", base_url=f"{wire.url}/v1"), "gpt-5.4"
    )
    assert client.api_key == "codex-token"
    assert str(client.base_url) == f"{wire.url}/v1/"
    yield client if request.param == "sync" else AsyncCodexAuxiliaryClient(client)
    client.close()


def test_codex_plain_answer_and_its_system_message(codex: Any, wire: ProviderWireServer) -> None:
    wire.enqueue(text("Paris."))
    answer = ask(codex, messages=[SYSTEM, QUESTION], max_tokens=50, temperature=0.3)
    assert_plain_answer(answer, "gpt-5.4")
    (request,) = wire.requests
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == "Bearer codex-token"
    assert request.body["instructions"] == "Answer in one word."
    assert request.body["input"] == [{"role": "user", "content": "Capital of France?"}]
    assert request.body["stream"] is True
    assert request.body["store"] is False
    # The Codex backend refuses a token cap and a temperature: neither is sent.
    assert "max_output_tokens" not in request.body
    assert "temperature" not in request.body


def test_codex_tool_call_round_trip(codex: Any, wire: ProviderWireServer) -> None:
    first, second = round_trip(codex, wire)
    assert first["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": WEATHER["function"]["parameters"],
        }
    ]
    assert second["instructions"] == "Answer in one word."
    assert second["input"] == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "type": "function_call",
            "call_id": "call_w1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_w1", "output": "sunny, 24C"},
    ]


def test_codex_failed_response_raises_with_the_endpoints_words(
    codex: Any, wire: ProviderWireServer
) -> None:
    wire.enqueue(Reply(error={"code": "server_error", "message": "The model is overloaded."}))
    with pytest.raises(RuntimeError, match="The model is overloaded"):
        ask(codex, messages=[QUESTION])


# -- Anthropic: an anthropic client on the Messages API ----------------------------------


@pytest.fixture(params=["sync", "async"])
def claude(request: pytest.FixtureRequest, wire: ProviderWireServer) -> Iterator[Any]:
    import anthropic
    from agent.auxiliary_client import AnthropicAuxiliaryClient, AsyncAnthropicAuxiliaryClient

    real = anthropic.Anthropic(api_key="sk-ant-test", base_url=wire.url)
    client = AnthropicAuxiliaryClient(real, "claude-haiku-4-5", "sk-ant-test", wire.url)
    assert (client.api_key, client.base_url) == ("sk-ant-test", wire.url)
    yield client if request.param == "sync" else AsyncAnthropicAuxiliaryClient(client)
    client.close()


def test_anthropic_plain_answer_and_its_system_message(
    claude: Any, wire: ProviderWireServer
) -> None:
    wire.enqueue(text("Paris."))
    answer = ask(claude, messages=[SYSTEM, QUESTION], max_tokens=50, temperature=0.3)
    assert_plain_answer(answer, "claude-haiku-4-5")
    (request,) = wire.requests
    assert request.path == "/v1/messages"
    assert "anthropic-version" in request.headers  # the anthropic SDK's own request
    assert request.body["stream"] is True  # read whole, as 0.19 reads it
    assert request.body["system"] == "Answer in one word."
    assert request.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Capital of France?"}]}
    ]
    assert request.body["max_tokens"] == 50
    assert "temperature" not in request.body  # current Claude models refuse one


def test_anthropic_tool_call_round_trip(claude: Any, wire: ProviderWireServer) -> None:
    first, second = round_trip(claude, wire)
    assert first["tools"] == [
        {
            "name": "get_weather",
            "description": "The weather in a city.",
            "input_schema": WEATHER["function"]["parameters"],
        }
    ]
    assert first["tool_choice"] == {"type": "auto"}
    assert second["system"] == "Answer in one word."
    assert second["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "call_w1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                }
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_w1", "content": "sunny, 24C"}],
        },
    ]


def test_anthropic_without_a_token_cap_asks_for_the_default(
    claude: Any, wire: ProviderWireServer
) -> None:
    """The Messages API needs ``max_tokens``; a caller that names none gets 4096."""
    ask(claude, messages=[QUESTION])
    assert wire.requests[0].body["max_tokens"] == 4096


def test_anthropic_gateway_without_streams_is_asked_again_whole(
    claude: Any, wire: ProviderWireServer
) -> None:
    wire.refuse_streams = True
    try:
        wire.enqueue(text("Paris."))
        answer = ask(claude, messages=[SYSTEM, QUESTION], max_tokens=50)
    finally:
        wire.refuse_streams = False
    assert_plain_answer(answer, "claude-haiku-4-5")
    assert [request.body.get("stream") for request in wire.requests] == [True, None]


def test_anthropic_parallel_tool_results_are_one_user_turn(wire: ProviderWireServer) -> None:
    """The Messages API wants turns to alternate: two results after one assistant turn
    with two calls go as one user message."""
    import anthropic
    from agent.auxiliary_client import AnthropicAuxiliaryClient

    real = anthropic.Anthropic(api_key="sk-ant-test", base_url=wire.url)
    client = AnthropicAuxiliaryClient(real, "claude-haiku-4-5", "sk-ant-test", wire.url)
    calls = [
        {
            "id": f"call_{city}",
            "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
        }
        for city in ("Paris", "Rome")
    ]
    results = [
        {"role": "tool", "tool_call_id": f"call_{city}", "content": f"{city}: sunny"}
        for city in ("Paris", "Rome")
    ]
    messages = [ASK_WEATHER, {"role": "assistant", "content": "", "tool_calls": calls}, *results]
    ask(client, messages=messages, tools=[WEATHER])
    sent = wire.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert [block["tool_use_id"] for block in sent[2]["content"]] == ["call_Paris", "call_Rome"]
    client.close()


# -- Bedrock: boto3's bedrock-runtime client on the Converse API --------------------------


@pytest.fixture(params=["sync", "async"])
def bedrock(
    request: pytest.FixtureRequest,
    wire: ProviderWireServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Iterator[Any]:
    import boto3
    from agent.auxiliary_client import AsyncBedrockAuxiliaryClient, BedrockAuxiliaryClient

    # AWS's usual settings, pointed here: fake credentials, no profile files of the host.
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", wire.url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    client = BedrockAuxiliaryClient("us-east-1", BEDROCK_MODEL)
    assert client.api_key == "aws-sdk"
    assert client.base_url == "https://bedrock-runtime.us-east-1.amazonaws.com"
    yield client if request.param == "sync" else AsyncBedrockAuxiliaryClient(client)
    client.close()


def test_bedrock_plain_answer_and_its_system_message(
    bedrock: Any, wire: ProviderWireServer
) -> None:
    wire.enqueue(text("Paris."))
    answer = ask(bedrock, messages=[SYSTEM, QUESTION], max_tokens=50, temperature=0.3)
    assert_plain_answer(answer, BEDROCK_MODEL)
    (request,) = wire.requests
    assert request.path == f"/model/{BEDROCK_MODEL}/converse"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIAFAKE")
    assert request.body["system"] == [{"text": "Answer in one word."}]
    assert request.body["messages"] == [
        {"role": "user", "content": [{"text": "Capital of France?"}]}
    ]
    assert request.body["inferenceConfig"] == {"maxTokens": 50, "temperature": 0.3}


def test_bedrock_tool_call_round_trip(bedrock: Any, wire: ProviderWireServer) -> None:
    first, second = round_trip(bedrock, wire)
    assert first["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "get_weather",
                    "description": "The weather in a city.",
                    "inputSchema": {"json": WEATHER["function"]["parameters"]},
                }
            }
        ]
    }
    assert second["system"] == [{"text": "Answer in one word."}]
    assert second["messages"] == [
        {"role": "user", "content": [{"text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "toolUse": {
                        "toolUseId": "call_w1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    }
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "call_w1", "content": [{"text": "sunny, 24C"}]}}
            ],
        },
    ]
