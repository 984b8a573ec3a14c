"""The chat's commands for tools and the install in a messaging chat and the HTTP API:
/reload-mcp (Telegram's /reload_mcp), /debug, /update and /version answer there, as in
Hermes Agent 0.19; /tools, /skills and /platforms change or show the operator's profile,
so they are the terminal's and are refused in words."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from hermes import __version__
from hermes.install import this_install
from hermes.tools.mcp.hub import hub
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for, write_config

REPO = Path(__file__).resolve().parents[2]
TOKEN = "123456:telegram-token-of-the-tool-commands"


@pytest.fixture
def tool_gateway(hermes_home: Path, fake_llm, model_key: str) -> Iterator[GatewayThread]:
    server = {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"],
              "cwd": str(REPO)}  # fmt: skip
    write_config(hermes_home, fake_llm.url, mcp_servers={"fake": server})
    chats: list[FakeChat] = []

    def make(runner, settings):
        chats.append(FakeChat(runner, settings))
        return chats[0]

    platforms = {"telegram": {"token": TOKEN, "allowed_users": [42]}}
    try:
        with GatewayThread(hermes_home, platforms=platforms, adapters={"telegram": make}) as gw:
            gw.chat = chats[0]
            yield gw
    finally:
        hub().close()


def say(gateway: GatewayThread, text: str) -> str:
    """Send ``text`` from user 42 and wait for the one answer it gets."""
    before = len(gateway.chat.texts())

    async def deliver() -> None:
        await gateway.runner.handle_message(incoming(text))

    gateway.call(deliver())
    wait_for(lambda: len(gateway.chat.texts()) > before, timeout=60)
    return gateway.chat.texts()[before]


def test_a_messaging_chat_runs_the_install_and_mcp_commands(tool_gateway, hermes_home: Path):
    assert say(tool_gateway, "/version").startswith(f"hermes {__version__} (Python ")
    assert this_install().update in say(tool_gateway, "/update")
    reloaded = say(tool_gateway, "/reload_mcp")
    assert "1 of 1 server connected" in reloaded and "fake: connected" in reloaded
    debug = say(tool_gateway, "/debug")
    (report,) = (hermes_home / "logs").glob("debug-*.txt")
    assert f"Wrote a debug report logs/{report.name} in the gateway's home" in debug
    assert TOKEN not in report.read_text(encoding="utf-8")
    assert "uploads nothing" in say(tool_gateway, "/debug nous")


@pytest.mark.parametrize("line", ["/tools", "/tools disable terminal", "/skills install x",
                                  "/platforms", "/gateway"])  # fmt: skip
def test_the_profiles_commands_are_refused_in_a_messaging_chat(
    tool_gateway, hermes_home: Path, line: str
):
    answer = say(tool_gateway, line)
    assert "works in the terminal chat only" in answer
    config = (hermes_home / "config.yaml").read_text(encoding="utf-8")
    assert "toolsets" not in config and not (hermes_home / "skills").exists()


def test_the_http_api_answers_the_same(tool_gateway):
    with openai.OpenAI(
        base_url=tool_gateway.url, api_key=tool_gateway.api_key, max_retries=0, timeout=60
    ) as client:
        version, refused = (
            client.chat.completions.create(
                model="hermes-agent", messages=[{"role": "user", "content": line}]
            )
            .choices[0]
            .message.content
            for line in ("/version", "/tools disable terminal")
        )
    assert version.startswith(f"hermes {__version__}")
    assert "works in the terminal chat only" in refused
