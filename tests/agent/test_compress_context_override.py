"""Hermes Agent's extension point ``AIAgent._compress_context``: a subclass or a patch that
overrides it sees every compression the agent does, called as 0.19's turn loop calls it
(``messages, system_message, approx_tokens=..., task_id=...``), so an override written
for 0.19 (its signature, delegating to ``super()``) runs unchanged. Real SQLite stores,
the fake model over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes.agent import AIAgent as HermesAIAgent
from hermes.config import load_config
from hermes.state import SessionDB
from run_agent import AIAgent
from tests.fakes import llm_server as fake

SMALL_WINDOW = "model:\n  context_length: 1200\ncompression:\n  threshold: 0.5\n"


class CountingAgent(AIAgent):
    """An override as a 0.19 user writes one: its signature, counting, then ``super()``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.compressions: list[dict[str, Any]] = []

    def _compress_context(
        self,
        messages: list,
        system_message: str,
        *,
        approx_tokens: int | None = None,
        task_id: str = "default",
        focus_topic: str | None = None,
        force: bool = False,
    ) -> tuple:
        self.compressions.append(
            {"size": len(messages), "approx_tokens": approx_tokens, "task_id": task_id}
        )
        return super()._compress_context(
            messages,
            system_message,
            approx_tokens=approx_tokens,
            task_id=task_id,
            focus_topic=focus_topic,
            force=force,
        )


@pytest.fixture
def db(tmp_path: Path):
    with SessionDB(db_path=tmp_path / "state.db") as store:
        yield store


def small_window(home: Path) -> None:
    (home / "config.yaml").write_text(SMALL_WINDOW, encoding="utf-8")


def summarising(body: dict) -> fake.Reply:
    if "summar" in str(body.get("messages")).lower() and not body.get("tools"):
        return fake.text("SUMMARY OF EARLIER TURNS")
    return fake.text("x" * 400)


def counting_agent(server: fake.FakeLLMServer, db: SessionDB | None) -> CountingAgent:
    return CountingAgent(
        api_key="k",
        base_url=server.url,
        model=fake.DEFAULT_MODEL,
        quiet_mode=True,
        session_db=db,
        skip_context_files=True,
        skip_memory=True,
        config=load_config(),
    )


def test_an_override_sees_the_automatic_compression_of_a_long_conversation(
    fake_llm, db, hermes_home: Path
) -> None:
    small_window(hermes_home)
    fake_llm.responder = summarising
    agent = counting_agent(fake_llm, db)
    for i in range(8):
        agent.run_conversation(f"question {i} " + "y" * 300)

    chain = db.get_lineage(agent.session_id)
    assert len(chain) >= 2, "the conversation never compressed"
    # Each compression went through the override, with 0.19's arguments.
    assert len(agent.compressions) >= len(chain) - 1
    assert all(c["approx_tokens"] and c["task_id"] for c in agent.compressions)
    assert db.invariant_violations() == []


def test_an_override_sees_the_compression_after_a_context_length_error(fake_llm, db) -> None:
    agent = counting_agent(fake_llm, db)
    for i in range(4):
        fake_llm.script(fake.text(f"answer {i} " + "z" * 200))
        agent.run_conversation(f"turn {i} " + "w" * 200)
    assert agent.compressions == []  # the window is large: nothing was due
    fake_llm.script(fake.context_length_exceeded(900), fake.text("SUMMARY"), fake.text("after"))

    assert agent.chat("one more") == "after"
    assert len(agent.compressions) == 1
    assert len(db.get_lineage(agent.session_id)) == 2


def test_an_override_sees_the_compression_of_a_callers_own_history(
    fake_llm, db, hermes_home: Path
) -> None:
    small_window(hermes_home)
    fake_llm.responder = summarising
    agent = counting_agent(fake_llm, db)
    agent.run_conversation("hello")
    # A history the store does not hold: this turn's context only, compressed in memory.
    theirs = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"their {i} " + "v" * 400}
        for i in range(10)
    ]
    out = agent.run_conversation("and now?", conversation_history=theirs)

    assert len(agent.compressions) == 1
    assert out["final_response"]
    assert any("SUMMARY OF EARLIER TURNS" in str(m.get("content")) for m in out["messages"])
    # Nothing of the caller's history reached the store, and nothing rotated.
    assert len(db.get_lineage(agent.session_id)) == 1
    stored = [m["content"] for m in db.get_messages(agent.session_id)]
    assert not any(str(c).startswith("their ") for c in stored)


def test_compress_calls_an_override_with_0_19s_signature(fake_llm, db) -> None:
    fake_llm.responder = summarising
    agent = counting_agent(fake_llm, db)
    for i in range(3):
        agent.run_conversation(f"short {i}")

    outcome = agent.compress_now()  # a short conversation: summarised whole on the retry

    assert outcome.rotated
    assert len(agent.compressions) == 2


def test_a_patched_override_that_raises_fails_the_turn_and_changes_nothing(
    fake_llm, db, hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_window(hermes_home)
    fake_llm.responder = summarising
    agent = counting_agent(fake_llm, db)
    agent.run_conversation("question 0 " + "y" * 300)
    before = [(m["role"], m["content"]) for m in db.get_messages(agent.session_id)]
    calls = []

    def broken(self: HermesAIAgent, messages: list, system_message: str, **kwargs: Any) -> tuple:
        calls.append(kwargs)
        raise RuntimeError("the override broke")

    monkeypatch.setattr(HermesAIAgent, "_compress_context", broken)
    asked = 0
    with pytest.raises(RuntimeError, match="the override broke"):
        for asked in range(1, 8):
            agent.run_conversation(f"question {asked} " + "y" * 300)

    assert len(calls) == 1
    segment = agent.session_id
    assert db.get_lineage(segment) == [segment]  # nothing rotated
    assert db.get_compression_lock_holder(segment) is None
    rows = [(m["role"], m["content"]) for m in db.get_messages(segment)]
    # What was stored before stays; the failed turn's question is stored once.
    assert rows[: len(before)] == before
    assert [c for r, c in rows if r == "user"][-1] == f"question {asked} " + "y" * 300
    assert db.invariant_violations() == []
    monkeypatch.undo()
    assert agent.chat("again")  # the next turn compresses and answers
    assert len(db.get_lineage(agent.session_id)) == 2
