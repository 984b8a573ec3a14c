"""The OpenAI-compatible HTTP API, driven by the real ``openai`` package."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import openai
import pytest

from hermes.gateway.errors import PlatformStartError
from hermes.gateway.settings import ApiServerSettings
from hermes.testing.ports import free_port
from tests.fakes.llm_server import auth_error, server_error
from tests.gateway.api_calls import HEADER, ask, assert_caller_error
from tests.gateway.harness import GatewayThread, write_config


def test_continuity_over_many_turns(client, gateway, fake_llm) -> None:
    answer, session = ask(client, "turn 0")
    assert answer == "echo: turn 0"
    for n in range(1, 25):
        answer, tip = ask(client, f"turn {n}", session)
        assert answer == f"echo: turn {n}"
        assert tip == session
    # The model saw the whole conversation on the last turn, in order.
    seen = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] != "system"]
    assert seen == [x for n in range(25) for x in (f"turn {n}", f"echo: turn {n}")][:-1]
    stored = [m["content"] for m in gateway.db.get_conversation_messages(session)]
    assert stored == [x for n in range(25) for x in (f"turn {n}", f"echo: turn {n}")]
    assert gateway.db.gateway.get_route(f"api_server:{session}") == session


def test_stream_names_the_session_in_headers_and_first_event(client, gateway) -> None:
    _, session = ask(client, "hello")
    with client.chat.completions.with_streaming_response.create(
        model="fake-model",
        messages=[{"role": "user", "content": "stream this reply"}],
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={HEADER: session},
    ) as response:
        assert response.headers[HEADER] == session
        chunks = list(response.parse())
    assert chunks[0].model_extra["hermes_session_id"] == session
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "echo: stream this reply"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    assert [m["content"] for m in gateway.db.get_conversation_messages(session)][-1] == text


def test_no_header_starts_a_new_conversation_seeded_with_the_history(client, gateway) -> None:
    messages = [
        {"role": "system", "content": "You are a name-remembering bot."},
        {"role": "user", "content": "my name is Ada"},
        {"role": "assistant", "content": "Hello Ada"},
        {"role": "user", "content": "what is my name?"},
    ]
    raw = client.chat.completions.with_raw_response.create(model="fake-model", messages=messages)
    session = raw.headers[HEADER]
    assert raw.parse().choices[0].message.content == "echo: what is my name?"
    stored = [m["content"] for m in gateway.db.get_conversation_messages(session)]
    assert stored == ["my name is Ada", "Hello Ada", "what is my name?", "echo: what is my name?"]
    _, other = ask(client, "a different chat")
    assert other != session


def test_a_client_chosen_session_id_starts_that_conversation(client, gateway) -> None:
    _, session = ask(client, "hi", session="my-chat.1")
    assert session == "my-chat.1"
    assert gateway.db.get_session("my-chat.1")["source"] == "api_server"
    with pytest.raises(openai.BadRequestError):
        ask(client, "hi", session="bad id with spaces")


def test_models_and_health(client, gateway) -> None:
    assert [m.id for m in client.models.list().data] == ["fake-model"]
    health = httpx.get(gateway.url.removesuffix("/v1") + "/health")
    assert health.json()["status"] == "ok"


def test_the_root_says_where_to_go_without_a_key(gateway) -> None:
    front = httpx.get(gateway.url.removesuffix("/v1") + "/")
    assert front.status_code == 200  # not a bare 401: a browser lands here first
    body = front.json()
    assert body["api"] == "/v1" and "no web page" in body["message"]
    assert httpx.get(gateway.url + "/models").status_code == 401  # the API still needs it


def test_a_failing_model_is_a_502_and_the_next_turn_works(client, gateway, fake_llm) -> None:
    _, session = ask(client, "first")
    fake_llm.enqueue(server_error(500))
    with pytest.raises(openai.APIStatusError) as failure:
        ask(client, "second", session)
    assert failure.value.status_code == 502
    assert failure.value.response.headers[HEADER] == session
    assert ask(client, "third", session) == ("echo: third", session)


def test_slash_commands_over_the_api(client, gateway, fake_llm) -> None:
    _, session = ask(client, "one")
    ask(client, "two", session)
    answer, _ = ask(client, "/undo", session)
    assert answer.startswith("Undid 1 turn (2 messages)")
    answer, _ = ask(client, "/title Planning", session)
    assert answer == "Title set to 'Planning'."
    fake_llm.enqueue("a second try")
    assert ask(client, "/retry", session)[0] == "a second try"
    assert "Context now" in ask(client, "/usage", session)[0]
    assert "each request's 'model' chooses" in ask(client, "/model other-model", session)[0]
    ask(client, "three", session)
    assert fake_llm.requests[-1]["model"] == "fake-model"
    helped = ask(client, "/help", session)[0]
    assert "/compress" in helped and "/background" not in helped  # a chat's, not the API's
    assert ask(client, "/sessions", session)[0].startswith(
        "/sessions works in the terminal chat only"
    )
    # The gateway's own commands act on a chat, which an API caller has not.
    assert ask(client, "/bg look it up", session)[0].startswith(
        "/background works in a messaging chat (Telegram, Discord, Slack) only"
    )
    assert ask(client, "/etc/hosts is empty", session)[0] == "echo: /etc/hosts is empty"
    answer, fresh = ask(client, "/new", session)
    assert answer == "Started a new conversation." and fresh != session
    history = [m["content"] for m in gateway.db.get_messages(session)]
    # /undo took back "two", /retry took back "one" and asked it again.
    assert history == [
        "one",
        "a second try",
        "three",
        "echo: three",
        "/etc/hosts is empty",
        "echo: /etc/hosts is empty",
    ]


# -- access -------------------------------------------------------------------------


def test_bearer_key_required_when_configured(hermes_home: Path, config_file: Path, caplog) -> None:
    key = "gw-secret-key-4242424242"
    caplog.set_level("DEBUG")
    with GatewayThread(hermes_home, api=ApiServerSettings(port=0, key=key)) as gateway:
        for wrong in ("nope", None):
            headers = {"Authorization": f"Bearer {wrong}"} if wrong else {}
            response = httpx.post(gateway.url + "/chat/completions", json={}, headers=headers)
            assert response.status_code == 401
            assert response.json()["error"]["code"] == "invalid_api_key"
        with (
            openai.OpenAI(base_url=gateway.url, api_key="wrong", max_retries=0) as bad,
            pytest.raises(openai.AuthenticationError),
        ):
            ask(bad, "hello")
        with openai.OpenAI(base_url=gateway.url, api_key=key, max_retries=0) as good:
            assert ask(good, "hello")[0] == "echo: hello"
    assert key not in caplog.text


def test_refuses_to_listen_beyond_loopback_without_a_key(
    hermes_home: Path, config_file: Path
) -> None:
    gateway = GatewayThread(hermes_home, api=ApiServerSettings(host="0.0.0.0", port=0))
    try:
        with pytest.raises(PlatformStartError, match="needs a bearer key"):
            gateway.start()
    finally:
        gateway.stop()


def test_port_in_use_is_a_clear_error(hermes_home: Path, config_file: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        gateway = GatewayThread(hermes_home, api=ApiServerSettings(port=port))
        try:
            with pytest.raises(PlatformStartError, match="already in use"):
                gateway.start()
        finally:
            gateway.stop()


@pytest.mark.parametrize("reply", [auth_error(), server_error(500)], ids=["401", "500"])
def test_an_upstream_failure_tells_the_caller_without_operator_advice(
    client, gateway, fake_llm, reply, caplog
) -> None:
    fake_llm.enqueue(reply)
    with pytest.raises(openai.APIStatusError) as failure:
        ask(client, "hello")
    assert_caller_error(failure.value.status_code, failure.value.response.json())
    # The operator's account (which endpoint, what it said) stays in the gateway log.
    assert f"The endpoint {fake_llm.url}" in caplog.text


def test_an_upstream_failure_while_streaming_ends_with_the_caller_sentence(
    client, gateway, fake_llm
) -> None:
    fake_llm.enqueue(auth_error())
    response = httpx.post(
        f"{gateway.url}/chat/completions",
        json={
            "model": "fake-model",
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        },
        headers={"Authorization": f"Bearer {gateway.api_key}"},
        timeout=30,
    )
    events = [line.removeprefix("data: ") for line in response.text.splitlines() if line]
    error = next(json.loads(e) for e in events if e.startswith('{"error"'))
    assert_caller_error(502, error)


def test_an_unreachable_model_endpoint_is_a_502_for_the_caller(hermes_home, model_key) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"  # a port nobody listens on
    write_config(hermes_home, closed)
    with GatewayThread(hermes_home) as gateway:
        response = httpx.post(
            f"{gateway.url}/chat/completions",
            json={"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]},
            headers={"Authorization": f"Bearer {gateway.api_key}"},
            timeout=60,
        )
    assert_caller_error(response.status_code, response.json())


def test_after_new_the_old_header_addresses_the_new_conversation(client, gateway) -> None:
    _, old = ask(client, "before new")
    _, fresh = ask(client, "/new", old)
    assert fresh != old
    answer, tip = ask(client, "after new", old)  # a client that kept its old header
    assert (answer, tip) == ("echo: after new", fresh)
    assert [m["content"] for m in gateway.db.get_conversation_messages(fresh)] == [
        "after new",
        "echo: after new",
    ]
    assert [m["content"] for m in gateway.db.get_conversation_messages(old)][-1] == (
        "echo: before new"
    )


def test_the_resume_header_goes_back_to_the_old_conversation(client, gateway) -> None:
    _, old = ask(client, "before new")
    ask(client, "/new", old)
    raw = client.chat.completions.with_raw_response.create(
        model="fake-model",
        messages=[{"role": "user", "content": "back again"}],
        extra_headers={HEADER: old, "X-Hermes-Resume": "1"},
    )
    assert raw.headers[HEADER] == old
    assert [m["content"] for m in gateway.db.get_conversation_messages(old)][-2:] == [
        "back again",
        "echo: back again",
    ]
