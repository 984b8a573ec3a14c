"""The tools and install commands in `hermes chat` itself, through a pseudo-terminal:
the chat offers /platforms (registered by the gateway room, which the chat imports),
and a /tools change reaches the next turn."""

from __future__ import annotations

from hermes import __version__
from tests.cli.chat_pty import PROMPT


def offered(fake_llm) -> set[str]:
    return {t["function"]["name"] for t in fake_llm.requests[-1].get("tools") or []}


def test_the_chat_runs_the_tools_and_install_commands(chat, cli_env, fake_llm):
    session = chat()
    session.command("/platforms", "Gateway is not running")
    session.command("/version", f"hermes {__version__}")
    session.command("/debug", "Wrote a debug report to")
    session.command("/tools disable terminal", "Disabled terminal for this profile")
    session.say("hello", "echo: hello")
    session.expect(PROMPT)
    assert "terminal" not in offered(fake_llm) and "read_file" in offered(fake_llm)
    assert session.leave() == 0
    assert list((cli_env.home / "logs").glob("debug-*.txt"))
