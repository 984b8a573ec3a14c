"""/status, /stop, /queue, /steer and /copy through the chat's dispatcher: a real agent
on a real store, the fake model over HTTP, real background processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from hermes.agent import commands as chat_commands
from hermes.agent.turn_options import TurnOptions
from hermes.state import SessionDB
from hermes.tools.processes.store import KILLED, ProcessStore
from tests.cli.helpers import FAKE_MODEL
from tests.fakes import llm_server as fake


@pytest.fixture
def db(hermes_home: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=hermes_home / "state.db") as store:
        yield store


@pytest.fixture
def agent(db: SessionDB, fake_llm, tmp_path: Path):
    from hermes.agent import AIAgent

    made = AIAgent(base_url=fake_llm.url, model=FAKE_MODEL, session_db=db, source="cli",
                   skip_context_files=True, skip_memory=True, cwd=tmp_path)  # fmt: skip
    yield made
    made.client.close()


def run(agent, line: str) -> chat_commands.Reply:
    return chat_commands.dispatch(agent, line)


# -- /status -------------------------------------------------------------------------


def test_status_tells_the_conversation_model_tokens_and_context(agent, db, fake_llm):
    assert "Conversation: new" in run(agent, "/status").text
    fake_llm.enqueue(fake.text("Hello there."))
    agent.run("hi")
    run(agent, "/title Greetings")
    text = run(agent, "/status").text
    root = agent.binding.conversation_id
    assert f"Conversation: {root} 'Greetings', segment 1 ({agent.session_id})" in text
    assert f"Model: {FAKE_MODEL} at {agent.base_url}" in text
    segment = db.get_session(agent.session_id)
    assert f"Tokens: {segment['input_tokens']:,} input" in text and segment["input_tokens"] > 0
    assert f"of {agent.window.compressor.context_length:,} tokens" in text
    assert "no turn is running, nothing queued, 0 background processes running" in text


def test_status_during_a_turn_says_a_turn_runs(agent, fake_llm):
    fake_llm.script(fake.tool_call("read_file", {"path": "missing.txt"}), fake.text("Done."))
    seen: list[str] = []

    def on_event(kind: str, data: dict) -> None:
        if kind == "tool_start":
            seen.append(run(agent, "/status").text)

    agent.run("look", options=TurnOptions(event_callback=on_event))
    assert seen and "a turn is running" in seen[0]
    assert "no turn is running" in run(agent, "/status").text


# -- /stop ---------------------------------------------------------------------------


def test_stop_kills_the_background_processes_the_chat_started(agent, fake_llm, hermes_home):
    fake_llm.script(
        fake.tool_call("terminal", {"command": "sleep 120", "background": True}),
        fake.text("Started."),
    )
    agent.run("start a long job")
    records = ProcessStore(hermes_home).all()
    assert len(records) == 1 and not records[0].finished, records
    sleeper = records[0]
    assert psutil.pid_exists(sleeper.pid)
    assert "1 background process running" in run(agent, "/status").text

    reply = run(agent, "/stop")

    assert reply.ok and reply.data["stopped"] == [sleeper.id]
    assert reply.text.startswith("Stopped 1 background process:") and "sleep 120" in reply.text
    after = ProcessStore(hermes_home).load(sleeper.id)
    assert after is not None and after.status == KILLED
    assert not psutil.pid_exists(sleeper.pid) or psutil.Process(sleeper.pid).status() == "zombie"
    assert run(agent, "/stop").text == "No background processes are running."


# -- /queue --------------------------------------------------------------------------


def test_queue_needs_a_prompt_and_runs_it_as_the_next_turn(agent):
    for line in ("/queue", "/q   "):
        reply = run(agent, line)
        assert not reply.ok and reply.text.startswith("Usage: /queue <prompt>")
        assert reply.rerun is None
    reply = run(agent, "/q summarise the logs")  # 0.19's alias
    assert reply.ok and reply.rerun == "summarise the logs"
    assert agent.session_id is None  # nothing stored until the surface runs it


# -- /steer --------------------------------------------------------------------------


def test_steer_joins_the_running_turn_after_its_tool_call_once(agent, db, fake_llm):
    fake_llm.script(
        fake.tool_call("read_file", {"path": "missing.txt"}),
        fake.text("Checked the tests too."),
    )
    replies: list[chat_commands.Reply] = []

    def on_event(kind: str, data: dict) -> None:
        if kind == "tool_start":  # the model asked for a tool: the user steers meanwhile
            replies.append(run(agent, "/steer also check the tests"))

    result = agent.run("look at missing.txt", options=TurnOptions(event_callback=on_event))

    assert replies[0].ok and replies[0].rerun is None and "Steering" in replies[0].text
    assert result.answer == "Checked the tests too." and result.pending_steer is None
    rows = [(m["role"], m["content"]) for m in db.get_messages(agent.session_id)]
    assert [r for r, _ in rows] == ["user", "assistant", "tool", "user", "assistant"]
    assert rows[3] == ("user", "also check the tests")
    sent = fake_llm.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[-1]["content"] == "also check the tests"
    # Taken once: the next turn does not see it again.
    fake_llm.enqueue(fake.text("ok"))
    agent.run("thanks")
    contents = [m["content"] for m in db.get_messages(agent.session_id)]
    assert contents.count("also check the tests") == 1


def test_steer_a_turn_never_takes_comes_back_for_the_next_turn(agent, db, fake_llm):
    fake_llm.enqueue(fake.text("Plain answer."))
    replies: list[chat_commands.Reply] = []

    def on_event(kind: str, data: dict) -> None:
        if kind == "step":  # before the model call, which answers without a tool
            replies.append(run(agent, "/steer and be brief"))

    result = agent.run("hello", options=TurnOptions(event_callback=on_event))
    assert replies[0].ok and result.pending_steer == "and be brief"
    contents = [m["content"] for m in db.get_messages(agent.session_id)]
    assert "and be brief" not in contents


def test_steer_without_a_running_turn_is_an_ordinary_message(agent):
    reply = run(agent, "/steer   ")
    assert not reply.ok and reply.text.startswith("Usage: /steer <prompt>")
    reply = run(agent, "/steer use the staging server")
    assert reply.ok and reply.rerun == "use the staging server"
    assert agent.steering.take() is None  # nothing waits inside the agent


def test_an_interrupt_drops_the_steering_not_taken(agent):
    agent.steering.begin()
    assert agent.steer("later")
    agent.interrupt()
    assert agent.steering.close() is None


# -- /copy ---------------------------------------------------------------------------


def test_copy_hands_the_chosen_answer_to_the_terminal(agent, fake_llm):
    assert not run(agent, "/copy").ok
    fake_llm.script(fake.text("First answer."), fake.text("Second answer."))
    agent.run("one")
    agent.run("two")
    reply = run(agent, "/copy")
    assert reply.ok and reply.data["clipboard"] == "Second answer."
    assert "answer 2 of 2" in reply.text
    assert run(agent, "/copy 1").data["clipboard"] == "First answer."
    for bad in ("3", "0", "last"):
        refused = run(agent, f"/copy {bad}")
        assert not refused.ok and "clipboard" not in refused.data
    run(agent, "/undo")
    assert run(agent, "/copy").data["clipboard"] == "First answer."
