"""The interactive chat hears its background processes finish (``hermes/cli/_process_notices``).

Driven through a pseudo-terminal like a person at a keyboard, against the fake model:
a real background process, a real spool in the test's home, a real store. Each wait
has a generous timeout; nothing depends on how fast the machine is.
"""

from __future__ import annotations

import time

from hermes.state import SessionDB
from hermes.tools.processes import background
from hermes.tools.processes.events import CompletionEvent, spool_event, spooled
from tests.cli.chat_pty import PROMPT
from tests.cli.helpers import Env, build_compressed
from tests.fakes.llm_server import text, tool_call

BACKGROUND = {"command": "sleep 1; echo done", "background": True, "notify_on_complete": True}
NOTICE = "[Background process "


def _notices(fake_llm) -> list[str]:
    """The user messages the model was sent that are completion notices, in order."""
    seen = []
    for request in fake_llm.requests:
        last = request["messages"][-1]
        if last["role"] == "user" and str(last["content"]).startswith(NOTICE):
            seen.append(last["content"])
    return seen


def _conversation(cli_env: Env) -> str:
    with SessionDB(db_path=cli_env.home / "state.db", read_only=True) as db:
        (row,) = db.list_conversations()
    return row["conversation_id"]


def _event(conversation: str, process_id: str) -> CompletionEvent:
    return CompletionEvent(
        process_id=process_id,
        conversation_id=conversation,
        command=f"make {process_id}",
        exit_code=3,
        output_tail=f"{process_id} output",
        finished_at=time.time(),
    )


def test_a_background_process_that_ends_while_the_chat_waits_gets_one_turn(chat, cli_env, fake_llm):
    fake_llm.enqueue(
        tool_call("terminal", BACKGROUND),
        text("Started it; I will hear back."),
        text("The build said done."),  # the answer to the notice
    )
    session = chat()
    session.say("build it in the background", "Started it; I will hear back.")
    # Nobody types: the chat notices the end by itself, prints a line, takes a turn.
    screen = session.expect("The build said done.")
    assert "finished with exit code 0: sleep 1; echo done" in screen, screen
    session.expect(PROMPT)
    (notice,) = _notices(fake_llm)
    assert "finished with exit code 0: sleep 1; echo done]" in notice
    assert notice.endswith("Last output:\ndone")
    # Heard once: the next line is an ordinary turn, with no second notice.
    session.say("thanks", "echo: thanks", PROMPT)
    assert len(_notices(fake_llm)) == 1
    assert spooled(cli_env.home) == []
    assert session.leave() == 0


def test_a_half_typed_line_survives_the_notice(chat, cli_env, fake_llm):
    # Long enough that the line is half-typed well before the process ends.
    slow = {**BACKGROUND, "command": "sleep 3; echo done"}
    fake_llm.enqueue(tool_call("terminal", slow), text("Started it."), text("The build said done."))
    session = chat()
    session.say("build it", "Started it.", PROMPT)
    session.child.send("what did it pri")  # no Enter: the person is still typing
    session.expect("The build said done.")
    session.expect(PROMPT)
    session.say("nt?", "echo: what did it print?", PROMPT)
    assert fake_llm.requests[-1]["messages"][-1]["content"] == "what did it print?"
    assert session.leave() == 0


def test_another_conversations_event_stays_spooled(chat, cli_env, fake_llm):
    session = chat()
    session.say("hello", "echo: hello", PROMPT)
    mine = _conversation(cli_env)
    # Spooled as if they ended while no hermes process watched them.
    spool_event(cli_env.home, _event("someone-else", "p_other"))
    fake_llm.enqueue(text("Noted the failed build."))
    spool_event(cli_env.home, _event(mine, "p_mine"))
    screen = session.expect("Noted the failed build.")
    assert "p_mine finished with exit code 3" in screen and "p_other" not in screen
    session.expect(PROMPT)
    session.say("and now?", "echo: and now?", PROMPT)
    (notice,) = _notices(fake_llm)
    assert "p_mine" in notice and "p_other" not in notice
    assert [e.process_id for e in spooled(cli_env.home)] == ["p_other"]
    assert session.leave() == 0


def test_a_resumed_chat_hears_what_ended_meanwhile_before_its_prompt(
    chat, hermes, cli_env, fake_llm
):
    assert hermes("chat", "-q", "hello").returncode == 0
    conversation = _conversation(cli_env)
    spool_event(cli_env.home, _event(conversation, "p_meanwhile"))
    fake_llm.enqueue(text("The meanwhile build failed."))
    session = chat("--resume", conversation)  # returns at its first prompt
    screen = session.child.before or ""
    assert "p_meanwhile finished with exit code 3: make p_meanwhile" in screen, screen
    assert "The meanwhile build failed." in screen
    (notice,) = _notices(fake_llm)
    assert notice.endswith("Last output:\np_meanwhile output")
    assert spooled(cli_env.home) == []
    assert session.leave() == 0


def test_a_one_shot_chat_leaves_the_event_spooled(hermes, cli_env, fake_llm):
    fake_llm.enqueue(tool_call("terminal", BACKGROUND), text("Started it."))
    assert hermes("chat", "-q", "build it").returncode == 0
    deadline = time.monotonic() + 30
    while not spooled(cli_env.home) and time.monotonic() < deadline:
        # Nobody watches it now: a look notices its end and spools the event.
        background.refresh_all(cli_env.home)
        time.sleep(0.2)
    (event,) = spooled(cli_env.home)
    assert event.conversation_id == _conversation(cli_env) and event.exit_code == 0
    assert _notices(fake_llm) == []


def test_an_event_naming_a_segment_of_the_conversation_is_its_own(chat, cli_env, fake_llm):
    ids = build_compressed(cli_env.home / "state.db")
    # Addressed to the tip segment, not the root: still this conversation's (as in the
    # gateway); the other conversation's event stays for its own taker.
    spool_event(cli_env.home, _event(ids.tip, "p_segment"))
    spool_event(cli_env.home, _event(ids.other, "p_other"))
    fake_llm.enqueue(text("Heard the segment's build."))
    session = chat("--resume", ids.root)
    assert "Heard the segment's build." in (session.child.before or "")
    (notice,) = _notices(fake_llm)
    assert "p_segment" in notice
    assert [e.process_id for e in spooled(cli_env.home)] == ["p_other"]
    assert session.leave() == 0
