"""MCP servers start as configured, wherever their program lives (#46): a virtualenv and a
script under /tmp, an ``npx``-style launcher that writes its cache in the home, with and
without ``sandbox: true``; a server down when a conversation starts joins it once up."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes.state import SessionDB
from hermes.testing import ports
from hermes.tools.mcp.hub import hub
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake
from tests.fakes.mcp_venv import McpVenv


@pytest.fixture(autouse=True)
def stop_servers() -> Iterator[None]:
    yield
    hub().close()


def configure(hermes_home: Path, servers: dict[str, Any]) -> None:
    (hermes_home / "config.yaml").write_text(
        yaml.safe_dump({"mcp_servers": servers}), encoding="utf-8"
    )


def tool_results(db: SessionDB, session_id: str | None) -> dict[str, str]:
    return {
        m["tool_call_id"]: m["content"] for m in db.get_messages(session_id) if m["role"] == "tool"
    }


def test_a_server_in_a_tmp_virtualenv_starts_as_configured(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path, mcp_venv: McpVenv
) -> None:
    # Hermes Agent's shape, unchanged: the venv's python and a script, both under /tmp.
    configure(
        hermes_home,
        {"tiny": {"command": str(mcp_venv.python), "args": [str(mcp_venv.server), "stdio"]}},
    )
    fake_llm.script(fake.tool_call("mcp__tiny__add", {"a": 2, "b": 3}, id="c1"), fake.text("ok"))
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True)
        agent.run("Add.")
        assert tool_results(db, agent.session_id) == {"c1": "5"}


@pytest.fixture
def npx_like(tmp_path: Path, mcp_venv: McpVenv, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The venv's ``npx``-like launcher, with a home of the test's own for its cache."""
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "user").mkdir()
    return mcp_venv.launcher


def test_an_npx_style_launcher_writes_its_cache_with_and_without_the_sandbox(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path, npx_like: Path
) -> None:
    configure(
        hermes_home,
        {
            "plain": {"command": str(npx_like), "args": ["plain"]},
            "boxed": {"command": str(npx_like), "args": ["boxed"], "sandbox": True},
        },
    )
    fake_llm.script(
        fake.tool_call("mcp__plain__add", {"a": 1, "b": 2}, id="c_plain"),
        fake.tool_call("mcp__boxed__add", {"a": 3, "b": 4}, id="c_boxed"),
        fake.tool_call("mcp__boxed__read", {"path": str(hermes_home / "config.yaml")}, id="c_hid"),
        fake.text("ok"),
    )
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True)
        agent.run("Add.")
        results = tool_results(db, agent.session_id)
    assert (results["c_plain"], results["c_boxed"]) == ("3", "7")
    home = tmp_path / "user"
    cache = home / ".npm" / "_npx" / "tiny"
    assert sorted(p.name for p in cache.iterdir()) == ["plain", "server.py"]
    # The sandboxed one wrote a cache of its own, not the one the user's npx runs from.
    own = home / ".cache" / "hermes-mcp" / "boxed" / ".npm" / "_npx" / "tiny"
    assert sorted(p.name for p in own.iterdir()) == ["boxed", "server.py"]
    # The sandboxed one still does not see hermes's home.
    assert results["c_hid"] == "cannot read: FileNotFoundError"


@pytest.fixture
def free_port() -> int:
    return ports.free_port()


def _serve_http(mcp_venv: McpVenv, port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [str(mcp_venv.python), str(mcp_venv.server), "http", str(port)],
        stderr=subprocess.DEVNULL,
    )
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the MCP HTTP server did not listen")


def test_a_server_down_at_the_start_joins_the_conversation_once_it_is_up(
    fake_llm: fake.FakeLLMServer,
    hermes_home: Path,
    tmp_path: Path,
    mcp_venv: McpVenv,
    free_port: int,
) -> None:
    configure(
        hermes_home, {"late": {"url": f"http://127.0.0.1:{free_port}/mcp", "connect_timeout": 5}}
    )
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True)
        fake_llm.script(fake.text("no server yet"))
        agent.run("Hello.")
        before = [t["function"]["name"] for t in fake_llm.requests[-1]["tools"]]
        assert not any(name.startswith("mcp__late__") for name in before)
        server = _serve_http(mcp_venv, free_port)
        try:
            time.sleep(2.2)  # past the back-off of its one failed start
            for _ in range(5):  # it joins at the first turn after it answers (a busy
                # machine may take more than one turn's short wait to start it)
                fake_llm.script(fake.text("checking"))
                agent.run("Anything new?")
                if "mcp__late__add" in _offered(fake_llm.requests[-1]):
                    break
            fake_llm.script(
                fake.tool_call("mcp__late__add", {"a": 40, "b": 2}, id="c1"), fake.text("ok")
            )
            agent.run("Add now.")
        finally:
            server.terminate()
            server.wait(timeout=10)
        assert tool_results(db, agent.session_id)["c1"] == "42"
    after = fake_llm.requests[-1]["tools"]
    # The tools offered before come first, byte for byte; the server's follow them.
    assert after[: len(before)] == fake_llm.requests[0]["tools"]
    assert "mcp__late__add" in [t["function"]["name"] for t in after[len(before) :]]


def _offered(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def test_a_crash_costs_one_error_and_a_failed_restart_says_why_then_backs_off(
    fake_llm: fake.FakeLLMServer,
    hermes_home: Path,
    tmp_path: Path,
    mcp_venv: McpVenv,
    caplog: pytest.LogCaptureFixture,
) -> None:
    starts, refuse = tmp_path / "starts", tmp_path / "refuse"
    env = {"FAKE_MCP_STARTS": str(starts), "FAKE_MCP_REFUSE": str(refuse)}
    configure(
        hermes_home,
        {
            "tiny": {
                "command": str(mcp_venv.python),
                "args": [str(mcp_venv.server), "stdio"],
                "env": env,
            }
        },
    )
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True)

        def turn(*calls: fake.Reply) -> dict[str, str]:
            fake_llm.script(*calls, fake.text("ok"))
            agent.run("Go.")
            return tool_results(db, agent.session_id)

        first = turn(
            fake.tool_call("mcp__tiny__die", {}, id="c_die"),
            fake.tool_call("mcp__tiny__echo", {"text": "again"}, id="c_echo"),
        )
        assert first["c_die"].startswith(
            "Error: the MCP server 'tiny' failed to run 'die': it exited with code 3"
        )
        assert first["c_echo"].endswith(": again")  # one crash, one tool error
        refuse.touch()  # from now on the server cannot start
        second = turn(
            fake.tool_call("mcp__tiny__die", {}, id="c_die2"),
            fake.tool_call("mcp__tiny__add", {"a": 1, "b": 1}, id="c_add"),
            fake.tool_call("mcp__tiny__add", {"a": 1, "b": 1}, id="c_add2"),
        )
        log = hermes_home / "logs" / "mcp-tiny.log"
        assert second["c_add"] == (
            "Error: the MCP server 'tiny' failed to start: it exited with code 4, its stderr "
            "ending: fake: reading settings | fake: DATABASE_URL is not set; cannot start "
            f"(full log: {log}); it will be started again on the next call after 2 seconds"
        )
        # Within the back-off the next call is the same sentence, without a start.
        assert second["c_add2"] == second["c_add"]
        assert len(starts.read_text().split()) == 3
        assert any("exited with code 4" in r.getMessage() for r in caplog.records)
        refuse.unlink()
        time.sleep(2.2)  # past the back-off
        third = turn(fake.tool_call("mcp__tiny__add", {"a": 2, "b": 2}, id="c_add3"))
        assert third["c_add3"] == "4"


def test_a_down_server_named_in_agent_toolsets_is_no_config_error(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path, free_port: int
) -> None:
    config = {
        "mcp_servers": {"late": {"url": f"http://127.0.0.1:{free_port}/mcp"}},
        "agent": {"toolsets": ["mcp-late", "memory"]},
    }
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    fake_llm.script(fake.text("fine"))
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True)
        assert agent.run("Hello.").answer == "fine"
    assert [t["function"]["name"] for t in fake_llm.requests[-1]["tools"]] == ["memory"]


def test_the_first_turn_does_not_wait_for_a_server_it_does_not_call(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path, mcp_venv: McpVenv
) -> None:
    hold, starts = tmp_path / "hold", tmp_path / "starts"
    # The server's program starts only once `hold` is gone: a slow server (npx fetching).
    slow = f'while [ -e "{hold}" ]; do sleep 0.05; done; exec "{mcp_venv.python}" "{mcp_venv.server}" stdio'
    configure(
        hermes_home,
        {
            "slow": {
                "command": "/bin/sh",
                "args": ["-c", slow],
                "env": {"FAKE_MCP_STARTS": str(starts)},
                "connect_timeout": 30,
            }
        },
    )
    with SessionDB(db_path=tmp_path / "state.db") as db:
        fake_llm.script(fake.text("hello"))
        fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True).run("Hi.")
        assert "mcp__slow__add" in _offered(fake_llm.requests[-1])  # listed once, remembered
        hub().close()  # as a new process: the server starts again, and takes its time
        hold.touch()
        try:
            agent = fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True)
            fake_llm.script(fake.text("answered"))
            agent.run("Quick question.")
            # The turn is done while the server is still starting; its tools were offered.
            assert starts.read_text().count("\n") == 1
            assert "mcp__slow__add" in _offered(fake_llm.requests[-1])
            hold.unlink()
            fake_llm.script(
                fake.tool_call("mcp__slow__add", {"a": 2, "b": 3}, id="c1"), fake.text("ok")
            )
            agent.run("Add.")  # a call waits for the start it needs
        finally:
            hold.unlink(missing_ok=True)
        assert tool_results(db, agent.session_id) == {"c1": "5"}


def test_a_server_the_turn_waits_for_is_named_before_the_wait(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path, mcp_venv: McpVenv
) -> None:
    # A person sees which server the first turn waits for, not just "Thinking…"; one
    # offered from the cache is not waited for, so it is not named.
    configure(
        hermes_home,
        {"tiny": {"command": str(mcp_venv.python), "args": [str(mcp_venv.server), "stdio"]}},
    )
    events: list[tuple[str, dict[str, Any]]] = []

    def record(kind: str, data: dict[str, Any]) -> None:
        events.append((kind, dict(data, requests_sent=len(fake_llm.requests))))

    with SessionDB(db_path=tmp_path / "state.db") as db:
        fake_llm.script(fake.text("hello"))
        fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True, event_callback=record).run("Hi.")
        waiting = [data for kind, data in events if kind == "tools_waiting"]
        assert [w["servers"] for w in waiting] == [["tiny"]]
        assert waiting[0]["requests_sent"] == 0  # said while the turn waits, before its request
        hub().close()  # a new process: now the server's tools come from the cache
        events.clear()
        fake_llm.script(fake.text("again"))
        fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True, event_callback=record).run("Hi.")
        assert [kind for kind, _ in events if kind == "tools_waiting"] == []
