"""Standard OpenAI clients, unchanged, against a real gateway: each one's documented tool
loop (and LangChain's structured output) with the fake model scripted to call the tool.

Each loop must end in one conversation in which every call is answered once, whatever
the client sends besides (none of them sends X-Hermes-Session-Id).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.llm_server import text, tool_call
from tests.gateway.harness import GatewayThread

QUESTION = "What is the weather in Paris?"


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def the_one_conversation(gateway: GatewayThread) -> list[dict[str, Any]]:
    """The messages of the only conversation, checking every call was answered once."""
    [conversation] = gateway.db.list_conversations()
    rows = gateway.db.get_conversation_messages(conversation["conversation_id"])
    calls = [c["id"] for m in rows if m["role"] == "assistant" for c in m["tool_calls"] or []]
    answers = Counter(m["tool_call_id"] for m in rows if m["role"] == "tool")
    assert calls and answers == dict.fromkeys(calls, 1)
    assert gateway.db.invariant_violations() == []
    return rows


@pytest.fixture
def weather_script(fake_llm):
    fake_llm.strict_context = True
    fake_llm.enqueue(tool_call("get_weather", {"city": "Paris"}), text("Paris: sunny."))
    return fake_llm


def test_langchain_bind_tools_loop(gateway: GatewayThread, weather_script) -> None:
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    weather = tool(get_weather)
    model = ChatOpenAI(
        model="fake-model", base_url=gateway.url, api_key=gateway.api_key, max_retries=0
    ).bind_tools([weather])
    messages: list[Any] = [HumanMessage(QUESTION)]
    called = model.invoke(messages)
    messages.append(called)
    messages += [weather.invoke(call) for call in called.tool_calls]
    assert model.invoke(messages).content == "Paris: sunny."
    rows = the_one_conversation(gateway)
    assert rows[2]["content"] == "sunny in Paris"
    assert weather_script.stats()["invalid_contexts"] == 0


def test_langchain_with_structured_output(gateway: GatewayThread, fake_llm) -> None:
    from langchain_openai import ChatOpenAI
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        country: str

    fake_llm.enqueue(text('{"name": "Paris", "country": "France"}'))
    model = ChatOpenAI(
        model="fake-model", base_url=gateway.url, api_key=gateway.api_key, max_retries=0
    ).with_structured_output(City)
    assert model.invoke("The capital of France?") == City(name="Paris", country="France")
    sent = fake_llm.requests[-1]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "City"


def test_llm_cli_with_functions_then_continued(
    gateway: GatewayThread, weather_script, tmp_path
) -> None:
    """``llm --functions`` against hermes configured as its docs say (an extra OpenAI
    model with ``api_base``), then ``llm -c`` continuing the same conversation."""
    home = tmp_path / "llm"
    home.mkdir()
    model = {"model_id": "hermes", "model_name": "fake-model", "api_base": gateway.url,
             "supports_tools": True, "api_key_name": "hermes"}  # fmt: skip
    (home / "extra-openai-models.yaml").write_text(yaml.safe_dump([model]), encoding="utf-8")
    env = {**os.environ, "LLM_USER_PATH": str(home)}
    cli = [str(Path(sys.executable).with_name("llm"))]
    keys = [*cli, "keys", "set", "hermes", "--value", gateway.api_key]
    subprocess.run(keys, env=env, check=True, capture_output=True, timeout=60)
    functions = 'def get_weather(city: str) -> str:\n    return f"sunny in {city}"\n'
    first = subprocess.run(
        [*cli, "-m", "hermes", "--functions", functions, QUESTION],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "Paris: sunny."
    rows = the_one_conversation(gateway)
    assert rows[2]["content"] == "sunny in Paris"
    again = subprocess.run(
        [*cli, "-c", "--functions", functions, "thanks"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "echo: thanks"
    assert len(the_one_conversation(gateway)) == 6
    assert weather_script.stats()["invalid_contexts"] == 0


def test_openai_agents_with_the_chat_completions_model(
    gateway: GatewayThread, weather_script
) -> None:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)

    async def run() -> str:
        client = AsyncOpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0)
        agent = Agent(
            name="weather",
            instructions="Answer about the weather.",
            tools=[function_tool(get_weather)],
            model=OpenAIChatCompletionsModel(model="fake-model", openai_client=client),
        )
        result = await Runner.run(agent, QUESTION)
        await client.close()
        return str(result.final_output)

    assert asyncio.run(run()) == "Paris: sunny."
    rows = the_one_conversation(gateway)
    assert json.loads(rows[1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
