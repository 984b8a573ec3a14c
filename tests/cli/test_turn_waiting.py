"""`hermes chat` takes the conversation's turn lock like every surface (invariant 11):
while another process runs a turn of the conversation it waits, says so, then answers."""

from __future__ import annotations

import subprocess
import time

from hermes.state import SessionDB
from tests.cli.helpers import hermes_command


def test_chat_waits_for_another_processs_turn_and_says_so(cli_env, fake_llm) -> None:
    db = SessionDB(db_path=cli_env.home / "state.db")
    sid = db.create_session("BUSY", source="cli")
    conversation = db.get_session(sid)["conversation_id"]
    assert db.gateway.try_lock_turn(conversation)  # another turn runs it right now
    chat = subprocess.Popen(
        [*hermes_command(), "chat", "-r", sid, "-q", "are you there?"],
        env=cli_env.vars,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(5)  # time enough to start, ask the model and store the question
        # The chat has had seconds to start; it wrote nothing and asked no model.
        assert chat.poll() is None
        assert db.get_messages(sid) == [] and fake_llm.requests == []
    finally:
        db.gateway.unlock_turn(conversation)
    out, err = chat.communicate(timeout=60)
    assert chat.returncode == 0, err
    assert out.strip() == "echo: are you there?"
    assert "waiting for another turn on this conversation" in err
