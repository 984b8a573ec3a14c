"""``on_session_finalize`` in a gateway chat, as 0.19's gateway fires it at ``/new``
(``reason: new_session``): a titling plugin registered as hermes-session-titler
registers itself titles the conversation the chat left. A real gateway on a real SQLite
store, a fake Telegram chat, the fake model over HTTP."""

from __future__ import annotations

from pathlib import Path

from tests.gateway.harness import wait_for, write_config
from tests.gateway.one_chat import chat_gateway, conversation, say
from tests.plugins.helpers import TITLER_INIT, TITLER_MANIFEST, install_plugin


def test_a_chats_new_finalizes_the_conversation_it_leaves(hermes_home: Path, fake_llm) -> None:
    plugin = install_plugin(hermes_home, "titler", TITLER_MANIFEST, TITLER_INIT)
    write_config(hermes_home, fake_llm.url, plugins={"enabled": ["titler"]})
    gateway = chat_gateway(hermes_home)
    try:
        say(gateway, "how do I feed a starter")
        wait_for(lambda: "echo: how do I feed a starter" in gateway.chat.texts(), timeout=30)
        first = conversation(gateway)
        say(gateway, "/new")
        wait_for(lambda: "Started a new conversation." in gateway.chat.texts(), timeout=30)
        titled = gateway.db.get_session(first)
    finally:
        gateway.stop()
    finals = [line.split() for line in (plugin / "fired.log").read_text().splitlines()
              if line.startswith("finalize")]  # fmt: skip
    assert finals == [["finalize", first, "telegram", "new_session"]]
    assert titled is not None and titled["title"] == f"Titled {first}"
