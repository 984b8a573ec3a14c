"""Retried requests across gateway processes on one store (SQLite and PostgreSQL): the
workers of one `hermes gateway run --workers 2`, two gateways, and a gateway SIGKILLed
mid-turn. A client gives up after 1 s while the model takes 4 s and sends the request
again: the model is called once, both tries get the same answer, one turn is stored.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import psutil
import pytest

from hermes.state import SessionDB
from tests.fakes.llm_server import text
from tests.gateway.harness import HEADER, stored_api_key, wait_for
from tests.gateway.processes import Gateway, free_port
from tests.state.helpers import StoreSpec

pytestmark = pytest.mark.slow  # gateway processes started and killed

QUESTION = "what takes four seconds?"
ANSWER = "the one answer"


@pytest.fixture
def serve(run_gateway: Any) -> Iterator[Any]:
    """Start `hermes gateway run` on a free port; (the gateway, its /v1 URL, its port)."""
    started: list[psutil.Process] = []

    def start(workers: int = 1) -> tuple[Gateway, str, int]:
        port = free_port()
        gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", str(workers))
        url = gateway.wait_ready(port)
        if workers > 1:
            wait_for(lambda: f"gateway ready: {workers} workers" in gateway.output(), timeout=30)
            started.extend(psutil.Process(gateway.proc.pid).children())
        return gateway, url, port

    yield start
    for worker in started:
        try:
            worker.kill()
        except psutil.NoSuchProcess:
            pass


def slow_model(fake_llm: Any, delay: float = 4.0) -> None:
    fake_llm.responder = lambda body: text(ANSWER, delay=delay)


def send(url: str, route: str, key: str, *, timeout: float = 30, stream: bool = False) -> Any:
    """One try of the request named ``key`` (Idempotency-Key), on a fresh connection."""
    if route == "chat":
        path = "/chat/completions"
        body: dict[str, Any] = {"model": "fake-model", "messages": [{"role": "user", "content": QUESTION}]}  # fmt: skip
    else:
        path = "/responses"
        body = {"model": "fake-model", "input": QUESTION}
    headers = {"Authorization": f"Bearer {stored_api_key()}", "Idempotency-Key": key}
    return httpx.post(f"{url}{path}", json={**body, "stream": stream}, headers=headers, timeout=timeout)  # fmt: skip


def answer_of(route: str, response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    if route == "chat":
        return str(response.json()["choices"][0]["message"]["content"])
    return str(response.json()["output"][0]["content"][0]["text"])


def give_up(url: str, route: str, key: str) -> None:
    """The first try: the client stops waiting after 1 s."""
    with pytest.raises(httpx.ReadTimeout):
        send(url, route, key, timeout=1.0)


def turns_stored(spec: StoreSpec) -> list[list[str]]:
    """Every conversation's standing messages."""
    db: SessionDB = spec.open()
    try:
        return [
            [m["content"] for m in db.get_conversation_messages(c["conversation_id"]) if not m["undone"]]
            for c in db.list_conversations(limit=100)
        ]  # fmt: skip
    finally:
        db.close()


def api_connections(worker: psutil.Process, port: int) -> int:
    return sum(
        1
        for c in worker.net_connections(kind="tcp")
        if c.laddr and c.laddr.port == port and c.raddr and c.status == "ESTABLISHED"
    )


def test_a_retry_served_by_the_other_worker_gets_the_first_answer(
    configured_store: StoreSpec, fake_llm, serve
) -> None:
    slow_model(fake_llm)
    gateway, url, port = serve(workers=2)
    workers = psutil.Process(gateway.proc.pid).children()
    give_up(url, "chat", "order-1")
    wait_for(lambda: fake_llm.requests)
    # Retries on fresh connections until both workers hold one: at least one retry is
    # then served by the worker that is not running the turn.
    answers: list[httpx.Response] = []
    retries: list[threading.Thread] = []

    def retry() -> None:
        answers.append(send(url, "chat", "order-1"))

    def both_workers_hold_a_retry() -> bool:
        if len(retries) < 24:
            retries.append(threading.Thread(target=retry))
            retries[-1].start()
        return all(api_connections(worker, port) for worker in workers)

    wait_for(both_workers_hold_a_retry, timeout=10, interval=0.1)
    for thread in retries:
        thread.join(30)
    assert {answer_of("chat", a) for a in answers} == {ANSWER}
    assert len(answers) == len(retries)
    assert len(fake_llm.requests) == 1
    assert turns_stored(configured_store) == [[QUESTION, ANSWER]]
    assert gateway.terminate() == 0


@pytest.mark.parametrize("route", ["chat", "responses"])
def test_a_retry_sent_to_another_gateway_gets_the_first_answer(
    configured_store: StoreSpec, fake_llm, serve, route: str
) -> None:
    slow_model(fake_llm)
    first, url_a, _ = serve()
    second, url_b, _ = serve()
    give_up(url_a, route, "order-2")
    wait_for(lambda: fake_llm.requests)
    again = send(url_b, route, "order-2")
    streamed = send(url_b, route, "order-2", stream=True)  # after the end, as a stream
    assert answer_of(route, again) == ANSWER
    assert ANSWER in streamed.text and streamed.status_code == 200
    if route == "responses":
        assert again.json()["id"] in streamed.text  # the same response, not a new one
    assert len(fake_llm.requests) == 1
    assert turns_stored(configured_store) == [[QUESTION, ANSWER]]
    assert first.terminate() == 0 and second.terminate() == 0


@pytest.mark.parametrize("route", ["chat", "responses"])
def test_a_retry_after_the_first_gateway_died_mid_turn_is_answered_once(
    configured_store: StoreSpec, fake_llm, serve, route: str
) -> None:
    calls: list[int] = []

    def respond(body: dict[str, Any]) -> Any:
        calls.append(1)
        return text("never sent", delay=60) if len(calls) == 1 else text(ANSWER)

    fake_llm.responder = respond
    doomed, url_a, _ = serve()
    survivor, url_b, _ = serve()
    give_up(url_a, route, "order-3")
    wait_for(lambda: calls)
    doomed.proc.kill()  # SIGKILL, mid-turn: its question is stored, its answer never
    doomed.proc.wait(10)

    again = send(url_b, route, "order-3")
    assert answer_of(route, again) == ANSWER
    assert answer_of(route, send(url_b, route, "order-3")) == ANSWER
    assert len(fake_llm.requests) == 2  # the killed call, and the one that answered
    assert turns_stored(configured_store) == [[QUESTION, ANSWER]]
    assert survivor.terminate() == 0


def test_a_regenerate_without_a_retry_mark_is_still_a_new_turn_across_gateways(
    configured_store: StoreSpec, fake_llm, serve
) -> None:
    """The same body with an SDK's first-try mark is a new request, not a retry."""
    fake_llm.enqueue(text("first"), text("second"))
    first, url_a, _ = serve()
    second, url_b, _ = serve()
    headers = {"Authorization": f"Bearer {stored_api_key()}", "X-Stainless-Retry-Count": "0"}
    body = {"model": "fake-model", "messages": [{"role": "user", "content": QUESTION}]}
    answers = [
        httpx.post(f"{url}/chat/completions", json=body, headers=headers, timeout=30)
        for url in (url_a, url_b)
    ]
    assert [answer_of("chat", a) for a in answers] == ["first", "second"]
    retried = {**headers, "X-Stainless-Retry-Count": "1"}
    again = httpx.post(f"{url_a}/chat/completions", json=body, headers=retried, timeout=30)
    assert answer_of("chat", again) == "second"  # the newest try's answer
    assert again.headers[HEADER] == answers[1].headers[HEADER]
    assert len(fake_llm.requests) == 2
    assert first.terminate() == 0 and second.terminate() == 0


def test_a_retry_after_a_worker_died_mid_turn_is_answered_once_beside_its_restart(
    configured_store: StoreSpec, fake_llm, serve
) -> None:
    """The supervisor starts the killed worker again, and the new worker answers the turn
    the kill cut off while the retry takes the request over: one answer either way."""
    calls: list[int] = []

    def respond(body: dict[str, Any]) -> Any:
        calls.append(1)
        return text("never sent", delay=60) if len(calls) == 1 else text(ANSWER, delay=0.5)

    fake_llm.responder = respond
    gateway, url, _ = serve(workers=2)
    give_up(url, "chat", "order-4")
    wait_for(lambda: calls)
    [running] = [
        worker
        for worker in psutil.Process(gateway.proc.pid).children()
        if fake_llm.port in [c.raddr.port for c in worker.net_connections(kind="tcp") if c.raddr]
    ]
    running.kill()
    again = send_until_taken(url, "order-4")
    assert answer_of("chat", again) == ANSWER
    wait_for(lambda: gateway.output().count("gateway ready") >= 4, timeout=60)  # restarted
    assert answer_of("chat", send(url, "chat", "order-4")) == ANSWER
    assert turns_stored(configured_store) == [[QUESTION, ANSWER]]
    assert len(fake_llm.requests) == 2  # the killed call, and the one that answered
    assert gateway.terminate() == 0


def send_until_taken(url: str, key: str) -> httpx.Response:
    """A retry as a client sends it: again when the connection broke (it may have gone to
    the killed worker's share of the port)."""
    for _ in range(10):
        try:
            return send(url, "chat", key, timeout=60)
        except httpx.TransportError:
            continue
    raise AssertionError("no worker took the retry")
