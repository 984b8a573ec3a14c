"""MCP servers behind the HTTP API: listed in /v1/toolsets, and a hanging server is a
tool error in the answer, never a stuck request or a fallen gateway."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from hermes.tools.mcp_hub import hub
from tests.fakes import llm_server as fake
from tests.gateway.api_calls import call
from tests.gateway.harness import GatewayThread, write_config

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def mcp_gateway(hermes_home: Path, fake_llm, model_key: str) -> Iterator[GatewayThread]:
    server = {
        "command": sys.executable,
        "args": ["-m", "tests.fakes.mcp_server", "stdio"],
        "cwd": str(REPO),
        "timeout": 1,
    }
    write_config(hermes_home, fake_llm.url, mcp_servers={"fake": server})
    try:
        with GatewayThread(hermes_home) as running:
            yield running
    finally:
        hub().close()


def test_toolsets_list_the_server_and_a_hang_is_an_answer(
    mcp_gateway: GatewayThread, fake_llm: fake.FakeLLMServer
) -> None:
    status, toolsets = call(mcp_gateway, "GET", "/v1/toolsets")
    assert status == 200
    by_name = {row["name"]: row for row in toolsets["data"]}
    assert "mcp__fake__echo" in by_name["mcp-fake"]["tools"]
    assert by_name["mcp-fake"]["enabled"] is True
    fake_llm.script(
        fake.tool_call("mcp__fake__hang", {"seconds": 600}, id="c_hang"),
        fake.text("The tool hung."),
    )
    with openai.OpenAI(
        base_url=mcp_gateway.url, api_key=mcp_gateway.api_key, max_retries=0, timeout=60
    ) as client:
        answer = client.chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": "try it"}]
        )
    assert answer.choices[0].message.content == "The tool hung."
    tool_result = fake_llm.requests[-1]["messages"][-1]
    assert tool_result["role"] == "tool"
    assert "did not run 'hang' within 1 seconds" in tool_result["content"]
    status, health = call(mcp_gateway, "GET", "/health/detailed")
    assert status == 200 and health["status"] == "ok"
