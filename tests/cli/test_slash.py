"""The slash commands without a terminal: the dispatcher the gateway reuses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.agent import commands as chat_commands
from hermes.state import SessionDB
from tests.cli.helpers import FAKE_MODEL, build_compressed


@pytest.fixture
def db(hermes_home: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=hermes_home / "state.db") as store:
        yield store


@pytest.fixture
def agent(db: SessionDB, fake_llm):
    from hermes.agent import AIAgent

    made = AIAgent(base_url=fake_llm.url, model=FAKE_MODEL, session_db=db, source="cli",
                   skip_context_files=True, skip_memory=True)  # fmt: skip
    yield made
    made.client.close()


@pytest.mark.parametrize(
    ("line", "expected"),
    [("/new", True), ("/title My chat", True), ("  /help ", True), ("/", True),
     ("hello", False), ("/etc/hosts is empty", False), ("/usr/bin/env python", False)],
)  # fmt: skip
def test_what_counts_as_a_command(line, expected):
    assert chat_commands.is_command(line) is expected


def test_parse_splits_name_and_argument():
    assert chat_commands.parse("/Title  Big   day ") == ("title", "Big   day")
    assert chat_commands.parse("/undo") == ("undo", "")


def test_unknown_commands_get_a_suggestion(agent):
    reply = chat_commands.dispatch(agent, "/compres")
    assert not reply.ok and "Did you mean /compress?" in reply.text
    assert "Did you mean /quit?" in chat_commands.dispatch(agent, "/bye").text
    assert "/help" in chat_commands.dispatch(agent, "/zzzzzz").text


def test_every_command_has_usage_and_help():
    expected = {"new", "compress", "retry", "undo", "title", "model", "sessions", "resume",
                "usage", "tools", "skills", "help", "quit", "reload-mcp", "debug", "update",
                "version", "status", "stop", "queue", "steer", "copy",
                # hermes/agent/commands_settings.py
                "reasoning", "fast", "personality", "verbose", "voice", "codex-runtime",
                # hermes/agent/commands_background.py
                "background", "agents", "commands", "restart", "topic", "sethome"}  # fmt: skip
    # /cron and /platforms are registered by hermes.cron.chat_command and
    # hermes.gateway.platforms_command, which the chat surfaces import.
    assert set(chat_commands.COMMANDS) - {"cron", "platforms"} == expected
    for command in chat_commands.COMMANDS.values():
        assert command.usage.startswith("/" + command.name) and command.help[:1].isupper()


def test_exit_and_help(agent):
    assert chat_commands.dispatch(agent, "/quit").exit
    assert chat_commands.dispatch(agent, "/EXIT").exit  # an alias, any case
    help_text = chat_commands.dispatch(agent, "/help").text
    here = [c for c in chat_commands.COMMANDS.values() if not c.gateway_only]
    assert all(chat_commands._short_usage(c) in help_text for c in here)
    assert "(also /exit)" in help_text and "(also /reset)" in help_text


def test_an_alias_runs_its_command(agent, db):
    agent.run("hello")
    before = agent.binding.conversation_id
    reply = chat_commands.dispatch(agent, "/reset Fresh start")
    assert reply.ok and reply.data["previous"] == before
    assert agent.binding.title == "Fresh start" and agent.session_id is None


def test_a_name_or_alias_is_one_command_only():
    handler = chat_commands.COMMANDS["new"].handler
    with pytest.raises(ValueError, match="already the command /new"):
        chat_commands.command("renew", "/renew", "Another.", aliases=("reset",))(handler)
    with pytest.raises(ValueError, match="already the command /quit"):
        chat_commands.command("exit", "/exit", "Another.")(handler)
    assert "renew" not in chat_commands.COMMANDS and "exit" not in chat_commands.COMMANDS


def test_a_gateway_only_command_is_refused_in_the_terminal(agent):
    ran = []
    chat_commands.command("ping-chat", "/ping-chat", "Gateway only.", gateway_only=True)(
        lambda agent, arg: ran.append(arg) or chat_commands.Reply("pong")
    )
    try:
        reply = chat_commands.dispatch(agent, "/ping-chat now")
    finally:
        del chat_commands.COMMANDS["ping-chat"]
    assert not reply.ok and "messaging chat" in reply.text and ran == []


def test_title_before_and_after_the_first_message(agent, db):
    assert "will be titled 'Plans'" in chat_commands.dispatch(agent, "/title Plans").text
    agent.run("hello")
    assert db.get_session(agent.binding.conversation_id)["title"] == "Plans"
    assert chat_commands.dispatch(agent, "/title Better plans").ok
    assert db.get_session(agent.binding.conversation_id)["title"] == "Better plans"
    assert chat_commands.dispatch(agent, "/title").text == "Title: Better plans"


def test_undo_is_durable_and_retry_reruns(agent, db):
    agent.run("first")
    agent.run("second")
    reply = chat_commands.dispatch(agent, "/undo")
    assert reply.ok and "Undid 1 turn (2 messages)" in reply.text
    kept = [m["content"] for m in db.get_messages(agent.session_id)]
    assert kept == ["first", "echo: first"]
    everything = db.get_messages(agent.session_id, include_undone=True)
    assert [m["content"] for m in everything if m["undone"]] == ["second", "echo: second"]

    retry = chat_commands.dispatch(agent, "/retry")
    assert retry.rerun == "first" and retry.ok
    assert db.get_messages(agent.session_id) == []
    assert not chat_commands.dispatch(agent, "/undo 0").ok


def test_new_and_resume(agent, db):
    agent.run("in the first one")
    first = agent.binding.conversation_id
    reply = chat_commands.dispatch(agent, "/new Second")
    assert reply.ok and f"/resume {first}" in reply.text
    assert agent.session_id is None
    agent.run("in the second one")
    assert agent.binding.conversation_id != first
    assert db.get_session(agent.binding.conversation_id)["title"] == "Second"
    resumed = chat_commands.dispatch(agent, f"/resume {first}")
    assert resumed.ok and agent.binding.conversation_id == first
    assert not chat_commands.dispatch(agent, "/resume").ok
    assert not chat_commands.dispatch(agent, "/resume no-such-thing").ok


def test_resume_follows_the_tip_and_restores_the_model(agent, db, hermes_home):
    ids = build_compressed(hermes_home / "other.db", model="safari-model")
    with SessionDB(db_path=hermes_home / "other.db") as other:
        agent.binding.session_db = other
        reply = chat_commands.dispatch(agent, f"/resume {ids.root}")
        assert reply.ok, reply.text
        assert agent.session_id == ids.tip and agent.model == "safari-model"
        assert "'Safari notes'" in reply.text and "segment 2" in reply.text


def test_usage_reads_the_store(agent, db):
    assert "empty" in chat_commands.dispatch(agent, "/usage").text
    agent.run("count my tokens")
    segment = db.get_session(agent.session_id)
    reply = chat_commands.dispatch(agent, "/usage")
    assert reply.data["segment"] == {"input": segment["input_tokens"],
                                     "output": segment["output_tokens"]}  # fmt: skip
    assert f"{segment['input_tokens']:,} input" in reply.text


def test_compress_summarises_even_a_short_conversation(agent, db, fake_llm):
    """/compress on one exchange works, as /compact does elsewhere: all of it goes into
    the summary the summary model read, and the conversation goes on from there."""
    assert "empty" in chat_commands.dispatch(agent, "/compress").text
    agent.run("remember the zebra named Otto")
    first = agent.session_id
    reply = chat_commands.dispatch(agent, "/compress")
    assert reply.ok and reply.data["outcome"].rotated, reply.text
    summary_request = json.dumps(fake_llm.requests[-1]["messages"])
    assert "remember the zebra named Otto" in summary_request
    [summary] = db.get_messages(agent.session_id)
    assert agent.session_id != first and summary["role"] == "user"
    assert db.coverage_violations() == []  # both messages are in the summary's coverage
    agent.run("what was its name?")
    sent = fake_llm.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "user"]
    assert sent[1]["content"] == summary["content"]


def test_model_and_tools(agent, db, fake_llm):
    assert chat_commands.dispatch(agent, "/model").text.startswith(f"Model: {FAKE_MODEL}")
    fake_llm.models.append("other-model")
    assert chat_commands.dispatch(agent, "/model other-model").ok
    agent.run("which model?")
    assert fake_llm.requests[-1]["model"] == "other-model"
    assert db.get_session(agent.session_id)["model"] == "other-model"
    tools = chat_commands.dispatch(agent, "/tools")
    assert "terminal" in tools.data["tools"] and "terminal" in tools.text


def test_a_model_the_endpoint_does_not_offer_is_refused(agent, db, fake_llm):
    fake_llm.models.append("other-model")
    reply = chat_commands.dispatch(agent, "/model other-modle")
    assert not reply.ok and "does not offer 'other-modle'" in reply.text
    assert "Did you mean other-model?" in reply.text and agent.model == FAKE_MODEL
    agent.run("still here?")
    assert fake_llm.requests[-1]["model"] == FAKE_MODEL
    fake_llm.models.clear()  # an endpoint that lists nothing: nothing to check against
    assert "not checked" in chat_commands.dispatch(agent, "/model anything").text


def test_a_compressed_conversation_is_not_left_unanswered(agent, db, hermes, chat):
    """The summary of /compress is stored with the role 'user' but asks nothing: the
    conversation's last message is still the answer, so no 'unanswered' note and no
    offer to /retry an answered question."""
    agent.run("remember the zebra named Otto")
    assert chat_commands.dispatch(agent, "/compress").data["outcome"].rotated
    listed = hermes("sessions", "list", "--json")
    [row] = json.loads(listed.stdout)
    assert row["unanswered"] is False and row["segments"] == 2
    assert "unanswered" not in hermes("sessions", "list").stdout
    resumed = chat("-c")
    shown = resumed.child.before or ""
    assert "not answered" not in shown and "/retry" not in shown
    assert "hermes: echo: remember the zebra named Otto" in shown
    assert resumed.leave() == 0


def test_the_prompt_completes_a_command_then_its_first_word():
    """Tab after ``/cr`` gives ``/cron``; after ``/cron pa``, ``pause``; a word typed in
    full, a second word or a command without words gives nothing."""
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from hermes.cli._repl import SlashCompleter

    def completed(text: str) -> list[str]:
        found = SlashCompleter().get_completions(Document(text), CompleteEvent())
        return [c.text for c in found]

    assert completed("/cr") == ["/cron"]
    assert completed("/cron pa") == ["pause"]
    assert completed("/cron ru") == ["run", "runs"]
    assert completed("/cron ") == list(chat_commands.COMMANDS["cron"].subcommands)
    assert completed("/cron pause") == []
    assert completed("/cron pause da") == []
    assert completed("/help ") == []


def test_the_prompt_completes_the_configured_personalities(hermes_home):
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from hermes.cli._repl import SlashCompleter
    from hermes.config import load_config

    (hermes_home / "config.yaml").write_text("agent:\n  personalities:\n    butler: Sir.\n")
    completer = SlashCompleter(load_config())
    found = completer.get_completions(Document("/personality "), CompleteEvent())
    names = [c.text for c in found]
    assert names[0] == "none" and {"pirate", "butler"} <= set(names)
    found = completer.get_completions(Document("/personality bu"), CompleteEvent())
    assert [c.text for c in found] == ["butler"]
