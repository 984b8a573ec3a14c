"""The fake server itself, spoken to with plain urllib so these tests do not
depend on the client they exist to test."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import llm_server as fake
from tests.fakes.llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]


def post(server: FakeLLMServer, body: dict[str, Any], key: str = "k") -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"{server.url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def chat(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"model": "fake-model", "messages": [{"role": "user", "content": text}], **extra}


def test_url_and_models(fake_llm: FakeLLMServer) -> None:
    assert fake_llm.url.startswith("http://127.0.0.1:") and fake_llm.url.endswith("/v1")
    with urllib.request.urlopen(f"{fake_llm.url}/models", timeout=10) as response:
        listing = json.load(response)
    assert [m["id"] for m in listing["data"]] == ["fake-model"]


def test_queue_then_responder_then_default(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue("scripted")
    fake_llm.responder = lambda body: "logic" if "summarise" in fake.last_user_text(body) else None

    answers = [json.loads(post(fake_llm, chat(t))[1]) for t in ("a", "please summarise", "b")]

    contents = [a["choices"][0]["message"]["content"] for a in answers]
    assert contents == ["scripted", "logic", "echo: b"]
    assert [r["messages"][0]["content"] for r in fake_llm.requests] == [
        "a",
        "please summarise",
        "b",
    ]


def test_times_and_script(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(fake.server_error(503), times=2)
    assert fake_llm.pending == 2
    fake_llm.script("only this")
    assert fake_llm.pending == 1


def test_usage_estimates_the_prompt(fake_llm: FakeLLMServer) -> None:
    _, short = post(fake_llm, chat("x"))
    _, long = post(fake_llm, chat("x" * 4_000))

    assert json.loads(long)["usage"]["prompt_tokens"] >= 1_000
    assert json.loads(short)["usage"]["prompt_tokens"] < 100


def test_error_bodies_have_openai_shape(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(fake.context_length_exceeded(8192), fake.rate_limited(3))

    status, body = post(fake_llm, chat())
    assert status == 400
    error = json.loads(body)["error"]
    assert error["code"] == "context_length_exceeded"
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith("This model's maximum context length is 8192")

    status, body = post(fake_llm, chat())
    assert status == 429


def test_strict_models_and_api_key() -> None:
    with FakeLLMServer(strict_models=True, api_key="secret") as server:
        assert post(server, chat(), key="wrong")[0] == 401
        status, body = post(server, {**chat(), "model": "nope"}, key="secret")
        assert status == 404 and json.loads(body)["error"]["code"] == "model_not_found"
        assert post(server, chat(), key="secret")[0] == 200


@pytest.mark.parametrize("usage", [False, True])
def test_stream_format(fake_llm: FakeLLMServer, usage: bool) -> None:
    fake_llm.enqueue(fake.tool_call("terminal", {"command": "ls"}, content="Let me look."))
    options = {"stream_options": {"include_usage": True}} if usage else {}

    status, raw = post(fake_llm, chat(stream=True, **options))

    events = [line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")]
    assert status == 200 and events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "Let me look."
    arguments = "".join(
        call["function"]["arguments"]
        for c in chunks
        if c["choices"]
        for call in c["choices"][0]["delta"].get("tool_calls") or []
    )
    assert json.loads(arguments) == {"command": "ls"}
    assert ("usage" in chunks[-1]) is usage


@pytest.mark.parametrize("module", ["hermes.testing.llm_server", "tests.fakes.llm_server"])
def test_standalone_prints_its_url(module: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", module, "--port", "0", "--latency-ms", "5"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        with urllib.request.urlopen(f"{url}/models", timeout=10) as response:
            assert response.status == 200
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=10)
    assert process.returncode == 0
    assert errors == ""  # no RuntimeWarning about the module being imported twice


# --------------------------------------------------------------------------- strict context


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "t", "arguments": "{}"}}


def _asks(*call_ids: str, content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": [_call(c) for c in call_ids]}


def _result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


USER = {"role": "user", "content": "u"}
SYSTEM = {"role": "system", "content": "s"}
ANSWER = {"role": "assistant", "content": "a"}

VALID = {
    "plain": [SYSTEM, USER, ANSWER, USER],
    "one call answered": [USER, _asks("c1"), _result("c1"), ANSWER],
    "two calls answered out of order": [USER, _asks("c1", "c2"), _result("c2"), _result("c1")],
    "call with content": [USER, _asks("c1", content="let me look"), _result("c1"), USER],
    "two rounds": [USER, _asks("a"), _result("a"), _asks("b"), _result("b"), ANSWER],
}

INVALID = {
    "result without call": ([SYSTEM, _result("c1"), USER], "does not answer"),
    "result after a user message": ([_asks("c1"), _result("c1"), USER, _result("c1")], "answer"),
    "result for another call": ([USER, _asks("c1"), _result("c2")], "does not answer"),
    "result answered twice": ([USER, _asks("c1"), _result("c1"), _result("c1")], "answer"),
    "call unanswered before user": ([USER, _asks("c1"), USER], "were answered"),
    "call unanswered before assistant": ([USER, _asks("c1"), ANSWER], "were answered"),
    "call unanswered before system": ([USER, _asks("c1"), SYSTEM], "were answered"),
    "one of two calls unanswered": ([USER, _asks("c1", "c2"), _result("c1"), USER], "c2"),
    "call unanswered at the end": ([USER, _asks("c1")], "end of messages"),
    "empty assistant": ([USER, {"role": "assistant", "content": ""}, USER], "no content"),
    "assistant with null content": ([USER, {"role": "assistant", "content": None}], "content"),
}


@pytest.mark.parametrize("messages", VALID.values(), ids=VALID.keys())
def test_valid_contexts_are_accepted(messages: list[dict[str, Any]]) -> None:
    assert fake.context_problems(messages) == []
    with FakeLLMServer(strict_context=True) as server:
        status, _ = post(server, {"model": "fake-model", "messages": messages})
        assert status == 200
        assert server.stats()["invalid_contexts"] == 0


@pytest.mark.parametrize(("messages", "reason"), INVALID.values(), ids=INVALID.keys())
def test_invalid_contexts_are_refused_like_openai(
    messages: list[dict[str, Any]], reason: str
) -> None:
    assert any(reason in p for p in fake.context_problems(messages))
    with FakeLLMServer(strict_context=True) as server:
        server.enqueue("never sent: the refusal comes first")
        status, raw = post(server, {"model": "fake-model", "messages": messages})
        assert status == 400
        error = json.loads(raw)["error"]
        assert error["type"] == "invalid_request_error"
        assert error["param"] == "messages" and error["code"] is None
        assert reason in error["message"]
        stats = server.stats()
        assert stats["invalid_contexts"] == 1
        assert any(reason in r for r in stats["context_reasons"])
        assert server.pending == 1


def test_lenient_server_accepts_an_invalid_context(fake_llm: FakeLLMServer) -> None:
    status, _ = post(fake_llm, {"model": "fake-model", "messages": [_result("c1")]})
    assert status == 200
    assert fake_llm.stats()["invalid_contexts"] == 0


@pytest.mark.parametrize("sent", [b"", b'{"model": "fake-model", "messages": [{"ro'])
def test_a_request_cut_off_by_a_dying_client_is_not_judged(sent: bytes) -> None:
    # A client killed after its headers (the soak SIGKILLs agents mid-request) leaves a
    # body shorter than its Content-Length. Read as "{}" it once looked like a request
    # whose messages were not a list: a context violation hermes never sent.
    import socket
    from urllib.parse import urlsplit

    with FakeLLMServer(strict_context=True) as server:
        address = urlsplit(server.url)
        with socket.create_connection((address.hostname, address.port)) as client:
            head = (
                "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                "Content-Type: application/json\r\nContent-Length: 500\r\n\r\n"
            )
            client.sendall(head.encode() + sent)
            client.shutdown(socket.SHUT_WR)
            client.settimeout(10)
            while client.recv(4096):
                pass
        status, _ = post(
            server, {"model": "fake-model", "messages": [{"role": "user", "content": "x"}]}
        )
        assert status == 200
        stats = server.stats()
        assert stats["invalid_contexts"] == 0, stats["context_reasons"]
        assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_is_counted_in_stats_before_the_client_has_it(
    fake_llm: FakeLLMServer, stream: bool
) -> None:
    # A benchmark reads the service times right after its last answer: none may be missing.
    for asked in range(1, 201):
        status, _ = post(fake_llm, chat(f"q{asked}", stream=stream))
        assert status == 200
        samples = fake_llm.stats()["samples"]
        assert len(samples) == asked, f"answer {asked} was not counted yet"
