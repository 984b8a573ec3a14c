"""A work item's caller choices are a frozen ``QueuedTurn``; its queue payload keeps the
shape every earlier version stored (a work item's ``options`` dict), so an item queued
before an upgrade runs after it as it was asked."""

from __future__ import annotations

import dataclasses
import socket
from pathlib import Path

import pytest

from hermes.gateway.lanes import MESSAGE, WorkItem
from hermes.gateway.queued_turn import QueuedTurn
from tests.gateway.harness import wait_for, write_config
from tests.gateway.one_chat import KEY, chat_gateway, conversation, say

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


def test_a_stored_payload_of_the_earlier_shape_reads_into_every_field() -> None:
    asked = QueuedTurn.from_json(STORED_OPTIONS)
    assert (asked.model, asked.instructions, asked.run_id) == (
        "other-model",
        "Answer in French.",
        "run_abc",
    )
    assert dict(asked.sampling) == {"temperature": 0.25, "max_tokens": 77, "tool_choice": "auto"}
    assert asked.client_tools[0]["function"]["name"] == "lookup"
    assert asked.tool_results == ({"tool_call_id": "call_1", "content": "42"},)
    assert asked.content_parts == ({"type": "text", "text": "see this"},)
    assert (asked.user_uid, asked.answer_uid) == ("u-1", "a-1")
    assert asked.retried and asked.keep_exchange and asked.keep_partial_answer
    assert asked.side_request
    # Written back, it is the very payload an earlier gateway on the store reads.
    assert asked.to_json() == STORED_OPTIONS


def test_no_choice_is_an_empty_payload_and_an_unknown_key_is_ignored() -> None:
    assert QueuedTurn().to_json() == {}
    assert QueuedTurn.from_json(None) == QueuedTurn()
    assert QueuedTurn.from_json({"from_a_later_version": 1}) == QueuedTurn()


def test_a_queued_turn_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        QueuedTurn().model = "other"  # type: ignore[misc]


def test_a_work_item_reads_back_from_its_row() -> None:
    item = WorkItem(
        kind=MESSAGE,
        text="hi",
        key=KEY,
        conversation_id="c1",
        asked=QueuedTurn.from_json(STORED_OPTIONS),
    )
    row = {"id": 7, "session_key": KEY, "payload": item.payload(), "enqueued_at": 1.0}
    again = WorkItem.from_row(row)  # type: ignore[arg-type]
    assert again.asked == item.asked and again.queue_id == 7
    assert item.payload()["options"] == STORED_OPTIONS


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
            "options": {"model": "other-model", "instructions": "Be terse.", "temperature": 0.25},
            "process_id": None,
            "seq": [1, 0],
        }
        gateway.db.gateway.enqueue_gateway_input(KEY, payload, owner=crashed)

        wait_for(lambda: gateway.chat.texts() == ["echo: hello", "echo: left behind"])
        asked = fake_llm.requests[-1]
        assert asked["model"] == "other-model" and asked["temperature"] == 0.25
        assert any("Be terse." in str(m.get("content")) for m in asked["messages"])
    finally:
        gateway.stop()
