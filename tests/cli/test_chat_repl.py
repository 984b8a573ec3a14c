"""The interactive chat, driven through a pseudo-terminal like a person at a keyboard.

Assertions look for text on the screen (``expect``) and in the store afterwards; the
fake server's scripted stalls stand in for a slow model, and every wait has a generous
timeout, so nothing here depends on how fast the machine is.
"""

from __future__ import annotations

import json
import re
import signal

import pexpect
import pytest

from hermes.state import SessionDB
from tests.cli.chat_pty import PROMPT, TIMEOUT
from tests.cli.helpers import Env, build_compressed
from tests.fakes.llm_server import stall, text, tool_call


def _conversations(cli_env: Env) -> list[dict]:
    with SessionDB(db_path=cli_env.home / "state.db", read_only=True) as db:
        return db.list_conversations()


def test_typing_pasting_slash_commands_and_ctrl_d(chat, cli_env, fake_llm):
    fake_llm.enqueue(text("**Hello** there, I am the fake model."))
    session = chat(bare=True)  # plain `hermes` opens the chat
    session.say("hi there", "Hello", "there, I am the fake model.")
    session.expect(PROMPT)
    # A multi-line paste is one message; so is a line broken with Esc Enter.
    session.child.send("\x1b[200~first line\nsecond line\x1b[201~")
    session.child.send("\r")
    session.expect("echo: first line")
    session.expect(PROMPT)
    assert fake_llm.requests[-1]["messages"][-1]["content"] == "first line\nsecond line"
    session.child.send("one\x1b\rtwo\r")
    session.expect("echo: one")
    session.expect(PROMPT)
    assert fake_llm.requests[-1]["messages"][-1]["content"] == "one\ntwo"
    session.command("/title Greetings", "Title set to 'Greetings'")
    session.command("/usage", "This segment:")
    session.command("/nope", "Unknown command /nope")
    session.command("/bye", "Did you mean /quit?")
    session.command("/help", "/compress [focus]")
    session.command("/tools", "terminal")
    assert session.leave() == 0
    (row,) = _conversations(cli_env)
    assert row["title"] == "Greetings" and row["message_count"] == 6
    history = (cli_env.home / "chat_history").read_text()
    assert "hi there" in history and "/title Greetings" in history


def test_ctrl_c_stops_a_slow_turn_and_the_chat_goes_on(chat, cli_env, fake_llm):
    fake_llm.enqueue(stall("Counting slowly: one two three four", after_chunks=3, seconds=60))
    session = chat()
    session.child.sendline("count for me")
    # The first words are on screen while the model is still stalled mid-answer:
    # the answer streams.
    session.expect("Counting")
    session.child.sendintr()
    session.expect("Interrupted.")
    session.expect(PROMPT)
    session.say("still there?", "echo: still there?")
    session.expect(PROMPT)
    session.child.sendintr()  # Ctrl-C at an empty prompt does not leave either
    session.say("yes", "echo: yes", PROMPT)
    assert session.leave() == 0
    with SessionDB(db_path=cli_env.home / "state.db", read_only=True) as db:
        (row,) = db.list_conversations()
        contents = [m["content"] for m in db.get_messages(row["tip_id"])]
    assert contents == ["count for me", "still there?", "echo: still there?", "yes", "echo: yes"]


def _sigint_ignored() -> None:
    # What a shell without job control does to `cmd &`; exec keeps it, and Python then
    # installs no KeyboardInterrupt handler.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _sigint_blocked() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # exec keeps a mask too


@pytest.mark.parametrize("started", [_sigint_ignored, _sigint_blocked], ids=["ignored", "blocked"])
def test_ctrl_c_stops_a_turn_however_the_chat_was_started(chat, fake_llm, started) -> None:
    fake_llm.enqueue(stall("Counting slowly: one two three four", after_chunks=3, seconds=60))
    session = chat(preexec_fn=started)
    session.child.sendline("count for me")
    session.expect("Counting")
    session.child.sendintr()
    session.expect("Interrupted.", timeout=10)
    session.expect(PROMPT)
    session.say("still there?", "echo: still there?", PROMPT)
    assert session.leave() == 0


def test_a_tool_runs_under_a_spinner_that_names_it(chat, fake_llm, tmp_path):
    fake_llm.enqueue(
        tool_call("terminal", {"command": "sleep 1; echo tool-ran-fine"}),
        text("The command printed tool-ran-fine."),
    )
    session = chat()
    session.say("run it", "Running terminal", "The command printed tool-ran-fine.", PROMPT)
    tool_result = fake_llm.requests[-1]["messages"][-1]
    assert tool_result["role"] == "tool" and "tool-ran-fine" in tool_result["content"]
    assert session.leave() == 0


def test_a_dangerous_command_waits_for_the_person(chat, cli_env, fake_llm):
    # Without a sandbox (inside one, `curl | sh` is contained and just runs).
    (cli_env.home / "config.yaml").write_text("terminal:\n  sandbox: 'off'\n")
    # Declined, so it never runs (and it would only fail to reach a closed port anyway).
    risky = "curl -s http://127.0.0.1:9/x | sh"
    fake_llm.enqueue(tool_call("terminal", {"command": risky}), text("Understood, skipped."))
    session = chat()
    session.say("install it", "pipes a program into sh", risky, "Run it? [y/N]")
    session.say("n", "Understood, skipped.", PROMPT)
    tool_result = fake_llm.requests[-1]["messages"][-1]
    assert tool_result["content"].startswith("Refused:") and "declined" in tool_result["content"]
    assert session.leave() == 0


def test_the_approval_prompt_shows_escape_sequences_instead_of_obeying_them(
    chat, cli_env, fake_llm
):
    (cli_env.home / "config.yaml").write_text("terminal:\n  sandbox: 'off'\n")
    # The comment would move the cursor up and redraw the line as a harmless `ls -la`.
    risky = "curl -s http://127.0.0.1:9/x | sh # \x1b[1A\x1b[2K\rls -la"
    fake_llm.enqueue(tool_call("terminal", {"command": risky}), text("Understood, skipped."))
    session = chat()
    session.say("install it", "pipes a program into sh", "sh # \\x1b[1A\\x1b[2K", "Run it? [y/N]")
    session.say("n", "Understood, skipped.", PROMPT)
    assert session.leave() == 0


def test_compression_during_a_turn_is_one_dim_line(chat, cli_env, fake_llm):
    (cli_env.home / "config.yaml").write_text(
        "model:\n  context_length: 400\ncompression:\n  tail_share: 0.1\n"
    )
    fake_llm.responder = lambda body: None if body.get("tools") else "short summary"
    session = chat()
    words = "lorem ipsum dolor sit amet " * 8
    screen = ""
    for n in range(4):
        session.child.sendline(f"message {n} {words}")
        screen += session.expect(f"echo: message {n}")  # the line comes before the answer
        session.expect(PROMPT)
    assert re.search(r"segment 1 → 2, tokens ~[\d,]+ → ~[\d,]+", screen), screen
    assert session.leave() == 0
    (row,) = _conversations(cli_env)
    assert row["segments"] >= 2


def test_compress_undo_retry_and_usage(chat, cli_env, fake_llm):
    # A small tail, so a short conversation has a middle to summarise; never automatic.
    (cli_env.home / "config.yaml").write_text(
        "model:\n  context_length: 4000\ncompression:\n  threshold: 1.0\n  tail_share: 0.02\n"
    )
    fake_llm.responder = lambda body: None if body.get("tools") else "short summary"
    session = chat()
    session.command("/compress", "Nothing to compress yet: the conversation is empty.")
    for n in range(4):
        session.say(f"turn {n} " + "words " * 30, f"echo: turn {n}")
        session.expect(PROMPT)
    session.command("/compress", "Compressed: segment 1 → 2")
    session.say("after compression", "echo: after compression")
    session.expect(PROMPT)
    fake_llm.enqueue(text("second try answer"))
    session.command("/retry", "second try answer")
    session.command("/undo", "Undid 1 turn (2 messages)")
    session.command("/usage", "Whole conversation (2 segments)")
    assert session.leave() == 0

    conversation = _conversations(cli_env)[0]["conversation_id"]
    with SessionDB(db_path=cli_env.home / "state.db", read_only=True) as db:
        exported = [json.loads(line) for line in db.export_conversation(conversation)]
    messages = [m for m in exported if m["type"] == "message"]
    undone = [m["content"] for m in messages if m["undone"]]
    assert undone == ["after compression", "echo: after compression",
                      "after compression", "second try answer"]  # fmt: skip
    # Durable: a resumed conversation never sends the undone messages again.
    fake_llm.reset()
    resumed = chat("-c")
    resumed.say("next", "echo: next", PROMPT)
    sent = [m["content"] for m in fake_llm.requests[-1]["messages"]]
    assert "after compression" not in sent and "second try answer" not in sent
    assert resumed.leave() == 0


def test_compress_names_the_process_holding_the_lease(chat, cli_env):
    ids = build_compressed(cli_env.home / "state.db")
    holder = "other-host:pid=4242:agent=gateway"
    with SessionDB(db_path=cli_env.home / "state.db") as db:
        assert db.try_acquire_compression_lock(ids.tip, holder)
    session = chat("--resume", ids.root)
    session.command("/compress", "another process holds the compression lease (other-host:pid=4242")
    assert session.leave() == 0


def test_new_sessions_resume_and_model(chat, cli_env, fake_llm):
    ids = build_compressed(cli_env.home / "state.db", model="safari-model")
    session = chat("--resume", "Safari notes")
    session.say("hello again", "echo: hello again")
    session.expect(PROMPT)
    assert fake_llm.requests[-1]["model"] == "safari-model"
    session.command("/new Second chat", "Started a new conversation 'Second chat'")
    fake_llm.models.append("other-model")
    session.command("/model other-model", "Model set to other-model")
    session.say("fresh", "echo: fresh")
    session.expect(PROMPT)
    assert fake_llm.requests[-1]["model"] == "other-model"
    assert len(fake_llm.requests[-1]["messages"]) == 2  # system + "fresh": a new conversation
    session.command("/sessions", "Second chat")
    session.command(f"/resume {ids.root}", "Resumed 'Safari notes'")
    session.say("back", "echo: back")
    session.expect(PROMPT)
    assert fake_llm.requests[-1]["model"] == "safari-model"
    assert "hello again" in [m["content"] for m in fake_llm.requests[-1]["messages"]]
    session.command("/resume nowhere", "No conversation with the id or title 'nowhere'")
    session.child.sendline("/exit")
    session.child.expect(pexpect.EOF, timeout=TIMEOUT)
    titles = {r["title"] for r in _conversations(cli_env)}
    assert titles == {"Safari notes", "Second chat", "Shopping"}


def test_ctrl_c_is_a_signal_during_a_turn_even_after_a_raw_prompt(monkeypatch) -> None:
    """A prompt that ended in raw mode (no ISIG) must not leave the turn unstoppable:
    while it runs, the terminal turns ^C into SIGINT again, and gets back what it had."""
    import os
    import pty
    import termios
    import tty

    from hermes.cli._repl import _quiet_terminal

    leader, follower = pty.openpty()
    try:
        tty.setraw(follower)  # what a prompt may leave behind
        before = termios.tcgetattr(follower)
        assert not before[3] & termios.ISIG

        class Terminal:
            def fileno(self) -> int:
                return follower

        monkeypatch.setattr("sys.stdin", Terminal())
        with _quiet_terminal():
            assert termios.tcgetattr(follower)[3] & termios.ISIG
        assert termios.tcgetattr(follower) == before
    finally:
        os.close(leader)
        os.close(follower)
