"""The sessions API's turns (issue 13): chat, chat/stream with tool progress, and fork,
over real HTTP against a real gateway and the fake model."""

from __future__ import annotations

import json

import httpx

from tests.fakes.llm_server import text, tool_call
from tests.gateway.api_calls import ask, call


def _stream(gateway, path: str, body: dict) -> list[tuple[str, dict]]:
    """The (event, data) pairs of a server-sent-events answer."""
    base = gateway.runner.adapters["api_server"].url
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    events: list[tuple[str, dict]] = []
    with httpx.stream("POST", base + path, json=body, headers=headers, timeout=30) as response:
        assert response.status_code == 200
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                events.append((name or "", json.loads(line[len("data: ") :])))
    return events


def test_chat_continues_the_conversation_by_any_segment_id(client, gateway, fake_llm) -> None:
    _, conversation = ask(client, "my name is Ada")
    status, body = call(
        gateway, "POST", f"/api/sessions/{conversation}/chat",
        json={"message": "what is my name?", "instructions": "Answer briefly."},
    )  # fmt: skip
    assert status == 200, body
    assert body["message"] == {"role": "assistant", "content": "echo: what is my name?"}
    assert body["session_id"] == conversation and body["usage"]["total_tokens"] > 0
    sent = fake_llm.requests[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == [
        "my name is Ada", "echo: my name is Ada", "what is my name?"
    ]  # fmt: skip
    assert sent[0]["content"].endswith("Answer briefly.")
    stored = [m["content"] for m in gateway.db.get_conversation_messages(conversation)]
    assert stored[-2:] == ["what is my name?", "echo: what is my name?"]


def test_chat_stream_sends_deltas_tool_progress_and_done(
    client, gateway, fake_llm, tmp_path
) -> None:
    _, conversation = ask(client, "hello")
    fake_llm.enqueue(tool_call("terminal", {"command": "echo tooled"}), text("All done."))
    events = _stream(gateway, f"/api/sessions/{conversation}/chat/stream", {"message": "go"})
    kinds = [name for name, _ in events]
    assert kinds[:2] == ["tool", "tool"] and kinds[-1] == "done"
    assert [data["phase"] for _, data in events[:2]] == ["start", "end"]
    assert events[0][1]["name"] == "terminal"
    assert "".join(d["text"] for name, d in events if name == "delta") == "All done."
    assert events[-1][1]["message"]["content"] == "All done."


def test_chat_errors_are_for_the_caller(client, gateway, fake_llm) -> None:
    _, conversation = ask(client, "hello")
    assert call(gateway, "POST", f"/api/sessions/{conversation}/chat", json={})[0] == 400
    status, body = call(
        gateway, "POST", f"/api/sessions/{conversation}/chat",
        json={"message": "hi", "model": "gpt-4o"},
    )  # fmt: skip
    assert status == 404 and body["error"]["code"] == "model_not_found"
    assert call(gateway, "POST", "/api/sessions/nope/chat", json={"message": "hi"})[0] == 404


def test_fork_copies_the_history_up_to_a_message(client, gateway) -> None:
    _, conversation = ask(client, "first")
    ask(client, "second", conversation)
    messages = gateway.db.get_conversation_messages(conversation)
    status, body = call(
        gateway, "POST", f"/api/sessions/{conversation}/fork",
        json={"message_id": messages[1]["id"], "title": "Try again"},
    )  # fmt: skip
    assert status == 201, body
    fork = body["id"]
    assert body["branched_from"] == conversation and fork != conversation
    assert [m["content"] for m in gateway.db.get_conversation_messages(fork)] == [
        "first", "echo: first"
    ]  # fmt: skip
    assert gateway.db.get_session(fork)["lineage"] == "branch"
    assert gateway.db.get_session(fork)["title"] == "Try again"
    whole = call(gateway, "POST", f"/api/sessions/{conversation}/fork", json={})[1]["id"]
    assert len(gateway.db.get_conversation_messages(whole)) == 4
    assert len(gateway.db.get_conversation_messages(conversation)) == 4  # untouched
