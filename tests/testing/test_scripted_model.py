"""``hermes.testing.ScriptedModel`` drives a real ``AIAgent`` on a real SQLite store:
a tool call and its answer, a compression (the summary asked through the same model),
streaming, interrupts, a background review's fork, and a script that runs out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.agent import AIAgent
from hermes.agent.errors import TurnInterrupted
from hermes.config import load_config
from hermes.state import SessionDB
from hermes.testing import (
    ScriptedModel,
    ScriptExhausted,
    context_length_exceeded,
    text,
    tool_call,
)
from tests.scripted import scripted_agent


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=tmp_path / "state.db") as store:
        yield store


def test_a_scripted_model_drives_a_tool_call_and_an_answer_into_the_store(
    db: SessionDB, tmp_path: Path, hermes_home: Path
) -> None:
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    model = ScriptedModel([tool_call("read_file", {"path": "notes.txt"}), "It says 42."])
    agent = scripted_agent(db, model, cwd=tmp_path)

    assert agent.chat("What is in notes.txt?") == "It says 42."

    rows = db.get_messages(agent.session_id)
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[1]["tool_calls"][0]["function"]["name"] == "read_file"
    assert "the answer is 42" in rows[2]["content"]
    first, second = model.requests
    assert "read_file" in first.tool_names
    assert first.messages[0]["role"] == "system"
    assert first.last_user_text == "What is in notes.txt?"
    # The second request carries the tool's result, as an endpoint would get it.
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "tool"]
    assert "the answer is 42" in second.messages[-1]["content"]
    assert model.remaining == 0


def test_a_context_length_failure_compresses_through_the_same_model(
    db: SessionDB, hermes_home: Path
) -> None:
    model = ScriptedModel()
    agent = scripted_agent(db, model)
    for n in range(4):
        model.add(f"answer {n} " + "z" * 200)
        agent.chat(f"turn {n} " + "w" * 200)
    model.add(context_length_exceeded(900), "SUMMARY OF THE TALK", "after")

    assert agent.chat("one more") == "after"

    chain = db.get_lineage(agent.session_id)
    assert len(chain) == 2, "the conversation did not compress"
    summary_request = model.requests[-2]
    assert summary_request.tools == []  # the summariser asks without tools
    assert summary_request.messages[0]["content"].startswith("You compact the history")
    assert "<transcript>" in summary_request.last_user_text
    child = [m["content"] or "" for m in db.get_messages(chain[1])]
    assert any("SUMMARY OF THE TALK" in content for content in child)
    assert db.invariant_violations() == []


def test_a_function_answers_once_the_script_is_used_up(db: SessionDB, hermes_home: Path) -> None:
    model = ScriptedModel(["first"], function=lambda request: f"echo {request.last_user_text}")
    agent = scripted_agent(db, model)

    assert agent.chat("a") == "first"
    assert agent.chat("b") == "echo b"
    assert agent.chat("c") == "echo c"


def test_a_script_used_up_says_so(db: SessionDB, hermes_home: Path) -> None:
    agent = scripted_agent(db, ScriptedModel([text("only")]))
    agent.chat("one")

    with pytest.raises(ScriptExhausted, match="request 2 but its script is used up"):
        agent.chat("two")


def test_the_stream_callback_hears_the_scripted_text(db: SessionDB, hermes_home: Path) -> None:
    model = ScriptedModel(["It is sunny today."])
    heard: list[str] = []

    assert scripted_agent(db, model).chat("Weather?", stream_callback=heard.append)

    assert "".join(heard) == "It is sunny today." and len(heard) > 1
    assert model.requests[0].streamed


def test_an_interrupt_stops_the_next_call_until_cleared(hermes_home: Path) -> None:
    model = ScriptedModel(["after the interrupt"])
    model.interrupt()

    with pytest.raises(TurnInterrupted):
        model.complete([{"role": "user", "content": "hi"}])
    model.clear_interrupt()
    assert model.complete([{"role": "user", "content": "hi"}]).content == "after the interrupt"


def test_a_background_review_asks_a_fork_never_the_script(db: SessionDB, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("agent:\n  review_interval: 1\n")
    model = ScriptedModel(["the answer"], fork_replies=["nothing worth keeping"])
    agent = scripted_agent(db, model, config=load_config())

    assert agent.chat("remember that I like tea") == "the answer"
    for thread in agent.review_threads:
        thread.join(20)

    assert len(model.forks) == 1
    fork = model.forks[0]
    assert [r.last_user_text[:19] for r in fork.requests] == ["[Background review]"]
    assert fork.closed  # the review lets go of its own model, not the agent's
    assert not model.closed and len(model.requests) == 1


def test_an_agent_built_without_a_model_client_talks_to_its_endpoint(
    fake_llm, hermes_home: Path
) -> None:
    from tests.fakes import llm_server as fake

    fake_llm.script(fake.text("from the endpoint"))
    agent = AIAgent(
        api_key="k",
        base_url=fake_llm.url,
        model=fake.DEFAULT_MODEL,
        quiet_mode=True,
        skip_context_files=True,
        skip_memory=True,
        persist_session=False,
    )

    assert agent.chat("hi") == "from the endpoint"
    assert len(fake_llm.requests) == 1
