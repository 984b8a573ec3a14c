"""`hermes gateway run --workers N` as real processes: one port, one store, N gateways.

(And, in-process, the rule that lets the workers after the first run without the chat
platforms: a gateway leaves a chat's queued input to one that runs that chat.)

Each test starts the supervisor as a subprocess, with the fake model in this process;
requests go over real HTTP on fresh connections (so the kernel spreads them among the
workers), and the store is checked afterwards: every answered question and its answer
once, nothing forked, no broken invariant. SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from hermes.state import SessionDB
from tests.fakes.llm_server import text
from tests.gateway.harness import HEADER, GatewayThread, stored_api_key, wait_for, write_config
from tests.gateway.one_chat import KEY, chat_gateway, conversation, say, stored
from tests.gateway.processes import Gateway, free_port
from tests.state.helpers import StoreSpec

pytestmark = pytest.mark.slow  # gateway processes started, killed and restarted

CONVERSATIONS = 6
TURNS = 4


@pytest.fixture
def start_workers(run_gateway: Any) -> Iterator[Any]:
    """Start ``hermes gateway run --workers N``; no worker outlives the test."""
    workers: list[psutil.Process] = []

    def start(count: int = 2, *options: str) -> tuple[Gateway, str]:
        port = free_port()
        listen = f"127.0.0.1:{port}"
        gateway = run_gateway("--api-server", listen, "--workers", str(count), *options)
        url = gateway.wait_ready(port)
        wait_for(lambda: f"gateway ready: {count} workers" in gateway.output(), timeout=30)
        workers.extend(workers_of(gateway))
        return gateway, url

    yield start
    for worker in workers:
        try:
            worker.kill()
        except psutil.NoSuchProcess:
            pass


def workers_of(gateway: Gateway) -> list[psutil.Process]:
    return psutil.Process(gateway.proc.pid).children()


def ask(url: str, words: str, session: str | None) -> httpx.Response:
    """One turn on a fresh connection (a new one each time: any worker may take it)."""
    body = {"model": "fake-model", "messages": [{"role": "user", "content": words}]}
    headers = {"Authorization": f"Bearer {stored_api_key()}"}
    if session:
        headers[HEADER] = session
    return httpx.post(f"{url}/chat/completions", json=body, headers=headers, timeout=60)


class Load:
    """Conversations talking at once, each several turns in a row; what was answered."""

    def __init__(
        self,
        url: str,
        conversations: int,
        turns: int,
        *,
        label: str = "",
        sessions: dict[int, str] | None = None,
    ) -> None:
        self.url, self.turns, self.label = url, turns, label
        self.sessions: dict[int, str] = sessions if sessions is not None else {}
        self.answered: dict[int, list[str]] = {n: [] for n in range(conversations)}
        self.failures: list[str] = []
        self.threads = [threading.Thread(target=self._talk, args=(n,)) for n in self.answered]

    def start(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def join(self) -> None:
        for thread in self.threads:
            thread.join(120)

    def _talk(self, number: int) -> None:
        for turn in range(self.turns):
            words = f"{self.label}conversation {number} turn {turn}"
            try:
                answer = ask(self.url, words, self.sessions.get(number))
            except httpx.HTTPError as exc:
                self.failures.append(f"{words}: {type(exc).__name__}")
                continue
            if answer.status_code != 200:
                self.failures.append(f"{words}: HTTP {answer.status_code}")
                continue
            assert answer.json()["choices"][0]["message"]["content"] == f"echo: {words}"
            self.sessions.setdefault(number, answer.headers[HEADER])
            self.answered[number].append(words)

    @property
    def count(self) -> int:
        return sum(len(words) for words in self.answered.values())


def check_store(spec: StoreSpec, load: Load) -> dict[str, list[str]]:
    """Every answered turn stored once with its answer, nothing twice, nothing forked."""
    db: SessionDB = spec.open()
    try:
        assert db.invariant_violations() == []
        assert len(db.list_conversations(limit=1000)) == len(load.sessions)
        stored = {}
        for number, session in load.sessions.items():
            contents = [m["content"] for m in db.get_conversation_messages(session)]
            assert len(contents) == len(set(contents)), contents  # nothing twice
            for words in load.answered[number]:
                assert contents.count(words) == 1 and contents.count(f"echo: {words}") == 1
            stored[session] = contents
        return stored
    finally:
        db.close()


def test_two_workers_answer_the_same_conversations_at_once(
    configured_store: StoreSpec, fake_llm, start_workers
) -> None:
    fake_llm.responder = lambda body: text(f"echo: {body['messages'][-1]['content']}", delay=0.05)
    gateway, url = start_workers()
    workers = workers_of(gateway)
    assert len(workers) == 2
    first = Load(url, CONVERSATIONS, TURNS).start()
    first.join()
    # Then two requests at once to each conversation: they cross workers and must queue.
    both = [Load(url, CONVERSATIONS, 2, label=f"{n} ", sessions=first.sessions) for n in "ab"]
    for load in both:
        load.start()
    for load in both:
        load.join()
    # Both workers served: each holds a kept-alive connection to the model it called.
    for worker in workers:
        remote = [c.raddr.port for c in worker.net_connections(kind="tcp") if c.raddr]
        assert fake_llm.port in remote, f"worker pid {worker.pid} never called the model"
    assert gateway.terminate() == 0

    assert [load.failures for load in (first, *both)] == [[], [], []]
    assert [load.count for load in (first, *both)] == [CONVERSATIONS * TURNS, 12, 12]
    for load in both:
        check_store(configured_store, load)
    for number, session in first.sessions.items():
        contents = check_store(configured_store, first)[session]
        assert len(contents) == 2 * (TURNS + 4), contents
        # Each question right before its own answer: the turns never interleaved.
        for question, answer in zip(contents[::2], contents[1::2], strict=True):
            assert answer == f"echo: {question}"
        asked = {words for load in (first, *both) for words in load.answered[number]}
        assert set(contents[::2]) == asked


def test_a_killed_worker_is_started_again_and_the_other_keeps_serving(
    configured_store: StoreSpec, fake_llm, start_workers
) -> None:
    fake_llm.responder = lambda body: text(f"echo: {body['messages'][-1]['content']}", delay=0.1)
    gateway, url = start_workers()
    victim = workers_of(gateway)[1]
    load = Load(url, CONVERSATIONS, 12).start()
    wait_for(lambda: load.count >= CONVERSATIONS * 2, timeout=60)
    victim.send_signal(signal.SIGKILL)
    killed_at = load.count
    wait_for(lambda: "died (killed by SIGKILL); starting it again" in gateway.output())
    load.join()

    assert load.count - killed_at >= CONVERSATIONS * 4  # the gateway kept answering
    assert len(load.failures) <= CONVERSATIONS  # at most the turns in flight in the victim
    wait_for(lambda: len(workers_of(gateway)) == 2 and gateway.output().count("gateway ready") >= 4)
    assert victim.pid not in [w.pid for w in workers_of(gateway)]
    # A question the victim took but never answered is answered later, once, or never;
    # either way the conversation stays one well-formed line.
    assert ask(url, "after the crash", load.sessions[0]).status_code == 200
    assert gateway.terminate() == 0
    check_store(configured_store, load)


def test_sigterm_keeps_what_waits_in_every_worker_and_the_restart_answers_it_once(
    configured_store: StoreSpec, fake_llm, start_workers
) -> None:
    hung: list[int] = []

    def respond(body: dict[str, Any]) -> Any:
        words = body["messages"][-1]["content"]
        if words == "slow" and not hung:
            hung.append(1)
            return text("(never finished)", delay=60)
        return text(f"echo: {words}")

    fake_llm.responder = respond
    gateway, url = start_workers(2, "--grace", "0.5")
    session = ask(url, "hi", None).headers[HEADER]
    outcomes: dict[str, Any] = {}

    def talk(words: str) -> None:
        try:
            outcomes[words] = ask(url, words, session)
        except httpx.HTTPError as exc:
            outcomes[words] = exc

    questions = ["slow", *(f"waiting {n}" for n in range(6))]
    threads = [threading.Thread(target=talk, args=(words,)) for words in questions]
    threads[0].start()
    wait_for(lambda: hung)
    for thread in threads[1:]:  # queued behind the slow turn, or waiting for its lock
        thread.start()
    port = int(url.rsplit(":", 1)[1].removesuffix("/v1"))
    wait_for(lambda: api_connections(gateway, port) == len(questions))
    time.sleep(0.3)  # accepted; now read and handed to a lane
    assert gateway.terminate() == 0
    for thread in threads:
        thread.join(30)
    for words in questions:
        assert outcomes[words].status_code == 503, words
        assert "will be answered" in outcomes[words].json()["error"]["message"]

    again, _ = start_workers(2)
    db = configured_store.open()
    try:
        wait_for(
            lambda: (
                not db.gateway.pending_gateway_inputs()
                and len(standing(db, session)) == 2 * (1 + len(questions))
            ),
            timeout=30,
        )
        contents = standing(db, session)
        assert db.invariant_violations() == []
    finally:
        db.close()
    assert contents[:2] == ["hi", "echo: hi"]
    assert sorted(contents[2::2]) == sorted(questions)  # each once, none lost
    assert contents[3::2] == [f"echo: {words}" for words in contents[2::2]]
    assert again.terminate() == 0


def standing(db: SessionDB, session: str) -> list[str]:
    """The conversation as it stands: the interrupted turn's undone rows left out."""
    return [m["content"] for m in db.get_conversation_messages(session) if not m["undone"]]


def api_connections(gateway: Gateway, port: int) -> int:
    """Client connections the workers have accepted on the API's port."""
    return sum(
        1
        for worker in workers_of(gateway)
        for c in worker.net_connections(kind="tcp")
        if c.laddr and c.laddr.port == port and c.raddr and c.status == "ESTABLISHED"
    )


@pytest.mark.parametrize("workers", ["0", "-2"])
def test_workers_below_one_is_a_clear_error(
    hermes_home: Path,
    config_file: Path,
    run_gateway,
    workers: str,
) -> None:
    gateway = run_gateway("--api-server", f"127.0.0.1:{free_port()}", "--workers", workers)
    assert gateway.proc.wait(30) == 1
    output = gateway.output()
    assert f"--workers wants 1 or more processes, not {workers}" in output
    assert "Traceback" not in output and len(output.strip().splitlines()) == 1


def test_a_taken_port_is_refused_before_any_worker_starts(
    hermes_home: Path,
    config_file: Path,
    run_gateway,
    start_workers,
) -> None:
    first, url = start_workers()
    port = int(url.rsplit(":", 1)[1].removesuffix("/v1"))
    # Another gateway with workers must not quietly share the port with the first.
    second = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "2")
    assert second.proc.wait(30) == 1
    assert f"cannot listen on 127.0.0.1:{port}: the address is already in use" in second.output()
    assert "Traceback" not in second.output() and "worker" not in second.output()
    assert first.terminate() == 0


def test_workers_stop_when_their_supervisor_is_killed(
    hermes_home: Path, config_file: Path, start_workers
) -> None:
    gateway, url = start_workers()
    port = int(url.rsplit(":", 1)[1].removesuffix("/v1"))
    workers = workers_of(gateway)
    gateway.proc.send_signal(signal.SIGKILL)
    gateway.proc.wait(10)
    _, alive = psutil.wait_procs(workers, timeout=30)
    assert alive == []
    assert gateway.output().count("the supervisor is gone: shutting down") == 2
    with socket.socket() as probe:  # the port is free again: nothing listens on it
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))


def test_a_gateway_without_the_chat_leaves_its_queued_input_to_one_that_runs_it(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    from hermes.gateway.envelopes import Origin
    from hermes.gateway.lanes import MESSAGE, WorkItem
    from hermes.gateway.queued_turn import QueuedTurn
    from tests.state.procs import dead_pid

    write_config(hermes_home, fake_llm.url, gateway={"queue_takeover_after": 1})
    chat = chat_gateway(hermes_home)
    try:
        say(chat, "hello")
        wait_for(lambda: chat.chat.texts() == ["echo: hello"])
        conversation_id = conversation(chat)
    finally:
        chat.stop()
    api_only = GatewayThread(hermes_home).start()  # as a worker after the first runs
    try:
        # A gateway that crashed (its process is gone) left a chat's input.
        crashed = f"{socket.gethostname()}:pid={dead_pid()}:agent=crashed"
        origin = Origin(platform="telegram", chat_id="100", user_id="42")
        item = WorkItem(
            kind=MESSAGE,
            key=KEY,
            conversation_id=conversation_id,
            asked=QueuedTurn(text="left behind"),
            origin=origin,
        )
        api_only.db.gateway.enqueue_gateway_input(KEY, item.payload(), owner=crashed)
        time.sleep(1.0)  # four heartbeats, each a claim: none may take the chat's input
        [left] = api_only.db.gateway.pending_gateway_inputs()
        assert left["owner"] == crashed and len(fake_llm.requests) == 1
        again = chat_gateway(hermes_home)  # the chat's gateway, started again, answers it
        try:
            wait_for(lambda: again.chat.texts() == ["echo: left behind"])
            assert again.db.gateway.pending_gateway_inputs() == []
            assert stored(again, conversation_id)[-2:] == ["left behind", "echo: left behind"]
        finally:
            again.stop()
    finally:
        api_only.stop()


def test_a_config_warning_is_said_once_not_once_per_worker(
    hermes_home: Path, fake_llm, start_workers
) -> None:
    write_config(hermes_home, fake_llm.url, agent={"not_a_key": 1})
    gateway, _ = start_workers()
    said = [line for line in gateway.output().splitlines() if "does not use" in line]
    assert len(said) == 1 and "agent.not_a_key" in said[0], gateway.output()
    assert gateway.terminate() == 0
