"""The sessions API in Hermes Agent 0.19's shapes (created empty, the ``session``
wrapper, message rows with ``timestamp``, ``tool_name``, ``reasoning``,
``finish_reason``), over real HTTP against a real gateway."""

from __future__ import annotations

from tests.fakes.llm_server import text, tool_call
from tests.gateway.api_calls import ask, call


def test_create_an_empty_conversation_and_chat_in_it(client, gateway) -> None:
    status, made = call(gateway, "POST", "/api/sessions", json={"title": "Plans"})
    assert status == 201 and made["object"] == "hermes.session"
    session = made["session"]
    assert session["title"] == "Plans" and session["source"] == "api_server"
    answer, tip = ask(client, "hello there", session["id"])
    assert answer == "echo: hello there" and tip == session["id"]
    status, got = call(gateway, "GET", f"/api/sessions/{session['id']}")
    assert status == 200 and got["object"] == "hermes.session"
    assert got["session"]["id"] == session["id"] and got["session"]["message_count"] == 2
    assert got["id"] == session["id"] and [s["id"] for s in got["lineage"]] == [session["id"]]


def test_create_refuses_a_taken_id_and_a_system_prompt(gateway) -> None:
    status, _ = call(gateway, "POST", "/api/sessions", json={"id": "mine-1"})
    assert status == 201
    status, body = call(gateway, "POST", "/api/sessions", json={"id": "mine-1"})
    assert status == 409 and body["error"]["code"] == "session_exists"
    status, body = call(gateway, "POST", "/api/sessions", json={"system_prompt": "be terse"})
    assert status == 400 and "'system_prompt'" in body["error"]["message"]


def test_message_rows_carry_hermes_agents_fields(client, gateway, fake_llm) -> None:
    fake_llm.script(
        tool_call("read_file", {"path": "nothing.txt"}), text("all done", reasoning="thought")
    )
    _, session = ask(client, "look around")
    status, page = call(gateway, "GET", f"/api/sessions/{session}/messages")
    assert status == 200
    rows = page["data"]
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert all(r["timestamp"] == r["created_at"] for r in rows)
    assert [r["finish_reason"] for r in rows] == [None, "tool_calls", None, "stop"]
    assert rows[2]["tool_name"] == "read_file" and rows[3]["reasoning"] == "thought"
