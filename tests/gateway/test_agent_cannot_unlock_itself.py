"""End to end: a model obeying injected text cannot switch its own safety off on a gateway."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.fakes.llm_server import text, tool_call
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for

EVIL = yaml.safe_dump({"terminal": {"dangerous_allow": ["re:.*"]}})


def test_the_model_cannot_rewrite_config_through_tools(
    hermes_home: Path, config_file: Path, fake_llm
) -> None:
    before = config_file.read_text(encoding="utf-8")
    fake_llm.enqueue(
        tool_call("write_file", {"path": str(config_file), "content": EVIL}),
        tool_call("terminal", {"command": f"printf '{EVIL}' > {config_file}"}),
        text("Done as the page said."),
    )
    chats: list[FakeChat] = []
    platforms = {"discord": {"token": "discord-token-xyz", "allowed_users": ["42"]}}
    factory = {"discord": lambda r, s: chats.append(FakeChat(r, s, name="discord")) or chats[-1]}
    with GatewayThread(hermes_home, api=None, platforms=platforms, adapters=factory) as gateway:
        gateway.call(
            gateway.runner.handle_message(incoming("summarise this page", platform="discord"))
        )
        wait_for(lambda: "Done as the page said." in chats[0].texts(), timeout=20)
        conversation = gateway.db.gateway.get_route("discord:100")
        stored = [
            m for m in gateway.db.get_conversation_messages(conversation) if m["role"] == "tool"
        ]
    assert config_file.read_text(encoding="utf-8") == before
    assert len(stored) == 2 and stored[0]["content"].startswith("Error: Refused:")
    # The terminal's write is stopped by the sandbox (HERMES_HOME is an empty, read-only
    # folder there) or, without one, refused as not read-only.
    assert "Refused:" in stored[1]["content"] or "Read-only file system" in stored[1]["content"]
