"""Which gateway conversations end with a turn a crash cut off (invariant 16)."""

from __future__ import annotations

from hermes.state import SessionDB
from tests.state.helpers import tool_call, tool_result

OWN = ["terminal"]


def routed(db: SessionDB, name: str, *messages: dict) -> str:
    sid = db.create_session(name, source="api_server", session_key=f"api_server:{name}")
    db.gateway.set_route(f"api_server:{name}", sid, platform="api_server")
    db.append_messages(sid, [{"role": "user", "content": "hi"}, *messages])
    return sid


def test_a_question_or_a_tool_without_an_answer_is_cut_and_nothing_else(db: SessionDB) -> None:
    routed(db, "ASKED")  # only the question
    routed(db, "IN-TOOL", tool_call("c1"))  # our own tool, never answered
    routed(db, "TOOL-DONE", tool_call("c2"), tool_result("c2", "ok"))  # no answer after it
    routed(db, "ANSWERED", {"role": "assistant", "content": "hello"})
    client = {**tool_call("c3"), "tool_calls": [{"id": "c3", "type": "function",
              "function": {"name": "their_tool", "arguments": "{}"}}]}  # fmt: skip
    routed(db, "CLIENT-TOOL", client)  # waits for the caller, not for us
    db.create_session("CLI", source="cli")
    db.append_message("CLI", "user", "a terminal chat is nobody's to resume")

    cut = {c.conversation_id: c.question for c in db.gateway.cut_turns(["api_server"], OWN)}

    assert cut == {"ASKED": "hi", "IN-TOOL": "hi", "TOOL-DONE": "hi"}
    assert db.gateway.cut_turns(["telegram"], OWN) == []
    assert db.gateway.cut_turn("ANSWERED", OWN) is None
    assert db.gateway.cut_turn("ASKED", OWN) == "hi"


def test_an_undone_question_is_no_cut_turn(db: SessionDB) -> None:
    sid = routed(db, "UNDONE", {"role": "assistant", "content": "hello"})
    db.append_message(sid, "user", "this failed")
    failed = db.get_messages(sid)[-1]["id"]
    assert db.gateway.cut_turn(sid, OWN) == "this failed"

    db.mark_undone(sid, [failed])

    assert db.gateway.cut_turn(sid, OWN) is None
