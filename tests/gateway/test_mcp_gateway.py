"""MCP servers behind the HTTP API: listed in /v1/toolsets (each configured server, up
or not), a hanging or killed server is a tool error in the answer, never a stuck
request or a fallen gateway, a server down at the start joins the conversation once up,
and cron jobs name MCP servers as toolsets."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from hermes.testing import ports
from hermes.tools.mcp.hub import hub
from tests.fakes import llm_server as fake
from tests.fakes.mcp_venv import McpVenv
from tests.gateway.api_calls import ask, call
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


@pytest.fixture
def free_port() -> int:
    return ports.free_port()


@pytest.fixture
def venv_gateway(
    hermes_home: Path, fake_llm: fake.FakeLLMServer, mcp_venv: McpVenv, free_port: int
) -> Iterator[GatewayThread]:
    """A gateway whose ``mcp_servers`` are in Hermes Agent's shape: a stdio server from a
    virtualenv under /tmp, and an HTTP one on loopback that is down at the start."""
    servers = {
        "tiny": {"command": str(mcp_venv.python), "args": [str(mcp_venv.server), "stdio"]},
        "late": {"url": f"http://127.0.0.1:{free_port}/mcp", "connect_timeout": 5},
    }
    write_config(hermes_home, fake_llm.url, mcp_servers=servers)
    try:
        with GatewayThread(hermes_home) as running:
            yield running
    finally:
        hub().close()


def test_a_killed_server_costs_one_error_and_a_late_one_joins_the_conversation(
    venv_gateway: GatewayThread, fake_llm: fake.FakeLLMServer, mcp_venv: McpVenv, free_port: int
) -> None:
    status, toolsets = call(venv_gateway, "GET", "/v1/toolsets")
    by_name = {row["name"]: row for row in toolsets["data"]}
    assert "mcp__tiny__add" in by_name["mcp-tiny"]["tools"]
    # A configured server that does not answer is listed, with no tools, saying so.
    assert (by_name["mcp-tiny"]["label"], by_name["mcp-tiny"]["enabled"]) == ("MCP: tiny", True)
    assert (by_name["mcp-late"]["tools"], by_name["mcp-late"]["enabled"]) == ([], True)
    assert "not answering" in by_name["mcp-late"]["description"]
    fake_llm.script(
        fake.tool_call("mcp__tiny__die", {}, id="c_die"),
        fake.tool_call("mcp__tiny__add", {"a": 2, "b": 2}, id="c_add"),
        fake.text("first"),
    )
    with openai.OpenAI(
        base_url=venv_gateway.url, api_key=venv_gateway.api_key, max_retries=0, timeout=60
    ) as client:
        answer, session = ask(client, "go")
        assert answer == "first"
        results = _tool_results(fake_llm.requests[-1])
        assert results[0].startswith("Error: the MCP server 'tiny' failed to run 'die': it exited")
        assert results[1] == "4"
        assert not any(t.startswith("mcp__late__") for t in _offered(fake_llm.requests[-1]))
        server = subprocess.Popen(
            [str(mcp_venv.python), str(mcp_venv.server), "http", str(free_port)],
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for_port(free_port)
            time.sleep(2.2)  # past the back-off of its failed start
            for _ in range(5):  # it joins at the first turn after it answers (a busy
                # machine may take more than one turn's short wait to start it)
                fake_llm.script(fake.text("checking"))
                ask(client, "anything new?", session)
                if "mcp__late__add" in _offered(fake_llm.requests[-1]):
                    break
            fake_llm.script(
                fake.tool_call("mcp__late__add", {"a": 40, "b": 2}, id="c_late"),
                fake.text("second"),
            )
            assert ask(client, "again", session)[0] == "second"
        finally:
            server.terminate()
            server.wait(timeout=10)
    assert _tool_results(fake_llm.requests[-1])[-1] == "42"


def test_jobs_name_their_toolsets_and_an_unknown_name_is_refused(
    mcp_gateway: GatewayThread,
) -> None:
    job = {"name": "digest", "schedule": "every 1h", "prompt": "sum up"}
    status, made = call(
        mcp_gateway, "POST", "/api/jobs", json={**job, "enabled_toolsets": ["mcp-fake", "files"]}
    )
    assert status == 200, made
    assert made["job"]["enabled_toolsets"] == ["mcp-fake", "files"]
    job_id = made["job"]["id"]
    status, changed = call(
        mcp_gateway, "PATCH", f"/api/jobs/{job_id}", json={"enabled_toolsets": ["fake"]}
    )
    assert status == 200 and changed["job"]["enabled_toolsets"] == ["fake"]
    status, refused = call(
        mcp_gateway, "POST", "/api/jobs", json={**job, "enabled_toolsets": ["mcp-nope"]}
    )
    assert status == 400
    assert refused["error"].startswith("'mcp-nope' is neither a toolset nor a tool here;")
    status, refused = call(mcp_gateway, "PATCH", f"/api/jobs/{job_id}", json={"toolsets": ["web"]})
    assert status == 400 and "'web' is neither a toolset nor a tool here" in refused["error"]


def _tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def _offered(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def _wait_for_port(port: int) -> None:
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the MCP HTTP server did not listen")
