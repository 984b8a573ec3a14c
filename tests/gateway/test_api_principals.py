"""End to end (issue 44): each key of ``gateway.api_keys`` is a principal of its own.

A real gateway process serves alice's and bob's keys and the operator's. Alice starts a
conversation, a run (under an ``Idempotency-Key``) and a Responses answer; bob can
neither list, read, search, continue, fork, steer, stop, approve nor replay any of them:
each of alice's ids answers him exactly as an id nobody holds. The operator's key sees
both principals' conversations and runs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.llm_server import text
from tests.gateway.fake_platforms import FakeTelegram
from tests.gateway.principals import TELEGRAM_TOKEN, Running, configure, start

SECRET = "alice-secret-7391"
UNKNOWN = "20260101_000000_abcdef"


@pytest.fixture
def running(hermes_home: Path, fake_llm, run_gateway) -> Any:
    fake_llm.responder = lambda body: text("noted")
    with FakeTelegram(TELEGRAM_TOKEN) as telegram:
        configure(hermes_home, fake_llm.url, telegram)
        yield start(run_gateway, telegram)


def _run_done(gateway: Running, who: str | None, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, run, _ = gateway.call(who, "GET", f"/v1/runs/{run_id}")
        assert status == 200, run
        if run["status"] in ("completed", "failed", "cancelled"):
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not end")


def _alices_things(gateway: Running) -> dict[str, str]:
    _, conversation = gateway.chat("alice", f"remember {SECRET}")
    run_body = {"input": f"and again {SECRET}", "session_id": conversation}
    status, started, _ = gateway.call(
        "alice", "POST", "/v1/runs", json=run_body, headers={"Idempotency-Key": "key-1"}
    )
    assert status == 202, started
    _run_done(gateway, "alice", started["run_id"])
    status, response, _ = gateway.call(
        "alice", "POST", "/v1/responses", json={"model": "fake-model", "input": "hello"}
    )
    assert status == 200, response
    return {"conversation": conversation, "run": started["run_id"], "response": response["id"]}


def _as_unknown(gateway: Running, who: str, method: str, path: str, owned: str, **kw: Any):
    """bob's answer for alice's id, and his answer for an id nobody holds (with alice's
    id put in its place): the two must be the same."""
    status, body, _ = gateway.call(who, method, path.format(id=owned), **kw)
    unknown = UNKNOWN if not owned.startswith(("run_", "resp_")) else owned[:5] + "0" * 32
    other_status, other, _ = gateway.call(who, method, path.format(id=unknown), **kw)
    if isinstance(other, dict):
        other = _replaced(other, unknown, owned)
    return (status, body), (other_status, other)


def _replaced(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {k: _replaced(v, old, new) for k, v in value.items()}
    return value.replace(old, new) if isinstance(value, str) else value


SESSION_ROUTES = [
    ("GET", "/api/sessions/{id}", {}),
    ("GET", "/api/sessions/{id}/messages", {}),
    ("PATCH", "/api/sessions/{id}", {"json": {"title": "mine now"}}),
    ("POST", "/api/sessions/{id}/fork", {"json": {}}),
    ("POST", "/api/sessions/{id}/chat", {"json": {"message": "what was the secret?"}}),
    ("DELETE", "/api/sessions/{id}", {}),
]
RUN_ROUTES = [
    ("GET", "/v1/runs/{id}", {}),
    ("GET", "/v1/runs/{id}/events", {}),
    ("POST", "/v1/runs/{id}/steer", {"json": {"text": "tell me the secret"}}),
    ("POST", "/v1/runs/{id}/approval", {"json": {"choice": "once"}}),
    ("POST", "/v1/runs/{id}/stop", {"json": {}}),
]


def test_a_principal_reaches_none_of_anothers_conversations_and_runs(running: Running) -> None:
    alice = _alices_things(running)
    conversation, run_id = alice["conversation"], alice["run"]

    for method, path, kw in SESSION_ROUTES:
        (status, body), unknown = _as_unknown(running, "bob", method, path, conversation, **kw)
        assert status == 404, (path, body)
        assert (status, body) == unknown, path
    for method, path, kw in RUN_ROUTES:
        (status, body), unknown = _as_unknown(running, "bob", method, path, run_id, **kw)
        assert status == 404, (path, body)
        assert (status, body) == unknown, path
    (status, body), unknown = _as_unknown(running, "bob", "GET", "/v1/responses/{id}",
                                          alice["response"])  # fmt: skip
    assert status == 404 and (status, body) == unknown

    listed = running.call("bob", "GET", "/api/sessions")[1]["data"]
    assert conversation not in {row["id"] for row in listed}
    assert running.call("bob", "GET", f"/api/sessions?q={SECRET}")[1]["data"] == []

    # Continuing alice's conversation by its id, her response or her run's session.
    ask = {"model": "fake-model", "messages": [{"role": "user", "content": "the secret?"}]}
    status, body, _ = running.call(
        "bob", "POST", "/v1/chat/completions", json=ask,
        headers={"X-Hermes-Session-Id": conversation},
    )  # fmt: skip
    assert status == 404 and SECRET not in str(body) and "alice" not in str(body)
    follow = {"model": "fake-model", "input": "go on", "previous_response_id": alice["response"]}
    assert running.call("bob", "POST", "/v1/responses", json=follow)[0] == 404
    again = {"input": "the secret?", "session_id": conversation}
    assert running.call("bob", "POST", "/v1/runs", json=again)[0] == 404
    after = {"input": "the secret?", "previous_response_id": alice["response"]}
    assert running.call("bob", "POST", "/v1/runs", json=after)[0] == 404

    # Her Idempotency-Key is no key of his: the same request starts a run of his own.
    replay = {"input": f"and again {SECRET}", "session_id": conversation}
    status, body, headers = running.call(
        "bob", "POST", "/v1/runs", json=replay, headers={"Idempotency-Key": "key-1"}
    )
    assert status == 404 and "Idempotency-Replayed" not in headers
    mine = {"input": "my own run"}
    status, body, headers = running.call(
        "bob", "POST", "/v1/runs", json=mine, headers={"Idempotency-Key": "key-1"}
    )
    assert status == 202 and body["run_id"] != run_id and "Idempotency-Replayed" not in headers
    _run_done(running, "bob", body["run_id"])

    # Her whole history, sent without a session id, is no way into her conversation.
    history = [
        {"role": "user", "content": f"remember {SECRET}"},
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": f"and again {SECRET}"},
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "and the secret was?"},
    ]
    status, _, headers = running.call(
        "bob", "POST", "/v1/chat/completions", json={"model": "fake-model", "messages": history}
    )
    assert status == 200 and headers["X-Hermes-Session-Id"] != conversation
    assert "X-Hermes-Branched-From" not in headers

    # Nor is her chat completion's Idempotency-Key his: he gets an answer of his own.
    ask = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
    keyed = {"Idempotency-Key": "chat-key-1"}
    _, _, hers = running.call("alice", "POST", "/v1/chat/completions", json=ask, headers=keyed)
    status, _, his = running.call("bob", "POST", "/v1/chat/completions", json=ask, headers=keyed)
    assert status == 200 and his["X-Hermes-Session-Id"] != hers["X-Hermes-Session-Id"]

    # Nothing bob did reached alice's conversation.
    status, messages, _ = running.call("alice", "GET", f"/api/sessions/{conversation}/messages")
    assert status == 200
    assert [m["content"] for m in messages["data"] if m["role"] == "user"] == [
        f"remember {SECRET}",
        f"and again {SECRET}",
    ]
    assert running.call("bob", "GET", "/api/jobs")[0] == 403


def test_the_operator_sees_every_principal(running: Running) -> None:
    alice = _alices_things(running)
    _, bobs = running.chat("bob", "hello from bob")

    listed = {row["id"] for row in running.call(None, "GET", "/api/sessions")[1]["data"]}
    assert {alice["conversation"], bobs} <= listed
    assert running.call(None, "GET", f"/v1/runs/{alice['run']}")[0] == 200
    status, messages, _ = running.call(None, "GET", f"/api/sessions/{bobs}/messages")
    assert status == 200 and messages["data"][0]["content"] == "hello from bob"
    # Each principal lists its own conversations only (alice's Responses answer is in one).
    alices = {r["id"] for r in running.call("alice", "GET", "/api/sessions")[1]["data"]}
    assert alice["conversation"] in alices and len(alices) == 2 and bobs not in alices
    assert {r["id"] for r in running.call("bob", "GET", "/api/sessions")[1]["data"]} == {bobs}
    assert running.call(None, "GET", "/api/jobs")[0] == 200


def test_a_wrong_key_is_refused(running: Running) -> None:
    import httpx

    response = httpx.get(
        running.base + "/api/sessions", headers={"Authorization": "Bearer alice-key-0123456789"}
    )
    assert response.status_code == 401


def test_naming_anothers_id_on_creation_answers_as_an_unknown_id(running: Running) -> None:
    """No existence oracle on creation (issue 54): bob naming alice's conversation id to
    create or continue a conversation gets exactly the answer an id nobody holds gets (a
    principal's ids are named by hermes), and nothing of hers is touched."""
    alice = _alices_things(running)
    conversation = alice["conversation"]
    ask = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
    respond = {"model": "fake-model", "input": "hi"}

    def attempts(named: str) -> list[tuple[int, Any]]:
        header = {"X-Hermes-Session-Id": named}
        made = [
            running.call("bob", "POST", "/api/sessions", json={"id": named}),
            running.call("bob", "POST", "/v1/chat/completions", json=ask, headers=header),
            running.call("bob", "POST", "/v1/runs", json={"input": "hi", "session_id": named}),
            running.call("bob", "POST", "/v1/responses", json=respond, headers=header),
        ]
        return [(status, _replaced(body, named, "ID")) for status, body, _ in made]

    theirs, unknown = attempts(conversation), attempts(UNKNOWN)
    assert theirs == unknown
    assert [status for status, _ in theirs] == [404] * 4, theirs
    assert running.call("bob", "GET", f"/api/sessions/{UNKNOWN}")[0] == 404  # none was made
    # The operator, and alice for her own id, are answered as before.
    assert running.call("alice", "POST", "/api/sessions", json={"id": conversation})[0] == 409
    assert running.call(None, "POST", "/api/sessions", json={"id": "operator-1"})[0] == 201


def test_a_principal_neither_makes_nor_reaches_the_operators_jobs(running: Running) -> None:
    """Jobs run as the operator and deliver to any chat, so a principal that named the
    operator's job in ``context_from`` (to receive its answers) or another user's chat as
    its ``origin`` would act with the operator's authority: every jobs route is a 403."""
    job = {"name": "nightly", "schedule": "every 1h", "prompt": "Report.", "deliver": "local"}
    status, made, _ = running.call(None, "POST", "/api/jobs", json=job)
    assert status == 200, made
    job_id = made["job"]["id"]
    stolen = {
        "name": "mine",
        "schedule": "every 1m",
        "prompt": "Repeat what you were given.",
        "context_from": [job_id],
        "origin": {"platform": "telegram", "chat_id": "4242"},
        "deliver": "origin",
    }
    tries = [
        ("POST", "/api/jobs", stolen),
        ("PATCH", f"/api/jobs/{job_id}", {"deliver": "telegram:4242"}),
        ("POST", f"/api/jobs/{job_id}/run", {}),
        ("GET", f"/api/jobs/{job_id}", None),
        ("DELETE", f"/api/jobs/{job_id}", None),
    ]
    for method, path, body in tries:
        status, answer, _ = running.call("alice", method, path, json=body)
        assert status == 403, (method, path, answer)
        assert answer["error"].startswith("Scheduled jobs are the operator's")
    status, listed, _ = running.call(None, "GET", "/api/jobs?include_disabled=true")
    assert status == 200
    assert [(j["id"], j["deliver"], j["last_run_at"]) for j in listed["jobs"]] == [
        (job_id, "local", None)
    ]
