"""Client retries: one model call and one stored turn however often a client retries.

An upstream failure says ``x-should-retry: false`` (the SDKs would otherwise call the
failing model again and again); a request retried by its SDK after a timeout, or sent
again with the same ``Idempotency-Key``, gets the first one's answer, waiting for it
while it runs.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import openai

from tests.fakes.llm_server import server_error, text
from tests.gateway.harness import GatewayThread

QUESTION = [{"role": "user", "content": "what is slow?"}]


def test_an_upstream_failure_tells_the_sdk_not_to_retry(gateway: GatewayThread, fake_llm) -> None:
    fake_llm.enqueue(server_error(500), times=5)
    with openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=3) as api:
        try:
            api.chat.completions.create(model="fake-model", messages=QUESTION)
        except openai.APIStatusError as exc:
            assert exc.status_code == 502
            assert exc.response.headers["x-should-retry"] == "false"
        else:
            raise AssertionError("the failing model's answer was not an error")
        try:
            api.responses.create(model="fake-model", input="again")
        except openai.APIStatusError as exc:
            assert exc.response.headers["x-should-retry"] == "false"
    assert len(fake_llm.requests) == 2  # one per SDK call, no retries
    assert len(gateway.db.list_conversations()) == 2


def test_a_retry_after_a_client_timeout_gets_the_first_answer(
    gateway: GatewayThread, fake_llm
) -> None:
    fake_llm.enqueue(text("slowly", delay=3.0))
    with openai.OpenAI(
        base_url=gateway.url, api_key=gateway.api_key, max_retries=8, timeout=1.0
    ) as api:
        answer = api.chat.completions.create(model="fake-model", messages=QUESTION)
    assert answer.choices[0].message.content == "slowly"
    assert len(fake_llm.requests) == 1
    [conversation] = gateway.db.list_conversations()
    stored = gateway.db.get_conversation_messages(conversation["conversation_id"])
    assert [m["content"] for m in stored] == ["what is slow?", "slowly"]


def test_requests_with_one_idempotency_key_share_one_turn(gateway: GatewayThread, fake_llm) -> None:
    fake_llm.enqueue(text("once", delay=1.0))
    headers = {"Authorization": f"Bearer {gateway.api_key}", "Idempotency-Key": "order-17"}
    body = {"model": "fake-model", "messages": QUESTION}

    def send(stream: bool) -> tuple[str, str]:
        response = httpx.post(
            f"{gateway.url}/chat/completions",
            json={**body, "stream": stream},
            headers=headers,
            timeout=30,
        )
        assert response.status_code == 200, response.text
        return response.headers["X-Hermes-Session-Id"], response.text

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(send, [False, False, True]))
    assert len({session for session, _ in answers}) == 1
    assert all("once" in body for _, body in answers)
    assert '"once"' in send(False)[1]  # after it ended, too
    assert len(fake_llm.requests) == 1
    assert len(gateway.db.list_conversations()) == 1


def test_the_same_body_without_a_retry_mark_is_a_new_request(
    client: openai.OpenAI, fake_llm
) -> None:
    """A chat UI's "regenerate" sends the very body it regenerates."""
    fake_llm.enqueue(text("first"), text("second"))
    answers = [
        client.chat.completions.create(model="fake-model", messages=QUESTION) for _ in range(2)
    ]
    assert [a.choices[0].message.content for a in answers] == ["first", "second"]


def test_responses_requests_with_one_idempotency_key_share_one_turn(
    gateway: GatewayThread, fake_llm
) -> None:
    fake_llm.enqueue(text("once", delay=1.0))
    headers = {"Authorization": f"Bearer {gateway.api_key}", "Idempotency-Key": "resp-17"}

    def send(stream: bool) -> str:
        response = httpx.post(
            f"{gateway.url}/responses",
            json={"model": "fake-model", "input": "what is slow?", "stream": stream},
            headers=headers,
            timeout=30,
        )
        assert response.status_code == 200, response.text
        return response.text

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(send, [False, False, True]))
    assert all('"once"' in body for body in answers)
    assert len(fake_llm.requests) == 1
    assert len(gateway.db.list_conversations()) == 1
