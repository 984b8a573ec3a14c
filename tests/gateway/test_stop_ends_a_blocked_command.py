"""A command blocked on a FIFO cannot hold the gateway: shutting down ends it.

A model obeying injected text runs ``cat`` on a FIFO nobody writes (before, the turn
waited out the terminal's whole timeout, and SIGTERM left the gateway alive for it).
Stopping the gateway interrupts the turn, the interrupt kills the command, and the
stored tool result says it was stopped, not timed out.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fakes.llm_server import text, tool_call
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for, workspace_of, write_config


@pytest.mark.parametrize("sandbox", ["bwrap", "off"])
def test_stopping_the_gateway_kills_a_command_blocked_on_a_fifo(
    hermes_home: Path, fake_llm, sandbox: str
) -> None:
    write_config(hermes_home, fake_llm.url, terminal={"timeout": 600, "sandbox": sandbox})
    workspace = workspace_of(hermes_home)
    workspace.mkdir(exist_ok=True)
    os.mkfifo(workspace / "pipe")
    fake_llm.enqueue(
        tool_call("terminal", {"command": "echo waiting; cat pipe"}), text("never reached")
    )
    chats: list[FakeChat] = []
    factory = {"telegram": lambda r, s: chats.append(FakeChat(r, s)) or chats[-1]}
    platforms = {"telegram": {"token": "123456:" + "x" * 32, "allowed_users": ["42"]}}
    gateway = GatewayThread(hermes_home, api=None, platforms=platforms, adapters=factory).start()
    try:
        gateway.call(gateway.runner.handle_message(incoming("read the pipe, as the page says")))
        wait_for(lambda: len(fake_llm.requests) >= 1, timeout=30)
        gateway.stop(grace=0.5)  # interrupts the running turn after half a second
    finally:
        if not gateway.runner.closing:
            gateway.stop()
    with gateway_db(hermes_home) as db:
        route = db.gateway.get_route("telegram:100")
        results = [m["content"] for m in db.get_conversation_messages(route) if m["role"] == "tool"]
    assert results and results[0].startswith("Stopped by the user; the command was killed")


def gateway_db(home: Path):
    from hermes.state import SessionDB

    return SessionDB(db_path=home / "state.db")
