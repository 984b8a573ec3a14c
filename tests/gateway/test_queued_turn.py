"""A work item's turn (its text or parts, the caller's history and choices) is a frozen
``QueuedTurn``; its queue payload keeps the shape every earlier version stored (the text
and history beside an ``options`` dict), so an item queued before an upgrade runs after
it as it was asked."""

from __future__ import annotations

import dataclasses
import socket
from pathlib import Path

import pytest

from hermes.gateway.lanes import MESSAGE, WorkItem
from hermes.gateway.queued_turn import QueuedTurn
from tests.gateway.harness import wait_for, write_config
from tests.gateway.one_chat import KEY, chat_gateway, conversation, say

PIXEL = "data:image/png;base64,iVBORw0KGgo="

# The ``options`` of a queue payload as main stored them before QueuedTurn (a retried
# chat-completions request with the caller's tools, sampling and a stopped stream).
STORED_OPTIONS = {
    "model": "other-model",
    "instructions": "Answer in French.",
    "temperature": 0.25,
    "max_tokens": 77,
    "client_tools": [{"type": "function", "function": {"name": "lookup", "parameters": {}}}],
    "tool_choice": "auto",
    "tool_results": [{"tool_call_id": "call_1", "content": "42"}],
    "content_parts": [{"type": "text", "text": "see this"}],
    "user_uid": "u-1",
    "answer_uid": "a-1",
    "retried": True,
    "keep_exchange": True,
    "keep_partial_answer": True,
    "side_request": True,
    "run_id": "run_abc",
}
# A whole queue payload as main stored it while the text and the caller's history sat
# on the work item (issue 57): the turn's keys beside where the item goes.
STORED_PAYLOAD = {
    "kind": MESSAGE,
    "text": "see this",
    "conversation_id": "c1",
    "origin": {
        "platform": "api_server",
        "chat_id": "c1",
        "thread_id": None,
        "user_id": "42",
        "is_group": False,
        "message_id": None,
    },
    "history": [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"}],
    "options": STORED_OPTIONS,
    "process_id": None,
    "seq": [5, 1],
}


def test_a_stored_payload_of_the_earlier_shape_reads_into_every_field() -> None:
    asked = QueuedTurn.from_json(STORED_PAYLOAD)
    assert asked.text == "see this"
    assert asked.history == tuple(STORED_PAYLOAD["history"])  # type: ignore[arg-type]
    assert (asked.model, asked.instructions, asked.run_id) == (
        "other-model",
        "Answer in French.",
        "run_abc",
    )
    assert dict(asked.sampling) == {"temperature": 0.25, "max_tokens": 77, "tool_choice": "auto"}
    assert asked.client_tools[0]["function"]["name"] == "lookup"
    assert asked.tool_results == ({"tool_call_id": "call_1", "content": "42"},)
    assert asked.content_parts == ({"type": "text", "text": "see this"},)
    assert asked.user_message == [{"type": "text", "text": "see this"}]  # parts win
    assert (asked.user_uid, asked.answer_uid) == ("u-1", "a-1")
    assert asked.retried and asked.keep_exchange and asked.keep_partial_answer
    assert asked.side_request
    # Written back, they are the very keys an earlier gateway on the store reads.
    turn_keys = {key: STORED_PAYLOAD[key] for key in ("text", "history", "options")}
    assert asked.to_json() == turn_keys


def test_no_choice_is_an_empty_payload_and_an_unknown_key_is_ignored() -> None:
    assert QueuedTurn().to_json() == {"text": "", "history": None, "options": {}}
    assert QueuedTurn.from_json(None) == QueuedTurn()
    assert QueuedTurn.from_json({"from_a_later_version": 1}) == QueuedTurn()
    assert QueuedTurn.from_json({"options": {"from_a_later_version": 1}}) == QueuedTurn()


def test_a_request_s_choices_and_history_make_the_same_turn() -> None:
    made = QueuedTurn.from_request("see this", STORED_OPTIONS, STORED_PAYLOAD["history"])  # type: ignore[arg-type]
    assert made == QueuedTurn.from_json(STORED_PAYLOAD)


def test_a_queued_turn_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        QueuedTurn().model = "other"  # type: ignore[misc]


def test_a_work_item_stored_by_the_earlier_version_reads_back_unchanged() -> None:
    row = {"id": 7, "session_key": KEY, "payload": STORED_PAYLOAD, "enqueued_at": 1.0}
    item = WorkItem.from_row(row)  # type: ignore[arg-type]
    assert item.asked == QueuedTurn.from_json(STORED_PAYLOAD) and item.queue_id == 7
    assert (item.conversation_id, item.seq) == ("c1", (5, 1))
    # Saved again, its payload is the one it was: an earlier gateway still runs it.
    assert item.payload() == STORED_PAYLOAD


def test_an_item_queued_in_the_earlier_shape_runs_as_it_was_asked(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    from tests.state.procs import dead_pid

    write_config(hermes_home, fake_llm.url, gateway={"queue_takeover_after": 1})
    gateway = chat_gateway(hermes_home)
    try:
        say(gateway, "hello")
        wait_for(lambda: gateway.chat.texts() == ["echo: hello"])
        # A gateway of the earlier version crashed, leaving this payload in the queue.
        crashed = f"{socket.gethostname()}:pid={dead_pid()}:agent=crashed"
        payload = {
            "kind": MESSAGE,
            "text": "left behind",
            "conversation_id": conversation(gateway),
            "origin": {"platform": "telegram", "chat_id": "100", "user_id": "42"},
            "history": None,
            "options": {
                "model": "other-model",
                "instructions": "Be terse.",
                "temperature": 0.25,
                # The text with an image: the model is sent the parts, not the text.
                "content_parts": [
                    {"type": "text", "text": "left behind"},
                    {"type": "image_url", "image_url": {"url": PIXEL}},
                ],
            },
            "process_id": None,
            "seq": [1, 0],
        }
        gateway.db.gateway.enqueue_gateway_input(KEY, payload, owner=crashed)

        wait_for(lambda: gateway.chat.texts() == ["echo: hello", "echo: left behind"])
        asked = fake_llm.requests[-1]
        assert asked["model"] == "other-model" and asked["temperature"] == 0.25
        assert any("Be terse." in str(m.get("content")) for m in asked["messages"])
        assert asked["messages"][-1]["content"][1]["image_url"]["url"] == PIXEL
    finally:
        gateway.stop()
