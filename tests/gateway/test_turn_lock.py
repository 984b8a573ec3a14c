"""Two `hermes gateway run` processes on one store answer one conversation's turns one
at a time (invariant 11 across gateways): the store's turn lock, not the in-memory
lanes, keeps them apart. Runs on SQLite (one HERMES_HOME) and on PostgreSQL (both
pointed at one schema with HERMES_STATE_URL).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import openai
import pytest

from tests.fakes.llm_server import last_user_text, text
from tests.gateway.harness import stored_api_key, wait_for
from tests.gateway.processes import HEADER, free_port
from tests.state.helpers import StoreSpec

pytestmark = pytest.mark.slow  # two gateway processes on one store

ANSWER_TIME = 0.4  # seconds each model call takes: long enough for the two to overlap
ROUNDS = 3


class Calls:
    """The fake model's answers: the requests in the order they started, and the most
    that were being answered at once."""

    def __init__(self, fake_llm, seconds: float = ANSWER_TIME) -> None:
        self.seconds = seconds
        self.held: threading.Event | None = None  # set: calls wait for it, not `seconds`
        self.made: list[dict] = []
        self.running = 0
        self.most_at_once = 0
        self._lock = threading.Lock()
        fake_llm.responder = self.answer

    def answer(self, body: dict):
        with self._lock:
            self.made.append(body)
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            held = self.held
            if held is None:
                time.sleep(self.seconds)
            else:
                held.wait(120)
        finally:
            with self._lock:
                self.running -= 1
        return text(f"answer to {last_user_text(body)}")

    def in_order(self) -> list[dict]:
        with self._lock:
            return list(self.made)


def ask(url: str, words: str, session: str | None = None) -> Any:
    """One request through the HTTP API; the raw response (``.headers``, ``.parse()``)."""
    with openai.OpenAI(base_url=url, api_key=stored_api_key(), max_retries=0, timeout=60) as client:
        return client.chat.completions.with_raw_response.create(
            model="fake-model",
            messages=[{"role": "user", "content": words}],
            extra_headers={HEADER: session} if session else {},
        )


def start_two(run_gateway) -> tuple[list[str], list[Any]]:
    ports = [free_port(), free_port()]
    # Two separate gateways of one process each (a /stop must reach the one it names).
    gateways = [
        run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1") for port in ports
    ]
    return [g.wait_ready(p) for g, p in zip(gateways, ports, strict=True)], gateways


def test_two_gateways_answer_one_conversation_one_turn_at_a_time(
    configured_store: StoreSpec,
    fake_llm,
    run_gateway,
) -> None:
    calls = Calls(fake_llm)
    (a, b), gateways = start_two(run_gateway)
    session = ask(a, "hello").headers[HEADER]
    ask(b, "and hello from b", session)  # both gateways now keep an agent for it
    answers: dict[str, str] = {}

    def send(url: str, words: str, barrier: threading.Barrier) -> None:
        barrier.wait(10)
        answers[words] = ask(url, words, session).parse().choices[0].message.content

    for n in range(ROUNDS):
        barrier = threading.Barrier(2)
        senders = [
            threading.Thread(target=send, args=(url, f"round {n} via {name}", barrier))
            for url, name in ((a, "a"), (b, "b"))
        ]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(60)
    assert answers == {q: f"answer to {q}" for q in answers} and len(answers) == 2 * ROUNDS

    made = calls.in_order()
    assert calls.most_at_once == 1  # no call started before the one before it ended
    with configured_store.open(read_only=True) as db:
        stored = [m["content"] for m in db.get_conversation_messages(session)]
    questions, replies = stored[0::2], stored[1::2]
    assert replies == [f"answer to {q}" for q in questions]  # each followed by its own
    assert sorted(questions[2:]) == sorted(answers) and len(stored) == 2 * (2 + 2 * ROUNDS)
    # Each gateway's cached agent saw every turn the other one had answered before.
    for index, body in enumerate(made):
        sent = [m["content"] for m in body["messages"] if m["role"] != "system"]
        assert sent == stored[: 2 * index + 1]
    logs = "".join(g.output() for g in gateways)
    assert "is answering in another gateway; waiting" in logs


def test_a_gateway_waiting_for_the_other_keeps_the_message_through_stop_and_shutdown(
    configured_store: StoreSpec,
    fake_llm,
    run_gateway,
) -> None:
    calls = Calls(fake_llm, seconds=0.05)
    (a, b), (_, waiting) = start_two(run_gateway)
    session = ask(a, "hello").headers[HEADER]
    calls.held = threading.Event()  # a's next answer lasts until the checks below are done
    outcomes: dict[str, object] = {}

    def send(url: str, words: str) -> None:
        try:
            outcomes[words] = ask(url, words, session).parse().choices[0].message.content
        except openai.APIStatusError as exc:
            outcomes[words] = exc.status_code

    slow = threading.Thread(target=send, args=(a, "a slow question"))
    slow.start()
    wait_for(lambda: len(fake_llm.requests) == 2)
    queued = threading.Thread(target=send, args=(b, "asked while a answers"))
    queued.start()
    wait_for(lambda: "is answering in another gateway; waiting" in waiting.output())
    stop = ask(b, "/stop", session).parse().choices[0].message.content
    assert stop == "Another gateway is writing the current reply; it cannot be stopped here."
    assert waiting.terminate() == 0
    assert slow.is_alive()  # it stopped without waiting for a's turn to end
    queued.join(10)
    assert outcomes["asked while a answers"] == 503  # kept: "answered when it is back"
    with configured_store.open(read_only=True) as db:
        [kept] = db.gateway.pending_gateway_inputs()
        assert kept["payload"]["text"] == "asked while a answers"
    calls.held.set()
    slow.join(30)
    assert outcomes["a slow question"] == "answer to a slow question"

    port = free_port()
    again = run_gateway("--api-server", f"127.0.0.1:{port}")
    again.wait_ready(port)
    with configured_store.open(read_only=True) as db:
        wait_for(lambda: len(db.get_conversation_messages(session)) == 6)
        stored = [m["content"] for m in db.get_conversation_messages(session)]
        assert db.gateway.pending_gateway_inputs() == []
    assert stored == [
        "hello",
        "answer to hello",
        "a slow question",
        "answer to a slow question",
        "asked while a answers",
        "answer to asked while a answers",
    ]
