"""``X-Hermes-Session-Key``: the caller a request speaks for, as Hermes Agent 0.19's
clients send it, over real HTTP (the stock ``openai`` client and plain aiohttp)."""

from __future__ import annotations

from tests.gateway.api_calls import call
from tests.gateway.run_calls import request, wait_status

KEY = "X-Hermes-Session-Key"


def test_the_key_owns_the_conversations_it_starts_and_comes_back(client, gateway) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model="fake-model",
        messages=[{"role": "user", "content": "hi, I am alice"}],
        extra_headers={KEY: "webui:alice"},
    )
    assert raw.headers[KEY] == "webui:alice"
    session = raw.headers["X-Hermes-Session-Id"]
    assert gateway.db.get_session(session)["user_id"] == "webui:alice"
    stream = client.chat.completions.with_raw_response.create(
        model="fake-model",
        stream=True,
        messages=[{"role": "user", "content": "streamed"}],
        extra_headers={KEY: "webui:bob"},
    )
    assert stream.headers[KEY] == "webui:bob"
    list(stream.parse())
    status, started, headers = request(
        gateway, gateway.api_key, "POST", "/v1/runs", json={"input": "a run"},
        headers={KEY: "webui:carol"},
    )  # fmt: skip
    assert status == 202 and headers[KEY] == "webui:carol"
    wait_status(gateway, gateway.api_key, started["run_id"], "completed")
    assert gateway.db.get_session(started["session_id"])["user_id"] == "webui:carol"
    status, made = call(gateway, "POST", "/api/sessions", json={}, headers={KEY: "webui:dan"})
    assert status == 201 and made["session"]["user_id"] == "webui:dan"


def test_a_key_too_long_is_refused(gateway) -> None:
    status, body = call(gateway, "GET", "/v1/models", headers={KEY: "k" * 300})
    assert status == 400 and body["error"]["code"] == "invalid_session_key"


def test_capabilities_name_the_header(gateway) -> None:
    _, caps = call(gateway, "GET", "/v1/capabilities")
    assert caps["features"]["session_key_header"] == KEY
    assert caps["features"]["tool_progress_events"] is True
