"""MCP servers end to end: a real server written with the ``mcp`` SDK
(tests/fakes/mcp_server.py), over stdio and streamable HTTP, called by the fake model's
scripted tool calls through a real agent."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes.state import SessionDB
from hermes.testing.ports import free_port
from hermes.tools.mcp.hub import hub
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake

REPO = Path(__file__).resolve().parents[2]
SECRET = "fake-mcp-token-5f1e2d3c"


@pytest.fixture(autouse=True)
def stop_servers() -> Iterator[None]:
    """Each test's servers stop with it (the hub is the process's)."""
    yield
    hub().close()


def stdio_server(starts: Path, **extra: Any) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", "tests.fakes.mcp_server", "stdio"],
        "cwd": str(REPO),
        "env": {"FAKE_MCP_STARTS": str(starts), "FAKE_API_TOKEN": SECRET},
        **extra,
    }


def configure(hermes_home: Path, servers: dict[str, Any], **settings: Any) -> None:
    """``servers`` as ``mcp_servers``; stdio servers run in the sandbox, so a test names
    its ``tmp_path`` as the workspace (``tools={"workspace": ...}``) where they may write."""
    (hermes_home / "config.yaml").write_text(
        yaml.safe_dump({"mcp_servers": servers, **settings}), encoding="utf-8"
    )


def workspace(path: Path) -> dict[str, str]:
    return {"workspace": str(path)}


def run_turn(fake_llm: fake.FakeLLMServer, tmp_path: Path, *calls: fake.Reply) -> dict[str, str]:
    """One turn making ``calls`` in order; the tool results by call id."""
    fake_llm.script(*calls, fake.text("done"))
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True)
        result = agent.run("Use the tools.")
        tools = {
            m["tool_call_id"]: m["content"]
            for m in db.get_messages(agent.session_id)
            if m["role"] == "tool"
        }
    assert result.answer == "done"
    return tools


def test_a_stdio_tool_call_round_trips_with_its_schema(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path
) -> None:
    configure(hermes_home, {"fake": stdio_server(tmp_path / "starts")}, tools=workspace(tmp_path))
    results = run_turn(
        fake_llm,
        tmp_path,
        fake.tool_call("mcp__fake__add", {"a": 2, "b": 3}, id="c_add"),
        fake.tool_call("mcp__fake__env", {"name": "FAKE_API_TOKEN"}, id="c_env"),
        fake.tool_call("mcp__fake__fail", {}, id="c_fail"),
    )
    assert results["c_add"] == "5"
    # The server's key reaches the server, never the model or the store.
    assert results["c_env"] == "[redacted]"
    assert results["c_fail"].startswith("Error: the MCP tool 'fail' of 'fake' reported:")
    offered = {t["function"]["name"]: t["function"] for t in fake_llm.requests[0]["tools"]}
    assert set(offered["mcp__fake__add"]["parameters"]["properties"]) == {"a", "b"}
    assert offered["mcp__fake__add"]["description"] == "Add two whole numbers."


def test_a_server_killed_mid_call_is_an_error_and_the_next_call_restarts_it(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path
) -> None:
    starts = tmp_path / "starts"
    configure(hermes_home, {"fake": stdio_server(starts)}, tools=workspace(tmp_path))
    results = run_turn(
        fake_llm,
        tmp_path,
        fake.tool_call("mcp__fake__die", {}, id="c_die"),
        fake.tool_call("mcp__fake__echo", {"text": "still here"}, id="c_echo"),
    )
    assert results["c_die"].startswith("Error: the MCP server 'fake' failed to run 'die'")
    first, second = starts.read_text().split()
    assert results["c_echo"] == f"{second}: still here" and first != second


def test_a_hanging_server_times_out_and_the_turn_goes_on(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path
) -> None:
    configure(
        hermes_home,
        {"fake": stdio_server(tmp_path / "starts", timeout=1)},
        tools=workspace(tmp_path),
    )
    results = run_turn(
        fake_llm,
        tmp_path,
        fake.tool_call("mcp__fake__hang", {"seconds": 600}, id="c_hang"),
        fake.tool_call("mcp__fake__echo", {"text": "after"}, id="c_echo"),
    )
    assert results["c_hang"] == (
        "Error: the MCP server 'fake' did not run 'hang' within 1 seconds; "
        "it was stopped and will be started again on the next call"
    )
    assert results["c_echo"].endswith(": after")


def test_a_server_that_cannot_start_offers_nothing_and_others_work(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path
) -> None:
    configure(
        hermes_home,
        {
            "broken": {"command": str(tmp_path / "no-such-server"), "connect_timeout": 5},
            "fake": stdio_server(tmp_path / "starts"),
        },
        tools=workspace(tmp_path),
    )
    results = run_turn(
        fake_llm, tmp_path, fake.tool_call("mcp__fake__add", {"a": 1, "b": 1}, id="c1")
    )
    assert results["c1"] == "2"
    offered = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert not any(name.startswith("mcp__broken__") for name in offered)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.mcp_server", "http", str(port), SECRET],
        cwd=REPO,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    for _ in range(300):
        if process.poll() is not None:
            raise RuntimeError("the fake MCP HTTP server exited at start")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the fake MCP HTTP server did not listen")


def test_a_streamable_http_tool_call_round_trips_with_headers(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path, http_server: str
) -> None:
    configure(
        hermes_home,
        {"remote": {"url": http_server, "headers": {"Authorization": f"Bearer {SECRET}"}}},
    )
    results = run_turn(
        fake_llm, tmp_path, fake.tool_call("mcp__remote__add", {"a": 20, "b": 22}, id="c1")
    )
    assert results["c1"] == "42"


def test_hermes_agents_enabled_toolsets_can_name_a_server(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path
) -> None:
    from run_agent import AIAgent

    configure(hermes_home, {"fake": stdio_server(tmp_path / "starts")}, tools=workspace(tmp_path))
    agent = AIAgent(
        base_url=fake_llm.url, api_key="k", model=fake.DEFAULT_MODEL, enabled_toolsets=["mcp-fake"]
    )
    assert agent.tool_names() == [
        "mcp__fake__echo", "mcp__fake__add", "mcp__fake__die",
        "mcp__fake__hang", "mcp__fake__env", "mcp__fake__read", "mcp__fake__fail",
    ]  # fmt: skip


def test_a_stdio_server_runs_as_configured_unless_its_entry_asks_for_the_sandbox(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path
) -> None:
    configure(
        hermes_home,
        {
            "boxed": stdio_server(tmp_path / "starts", sandbox=True),
            "trusted": stdio_server(tmp_path / "starts"),
        },
        tools=workspace(tmp_path),
    )
    config_file = str(hermes_home / "config.yaml")
    results = run_turn(
        fake_llm,
        tmp_path,
        fake.tool_call("mcp__boxed__read", {"path": config_file}, id="c_boxed"),
        fake.tool_call("mcp__trusted__read", {"path": config_file}, id="c_trusted"),
    )
    # HERMES_HOME is hidden from a sandboxed server (its config.yaml is not there) ...
    assert results["c_boxed"] == "cannot read: FileNotFoundError"
    # ... and visible to one started as configured (the default).
    assert "mcp_servers" in results["c_trusted"]
