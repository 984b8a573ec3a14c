"""/background and /agents in the terminal chat: a prompt answered beside the chat, by
an agent of its own, in a conversation of its own, stored like any other."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from hermes.agent import AIAgent
from hermes.agent import commands as chat_commands
from hermes.agent.background import tasks_of
from hermes.state import SessionDB
from hermes.testing import ScriptedModel
from tests.cli.chat_pty import PROMPT
from tests.fakes.llm_server import hang, text

WAIT = 60.0


@pytest.fixture
def db(hermes_home: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=hermes_home / "state.db") as store:
        yield store


def _agent(db: SessionDB, model: ScriptedModel) -> AIAgent:
    return AIAgent(session_db=db, source="cli", user_id="ada", model_client=model,
                   skip_context_files=True, skip_memory=True)  # fmt: skip


def _finished(agent: AIAgent):
    tasks = tasks_of(agent)
    for task in tasks.running():
        assert task.finished.wait(WAIT)
    return tasks.take_finished()


def test_background_answers_in_a_conversation_of_its_own(db):
    model = ScriptedModel(["The chat's answer."], fork_replies=["Four."])
    agent = _agent(db, model)
    agent.run("Hello")
    chat = agent.binding.conversation_id

    reply = chat_commands.dispatch(agent, "/bg What is 2+2?")

    assert reply.ok and "Background task #1 started" in reply.text and "What is 2+2?" in reply.text
    [task] = _finished(agent)
    assert task.answer == "Four." and task.error is None
    assert task.task_id == reply.data["task_id"] and "Four." in task.report()
    # Its own conversation, the chat's source and user; the chat's is untouched.
    assert task.conversation_id not in (None, chat)
    root = db.get_session(task.conversation_id)
    assert root["source"] == "cli" and root["user_id"] == "ada"
    stored = [(m["role"], m["content"]) for m in db.get_conversation_messages(task.conversation_id)]
    assert stored == [("user", "What is 2+2?"), ("assistant", "Four.")]
    assert [m["content"] for m in db.get_conversation_messages(chat)] == [
        "Hello", "The chat's answer."
    ]  # fmt: skip
    assert agent.binding.conversation_id == chat
    # The task asked a model client of its own, never the chat's script.
    assert [r.last_user_text for r in model.requests] == ["Hello"]


def test_background_without_a_prompt_says_how_to_use_it(db):
    agent = _agent(db, ScriptedModel())
    for line in ("/background", "/btw   "):
        reply = chat_commands.dispatch(agent, line)
        assert not reply.ok and reply.text.startswith("Usage: /background PROMPT")
    assert tasks_of(agent).running() == [] and db.list_conversations() == []


def test_a_failed_background_task_is_told_not_raised(db):
    agent = _agent(db, ScriptedModel(fork_replies=[RuntimeError("the endpoint fell over")]))
    assert chat_commands.dispatch(agent, "/background Summarise the news").ok
    [task] = _finished(agent)
    assert task.answer is None and task.error
    assert "failed" in task.report() and "Summarise the news" in task.report()


def test_agents_lists_the_running_background_tasks(db):
    release = threading.Event()

    def slow(_request):
        release.wait(WAIT)
        return "Done at last."

    agent = _agent(db, ScriptedModel(fork_replies=[slow]))
    try:
        quiet = chat_commands.dispatch(agent, "/agents").text
        assert "This chat's agent: idle" in quiet and "Background tasks running: 0" in quiet
        chat_commands.dispatch(agent, "/background Count the stars")
        shown = chat_commands.dispatch(agent, "/tasks")  # its alias
        assert shown.ok and "Background tasks running: 1" in shown.text
        assert "#1 bg_" in shown.text and "Count the stars" in shown.text
    finally:
        release.set()
    [task] = _finished(agent)
    assert task.answer == "Done at last."
    assert "Background tasks running: 0" in chat_commands.dispatch(agent, "/agents").text


def test_commands_is_the_gateways(db):
    reply = chat_commands.dispatch(_agent(db, ScriptedModel()), "/commands")
    assert not reply.ok and "messaging chat" in reply.text


def test_the_chat_shows_a_background_answer_when_its_prompt_is_idle(chat, cli_env, fake_llm):
    fake_llm.enqueue(text("Forty-two, in the background."))
    session = chat()
    session.say("/background What is the answer?", "Background task #1 started", PROMPT)
    # Nobody types: the idle prompt makes way for the answer by itself.
    screen = session.expect("Forty-two, in the background.")
    assert "is done" in screen and "What is the answer?" in screen, screen
    session.expect(PROMPT)
    session.say("thanks", "echo: thanks", PROMPT)  # the chat's own turn, in its own conversation
    with SessionDB(db_path=cli_env.home / "state.db", read_only=True) as db:
        rows = db.list_conversations()
    assert sorted(r["message_count"] for r in rows) == [2, 2]
    assert session.leave() == 0


def test_leaving_the_chat_waits_for_a_running_background_answer(chat, cli_env, fake_llm):
    """A started task was promised an answer: Ctrl-D while it runs waits for it."""
    fake_llm.enqueue(hang(3, then=text("The slow answer.")))
    session = chat()
    session.say("/background Think it over", "Background task #1 started", PROMPT)
    session.child.sendeof()
    session.expect("A background task is still running: waiting for the answer")
    screen = session.expect("The slow answer.", timeout=60)
    assert "is done" in screen and "Think it over" in screen, screen
    session.child.expect(pexpect.EOF, timeout=30)
    session.child.close()
    assert session.child.exitstatus == 0
    with SessionDB(db_path=cli_env.home / "state.db", read_only=True) as db:
        [row] = db.list_conversations()
        stored = [m["content"] for m in db.get_conversation_messages(row["conversation_id"])]
    assert stored == ["Think it over", "The slow answer."]


def test_ctrl_c_while_leaving_stops_the_background_tasks_and_says_so(chat, cli_env, fake_llm):
    fake_llm.enqueue(hang(60, then=text("Never shown.")))
    session = chat()
    session.say("/background Take your time", "Background task #1 started", PROMPT)
    session.child.sendeof()
    session.expect("still running: waiting for the answer (Ctrl-C stops them and quits)")
    session.child.sendintr()
    screen = session.expect("It was stopped before it answered.", timeout=30)
    assert "Take your time" in screen, screen
    session.child.expect(pexpect.EOF, timeout=30)
    session.child.close()
    assert session.child.exitstatus == 0
    with SessionDB(db_path=cli_env.home / "state.db", read_only=True) as db:
        [row] = db.list_conversations()
        stored = [m["content"] for m in db.get_conversation_messages(row["conversation_id"])]
    assert stored[0] == "Take your time" and "Never shown." not in stored
