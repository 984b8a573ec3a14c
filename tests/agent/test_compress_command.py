"""`/compress` says what it did in numbers a user can trust."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes.agent.commands import dispatch
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake
from tests.stores import DBFactory


def test_compressing_a_short_chat_says_the_summary_saved_nothing(
    fake_llm: fake.FakeLLMServer, make_db: DBFactory, hermes_home: Path
) -> None:
    (hermes_home / "config.yaml").write_text(
        "compression:\n  enabled: false\n  cooldown_seconds: 0\n"
    )

    def wordy_summaries(body: dict[str, Any]) -> fake.Reply | None:
        if "compact the history" in str(body["messages"][0].get("content")):
            return fake.text("The user greeted the assistant, who answered. " * 12)
        return None

    fake_llm.responder = wordy_summaries
    agent = fake_agent(fake_llm, make_db(), skip_memory=True, tools=[])
    agent.chat("hi")
    reply = dispatch(agent, "/compress")
    assert reply.ok, reply.text
    before, after = reply.data["outcome"].tokens_before, reply.data["outcome"].tokens_after
    assert after >= before  # the premise: a summary longer than the chat
    assert "nothing was saved" in reply.text, reply.text
