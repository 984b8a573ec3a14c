"""/steer, /queue, /status and /copy in the interactive chat, typed in a pseudo-terminal
like a person would: during a turn (a line is read when Enter ends it) and at the
prompt. Every wait has a generous timeout; the fake model's stalls hold a turn open."""

from __future__ import annotations

import base64

from hermes.state import SessionDB
from tests.cli.chat_pty import PROMPT
from tests.cli.helpers import Env
from tests.fakes.llm_server import stall, text, tool_call


def _contents(cli_env: Env) -> list[tuple[str, str | None]]:
    with SessionDB(db_path=cli_env.home / "state.db", read_only=True) as db:
        (row,) = db.list_conversations()
        return [(m["role"], m["content"]) for m in db.get_conversation_messages(row["tip_id"])]


def test_steer_typed_during_a_tool_call_joins_the_turn(chat, cli_env, fake_llm):
    fake_llm.enqueue(
        tool_call("terminal", {"command": "sleep 6; echo slept"}), text("Done, and hi.")
    )
    session = chat()
    session.child.sendline("run the slow command")
    session.expect("Running terminal")
    session.child.sendline("/steer also say hi")
    session.expect("Steering the running turn after its next tool call: also say hi")
    session.expect("Done, and hi.")
    session.expect(PROMPT)
    sent = fake_llm.requests[-1]["messages"]
    assert [m["role"] for m in sent[-2:]] == ["tool", "user"]
    assert sent[-1]["content"] == "also say hi"
    assert session.leave() == 0
    roles = [role for role, _ in _contents(cli_env)]
    assert roles == ["user", "assistant", "tool", "user", "assistant"]


def test_lines_typed_during_a_turn_run_after_it_in_order(chat, cli_env, fake_llm):
    fake_llm.enqueue(stall("Counting slowly: one two three", after_chunks=2, seconds=8))
    session = chat()
    session.child.sendline("count for me")
    session.expect("Counting")
    session.child.sendline("/queue queued prompt")
    session.expect("Queued: queued prompt")
    session.child.sendline("typed meanwhile")
    session.expect("after this turn: typed meanwhile")
    session.child.sendline("/status")
    session.expect("a turn is running")
    session.expect("echo: queued prompt", timeout=60)
    session.expect("echo: typed meanwhile")
    session.expect(PROMPT)
    assert session.leave() == 0
    assert [c for role, c in _contents(cli_env) if role == "user"] == [
        "count for me",
        "queued prompt",
        "typed meanwhile",
    ]


def test_queue_and_steer_at_the_prompt_send_their_prompt_now(chat, fake_llm):
    session = chat()
    session.command("/queue", "Usage: /queue <prompt>")
    session.say("/q first one", "Queued: first one", "echo: first one", PROMPT)
    session.say("/steer second one", "No turn is running", "echo: second one", PROMPT)
    assert session.leave() == 0


def test_copy_puts_the_answer_on_the_terminal_clipboard(chat, fake_llm):
    fake_llm.enqueue(text("Copy me, please."))
    session = chat()
    session.say("say something", "Copy me, please.", PROMPT)
    session.child.sendline("/copy")
    encoded = base64.b64encode(b"Copy me, please.").decode()
    session.child.expect_exact(f"\x1b]52;c;{encoded}\x07")
    session.expect("Copied answer 1 of 1")
    session.expect(PROMPT)
    session.command("/copy 5", "There is no answer 5: use 1 to 1.")
    assert session.leave() == 0
