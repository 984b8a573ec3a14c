"""A client that stops reading a stream (the user pressed stop): the turn stops as
``/stop`` would, what was streamed is stored as a partial answer (its uid says so), and
the client's next request, carrying what it showed, continues without a branch."""

from __future__ import annotations

import json

import httpx
import openai

from tests.fakes.llm_server import stall
from tests.gateway.harness import GatewayThread, wait_for

QUESTION = {"role": "user", "content": "count slowly"}


def shown_before_stop(gateway: GatewayThread, pieces: int) -> str:
    """Stream the answer, keep ``pieces`` pieces of text, then drop the connection."""
    shown = []
    body = {"model": "fake-model", "messages": [QUESTION], "stream": True}
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with httpx.stream(
        "POST", f"{gateway.url}/chat/completions", json=body, headers=headers, timeout=30
    ) as response:
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            choices = json.loads(line[6:])["choices"]
            if choices and choices[0]["delta"].get("content"):
                shown.append(choices[0]["delta"]["content"])
            if len(shown) == pieces:
                break
    return "".join(shown)


def test_a_dropped_stream_stops_the_turn_and_keeps_what_was_shown(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm
) -> None:
    fake_llm.enqueue(stall("one two three four five", after_chunks=3, seconds=8))
    shown = shown_before_stop(gateway, pieces=2)
    assert shown == "one two "

    def partial() -> list[dict]:
        rows = [r for c in gateway.db.list_conversations()
                for r in gateway.db.get_conversation_messages(c["conversation_id"])]  # fmt: skip
        return [r for r in rows if r["role"] == "assistant"]

    [answer] = wait_for(partial, timeout=6)
    assert answer["content"] == shown and answer["message_uid"].endswith(":partial")
    history = [QUESTION, {"role": "assistant", "content": shown},
               {"role": "user", "content": "go on"}]  # fmt: skip
    raw = client.chat.completions.with_raw_response.create(model="fake-model", messages=history)
    assert raw.parse().choices[0].message.content == "echo: go on"
    assert "X-Hermes-Branched-From" not in raw.headers
    [conversation] = gateway.db.list_conversations()
    stored = gateway.db.get_conversation_messages(conversation["conversation_id"])
    assert [m["content"] for m in stored] == ["count slowly", "one two ", "go on", "echo: go on"]
    assert gateway.db.invariant_violations() == []


def test_a_dropped_responses_stream_keeps_what_was_shown(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm
) -> None:
    fake_llm.enqueue(stall("alpha beta gamma delta", after_chunks=3, seconds=8))
    shown = []
    body = {"model": "fake-model", "input": [QUESTION], "stream": True}
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with httpx.stream(
        "POST", f"{gateway.url}/responses", json=body, headers=headers, timeout=30
    ) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and '"response.output_text.delta"' in line:
                shown.append(json.loads(line[6:])["delta"])
            if len(shown) == 2:
                break
    assert "".join(shown) == "alpha beta "

    def answers() -> list[dict]:
        rows = [r for c in gateway.db.list_conversations()
                for r in gateway.db.get_conversation_messages(c["conversation_id"])]  # fmt: skip
        return [r for r in rows if r["role"] == "assistant"]

    [answer] = wait_for(answers, timeout=6)
    assert answer["content"] == "alpha beta " and answer["message_uid"].endswith(":partial")
    items = [QUESTION, {"role": "assistant", "content": "alpha beta "},
             {"role": "user", "content": "go on"}]  # fmt: skip
    raw = client.responses.with_raw_response.create(model="fake-model", input=items)
    assert raw.parse().output_text == "echo: go on"
    assert "X-Hermes-Branched-From" not in raw.headers
    assert len(gateway.db.list_conversations()) == 1


def test_a_shorter_start_of_the_stopped_answer_continues_it(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm
) -> None:
    """The client was sent "one two " but kept "one t" (what it had drawn): the stored
    answer is trimmed to that, the answer as sent stays in the history (undone), and
    the turn continues the conversation with what the client holds."""
    fake_llm.enqueue(stall("one two three four five", after_chunks=3, seconds=8))
    assert shown_before_stop(gateway, pieces=2) == "one two "

    def partial() -> list[dict]:
        rows = [r for c in gateway.db.list_conversations()
                for r in gateway.db.get_conversation_messages(c["conversation_id"])]  # fmt: skip
        return [r for r in rows if r["role"] == "assistant"]

    wait_for(partial, timeout=6)
    history = [QUESTION, {"role": "assistant", "content": "one t"},
               {"role": "user", "content": "go on"}]  # fmt: skip
    raw = client.chat.completions.with_raw_response.create(model="fake-model", messages=history)
    assert raw.parse().choices[0].message.content == "echo: go on"
    assert "X-Hermes-Branched-From" not in raw.headers
    [conversation] = gateway.db.list_conversations()
    cid = conversation["conversation_id"]
    stored = gateway.db.get_conversation_messages(cid)  # the history, undone rows too
    assert [(m["content"], m["undone"]) for m in stored] == [
        ("count slowly", 0),
        ("one two ", 1),
        ("one t", 0),
        ("go on", 0),
        ("echo: go on", 0),
    ]
    assert stored[2]["message_uid"].endswith(":partial")
    sent = fake_llm.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "assistant"] == ["one t"]
    # The same history again (a retry): the same conversation, nothing trimmed twice.
    again = client.chat.completions.with_raw_response.create(model="fake-model", messages=history)
    assert "X-Hermes-Branched-From" in again.headers  # it diverges from "echo: go on" now
    assert gateway.db.invariant_violations() == []
