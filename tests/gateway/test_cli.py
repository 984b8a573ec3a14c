"""`hermes gateway run` as a real subprocess: the HTTP API, SIGTERM, restart, errors."""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import openai
import pytest

from hermes.state import SessionDB
from tests.fakes.llm_server import text
from tests.gateway.compaction import PADDING, SUMMARY, is_summary_request
from tests.gateway.harness import stored_api_key, wait_for, write_config
from tests.gateway.processes import HEADER, free_port


@pytest.mark.slow  # a gateway process through compression
def test_continuity_and_compression_through_the_subprocess(
    hermes_home: Path, fake_llm, run_gateway
) -> None:
    write_config(hermes_home, fake_llm.url, model={"context_length": 2000})
    fake_llm.responder = lambda body: text(SUMMARY) if is_summary_request(body) else None
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}")
    url = gateway.wait_ready(port)
    with openai.OpenAI(base_url=url, api_key=stored_api_key(), max_retries=0, timeout=30) as client:
        session, tips = None, []
        for n in range(14):
            raw = client.chat.completions.with_raw_response.create(
                model="fake-model",
                messages=[{"role": "user", "content": f"note {n}: {PADDING}"}],
                extra_headers={HEADER: session} if session else {},
            )
            assert raw.parse().choices[0].message.content == f"echo: note {n}: {PADDING}"
            session = session or raw.headers[HEADER]
            tips.append(raw.headers[HEADER])
        assert len(set(tips)) > 1, "the conversation never compressed"
        old = tips[0]
        raw = client.chat.completions.with_raw_response.create(
            model="fake-model",
            messages=[{"role": "user", "content": "still there?"}],
            extra_headers={HEADER: old},
        )
        assert raw.parse().choices[0].message.content == "echo: still there?"
    assert gateway.terminate() == 0
    output = gateway.output()
    assert f"api_server: listening on http://127.0.0.1:{port}/v1" in output
    with SessionDB(db_path=hermes_home / "state.db", read_only=True) as db:
        assert raw.headers[HEADER] == db.resolve_tip(old)
        contents = [m["content"] for m in db.get_conversation_messages(old)]
        assert contents[-2:] == ["still there?", "echo: still there?"]
        assert len(contents) == 2 * 15 == len(set(contents))
        assert db.invariant_violations() == []


def test_a_turn_writes_no_log_line_per_model_request(
    hermes_home: Path, config_file: Path, run_gateway
) -> None:
    # httpx2 (the model client's HTTP library) logs each request at INFO: a line a
    # model call would cost every turn its formatting, the redactor and a write.
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}")
    url = gateway.wait_ready(port)
    with openai.OpenAI(base_url=url, api_key=stored_api_key(), max_retries=0, timeout=30) as client:
        for n in range(2):
            answer = client.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": f"hello {n}"}]
            )
            assert answer.choices[0].message.content == f"echo: hello {n}"
    assert gateway.terminate() == 0
    output = gateway.output()
    assert "gateway ready" in output
    assert "HTTP Request" not in output


def test_the_gateway_runs_on_uvloop_where_it_is_installed(
    hermes_home: Path, config_file: Path, run_gateway
) -> None:
    # A dependency everywhere but Windows: asyncio's own loop costs each turn more CPU.
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}")
    gateway.wait_ready(port)
    assert gateway.terminate() == 0
    expected = "asyncio" if sys.platform == "win32" else "uvloop"
    assert f"gateway ready (event loop: {expected})" in gateway.output()


@pytest.mark.slow  # a gateway process stopped and restarted
def test_sigterm_with_queued_input_then_restart(hermes_home: Path, fake_llm, run_gateway) -> None:
    write_config(hermes_home, fake_llm.url)
    fake_llm.responder = lambda body: (
        text("slow answer", delay=1.5) if "slow" in str(body["messages"][-1]) else None
    )
    port = free_port()
    # One process: the queued question is in this gateway's queue (with --workers it may
    # wait in another worker for the turn lock instead; test_workers.py covers that).
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1")
    url = gateway.wait_ready(port)
    client = openai.OpenAI(base_url=url, api_key=stored_api_key(), max_retries=0, timeout=30)
    first = client.chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}]
    )
    session = first.headers[HEADER]
    outcomes: dict[str, object] = {}

    def ask(words: str) -> None:
        try:
            outcomes[words] = (
                client.chat.completions.create(
                    model="fake-model",
                    messages=[{"role": "user", "content": words}],
                    extra_headers={HEADER: session},
                )
                .choices[0]
                .message.content
            )
        except openai.APIError as exc:
            outcomes[words] = exc

    slow = threading.Thread(target=ask, args=("slow question",))
    slow.start()
    wait_for(lambda: len(fake_llm.requests) == 2)
    queued = threading.Thread(target=ask, args=("queued question",))
    queued.start()
    with SessionDB(db_path=hermes_home / "state.db", read_only=True) as db:
        wait_for(lambda: db.gateway.pending_gateway_inputs())
    assert gateway.terminate() == 0
    slow.join(10)
    queued.join(10)
    client.close()
    assert outcomes["slow question"] == "slow answer"  # the running turn finished
    assert isinstance(outcomes["queued question"], openai.APIStatusError)
    assert outcomes["queued question"].status_code == 503

    again = run_gateway("--api-server", f"127.0.0.1:{port}")
    again.wait_ready(port)
    with SessionDB(db_path=hermes_home / "state.db", read_only=True) as db:
        wait_for(
            lambda: (
                not db.gateway.pending_gateway_inputs()
                and len(db.get_conversation_messages(session)) == 6
            )
        )
        contents = [m["content"] for m in db.get_conversation_messages(session)]
    assert contents == [
        "hi",
        "echo: hi",
        "slow question",
        "slow answer",
        "queued question",
        "echo: queued question",
    ]
    assert again.terminate() == 0


@pytest.mark.slow  # a gateway process stopped and restarted
def test_sigterm_mid_turn_keeps_it_and_the_restart_answers_all_four_once_in_order(
    hermes_home: Path, fake_llm, run_gateway
) -> None:
    """Issue 13: SIGTERM with a turn in flight (past --grace) and three queued. Every
    caller gets a 503 saying it will be answered; after the restart the four are
    answered exactly once, the interrupted one first."""
    write_config(hermes_home, fake_llm.url)
    hung: list[int] = []

    def respond(body):
        if "question 1" in str(body["messages"][-1]) and not hung:
            hung.append(1)
            return text("(never finished)", delay=60)
        return None

    fake_llm.responder = respond
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--grace", "0.5", "--workers", "1")
    url = gateway.wait_ready(port)
    client = openai.OpenAI(base_url=url, api_key=stored_api_key(), max_retries=0, timeout=60)
    session = client.chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}]
    ).headers[HEADER]
    outcomes: dict[str, object] = {}

    def ask(words: str) -> None:
        try:
            outcomes[words] = client.chat.completions.create(
                model="fake-model",
                messages=[{"role": "user", "content": words}],
                extra_headers={HEADER: session},
            )
        except openai.APIError as exc:
            outcomes[words] = exc

    questions = [f"question {n}" for n in range(1, 5)]
    threads = [threading.Thread(target=ask, args=(q,)) for q in questions]
    threads[0].start()
    wait_for(lambda: hung)
    with SessionDB(db_path=hermes_home / "state.db", read_only=True) as db:
        for queued, thread in enumerate(threads[1:], 1):  # one after another: a known order
            thread.start()
            wait_for(lambda queued=queued: len(db.gateway.pending_gateway_inputs()) == queued)
    assert gateway.terminate() == 0
    for thread in threads:
        thread.join(30)
    client.close()
    for words in questions:
        assert isinstance(outcomes[words], openai.APIStatusError), words
        assert outcomes[words].status_code == 503
        assert "will be answered" in outcomes[words].message

    again = run_gateway("--api-server", f"127.0.0.1:{port}")
    again.wait_ready(port)
    with SessionDB(db_path=hermes_home / "state.db", read_only=True) as db:
        wait_for(
            lambda: not db.gateway.pending_gateway_inputs() and len(db.get_messages(session)) == 10
        )
        standing = [m["content"] for m in db.get_messages(session)]
    assert standing == ["hi", "echo: hi"] + [line for q in questions for line in (q, f"echo: {q}")]
    assert again.terminate() == 0


def test_port_in_use_exits_non_zero_with_a_sentence(
    hermes_home: Path, config_file: Path, run_gateway
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        gateway = run_gateway("--api-server", f"127.0.0.1:{port}")
        assert gateway.proc.wait(30) == 1
    assert (
        f"api_server: cannot listen on 127.0.0.1:{port}: the address is already in use"
        in gateway.output()
    )
    assert "Traceback" not in gateway.output()


def test_no_platform_is_a_clear_error(hermes_home: Path, config_file: Path, run_gateway) -> None:
    gateway = run_gateway()
    assert gateway.proc.wait(30) == 1
    assert "No platform is enabled" in gateway.output()


def test_a_missing_token_is_a_clear_error(hermes_home: Path, fake_llm, run_gateway) -> None:
    write_config(
        hermes_home, fake_llm.url, gateway={"platforms": {"telegram": {"allowed_users": [1]}}}
    )
    gateway = run_gateway()
    assert gateway.proc.wait(30) == 1
    assert "telegram: no bot token" in gateway.output()
    assert "Traceback" not in gateway.output()
