"""One function makes what a model endpoint is sent (``hermes.state.context.message.wire_form``): hermes's
own keys stay home, a caller's sent text replaces the stored one, a tool result names
its tool. Every way of reaching the model sends that form: a turn's context (encoded
and kept between calls) and a plain list of messages (a summary request)."""

from __future__ import annotations

import pytest

from hermes.agent.model.client import ModelClient
from hermes.agent.transcript import new_message
from hermes.agent.turn_options import TurnOptions
from hermes.state import SessionDB
from hermes.state.context.message import WIRE_KEYS, wire_form
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake

CALL = {"id": "c1", "type": "function", "function": {"name": "memory", "arguments": "{}"}}
# A transcript with every key hermes keeps beside the wire's.
TRANSCRIPT = [
    new_message("user", "stored words", api_content="sent words", created_at=1.0),
    new_message("assistant", None, tool_calls=[CALL], reasoning="thinking", finish_reason="x"),
    new_message("tool", "result", tool_call_id="c1", tool_name="memory", token_count=3),
    new_message("assistant", "", tool_calls=[]),
]
EXPECTED = [
    {"role": "user", "content": "sent words"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "content": "result", "tool_call_id": "c1", "name": "memory"},
    {"role": "assistant", "content": ""},
]


def test_the_wire_form_keeps_only_what_the_endpoint_takes() -> None:
    assert [wire_form(m) for m in TRANSCRIPT] == EXPECTED
    assert all(set(wire_form(m)) <= set(WIRE_KEYS) for m in TRANSCRIPT)
    assert TRANSCRIPT[0]["message_uid"]  # the agent's own messages are untouched


def test_a_list_of_messages_is_sent_in_the_wire_form(fake_llm: fake.FakeLLMServer) -> None:
    client = ModelClient("k", fake_llm.url, fake.DEFAULT_MODEL, max_retries=0)
    try:
        client.complete(TRANSCRIPT)
    finally:
        client.close()
    assert fake_llm.last_request["messages"] == EXPECTED


@pytest.mark.parametrize("stored", [False, True])
def test_a_turn_sends_its_context_in_the_wire_form(fake_llm, tmp_path, stored) -> None:
    db = SessionDB(db_path=tmp_path / "state.db") if stored else None
    try:
        agent = fake_agent(fake_llm, db, tools=[], skip_memory=True)
        fake_llm.script(fake.text("answer"))
        agent.run(
            "sent words",
            persist_user_message="stored words",
            options=TurnOptions(instructions="Be brief."),
        )
        messages = fake_llm.last_request["messages"]
    finally:
        if db is not None:
            db.close()
    assert all(set(m) <= set(WIRE_KEYS) for m in messages)
    assert messages[0]["role"] == "system" and messages[0]["content"].endswith("Be brief.")
    assert messages[1:] == [{"role": "user", "content": "sent words"}]
