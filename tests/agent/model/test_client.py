"""ModelClient against the fake server over real HTTP: answers, streaming, retries,
error translation and interrupts. Backoff sleeps are recorded, never slept."""

from __future__ import annotations

import email.utils
import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import openai
import pytest

from hermes.agent.errors import (
    AgentError,
    ContextLengthError,
    ModelAuthError,
    ModelError,
    ModelNotFoundError,
    ModelUnavailableError,
    TurnInterrupted,
)
from hermes.agent.model.client import ModelClient, ModelResponse, ToolCall, translate_openai_error
from hermes.testing.ports import free_port
from tests.fakes import llm_server as fake
from tests.fakes.llm_server import FakeLLMServer

USER = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(fake_llm: FakeLLMServer, sleeps: list[float]) -> Iterator[ModelClient]:
    model_client = ModelClient(
        "test-key",
        fake_llm.url,
        "fake-model",
        timeout=5.0,
        max_retries=3,
        backoff_base=0.5,
        backoff_cap=20.0,
        sleep=sleeps.append,
        rng=random.Random(7),
    )
    yield model_client
    model_client.close()


def wait_for_requests(server: FakeLLMServer, count: int) -> None:
    """Block until the server has recorded ``count`` requests (bounded)."""
    deadline = time.monotonic() + 10
    while len(server.requests) < count and time.monotonic() < deadline:
        time.sleep(0.01)


# --------------------------------------------------------------------------- answers


def test_plain_answer_with_usage(client: ModelClient, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(fake.text("Hi! How can I help?"))

    response = client.complete(USER)

    assert isinstance(response, ModelResponse)
    assert response.content == "Hi! How can I help?"
    assert response.tool_calls == []
    assert response.finish_reason == "stop"
    assert response.prompt_tokens and response.prompt_tokens > 0
    assert response.completion_tokens and response.completion_tokens > 0
    assert response.model == "fake-model"


def test_default_answer_echoes_the_last_user_message(client: ModelClient) -> None:
    assert client.complete(USER).content == "echo: hello there"


def test_tool_call_arguments_arrive_as_raw_json_text(
    client: ModelClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.enqueue(fake.tool_call("terminal", {"command": "ls -la"}, id="call_1"))

    response = client.complete(USER, tools=[_tool_schema("terminal")])

    assert response.tool_calls == [ToolCall("call_1", "terminal", '{"command": "ls -la"}')]
    assert response.finish_reason == "tool_calls"
    assert response.content is None
    assert fake_llm.last_request["tools"][0]["function"]["name"] == "terminal"


@pytest.mark.parametrize("streamed", [False, True])
def test_malformed_tool_json_is_passed_through(
    client: ModelClient, fake_llm: FakeLLMServer, streamed: bool
) -> None:
    fake_llm.enqueue(fake.malformed_tool_call("terminal", '{"command": "ls'))

    callback = [].append if streamed else None
    response = client.complete(USER, stream_callback=callback)

    assert response.tool_calls[0].name == "terminal"
    assert response.tool_calls[0].arguments == '{"command": "ls'


def test_empty_answer_has_no_content(client: ModelClient, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(fake.empty())

    response = client.complete(USER)

    assert response.content is None
    assert response.tool_calls == []


def test_reasoning_is_returned(client: ModelClient, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(fake.text("42", reasoning="six times seven"))

    assert client.complete(USER).reasoning == "six times seven"


def test_only_wire_keys_are_sent(client: ModelClient, fake_llm: FakeLLMServer) -> None:
    messages = [
        {"role": "user", "content": "hi", "message_uid": "u1", "created_at": 1.0},
        {"role": "assistant", "content": "yo", "tool_calls": [], "reasoning": "r"},
        {"role": "user", "content": "again", "name": None},
    ]

    client.complete(messages, max_tokens=50, temperature=0.2, model="other-model")

    body = fake_llm.last_request
    assert body["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
        {"role": "user", "content": "again"},
    ]
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("other-model", 50, 0.2)
    assert "stream" not in body
    assert messages[0]["message_uid"] == "u1"  # the caller's dicts are untouched


def test_list_models(client: ModelClient, fake_llm: FakeLLMServer) -> None:
    fake_llm.models = ["fake-model", "fake-small"]

    assert client.list_models() == ["fake-model", "fake-small"]


def test_list_models_on_a_wrong_base_url(fake_llm: FakeLLMServer) -> None:
    wrong = ModelClient("k", fake_llm.url + "/extra", "fake-model", sleep=lambda _: None)

    with pytest.raises(ModelError, match=f"which answers at {fake_llm.url}") as caught:
        wrong.list_models()

    assert not isinstance(caught.value, ModelNotFoundError)
    wrong.close()


# --------------------------------------------------------------------------- streaming


def test_streaming_text_and_usage(client: ModelClient, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(fake.text("one two three four", completion_tokens=4))
    pieces: list[str] = []

    response = client.complete(USER, stream_callback=pieces.append)

    assert len(pieces) > 1
    assert "".join(pieces) == "one two three four" == response.content
    assert response.completion_tokens == 4
    assert response.prompt_tokens and response.prompt_tokens > 0
    assert response.finish_reason == "stop"
    body = fake_llm.last_request
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_streaming_assembles_tool_calls(client: ModelClient, fake_llm: FakeLLMServer) -> None:
    arguments = {"path": "/tmp/a-rather-long-file-name.txt", "content": "x" * 50}
    fake_llm.enqueue(
        fake.tool_calls(
            ("write_file", arguments, "call_a"),
            ("terminal", {"command": "ls"}, "call_b"),
            content="Writing it.",
        )
    )
    pieces: list[str] = []

    response = client.complete(USER, stream_callback=pieces.append)

    assert "".join(pieces) == "Writing it."
    assert [(c.id, c.name) for c in response.tool_calls] == [
        ("call_a", "write_file"),
        ("call_b", "terminal"),
    ]
    assert json.loads(response.tool_calls[0].arguments) == arguments
    assert json.loads(response.tool_calls[1].arguments) == {"command": "ls"}
    assert response.finish_reason == "tool_calls"


def test_stream_dropped_before_any_text_is_retried(
    client: ModelClient, fake_llm: FakeLLMServer, sleeps: list[float]
) -> None:
    # The first chunk carries only the role, so nothing reached the callback yet.
    fake_llm.enqueue(fake.dropped_connection(after_chunks=1), fake.text("all good"))
    pieces: list[str] = []

    response = client.complete(USER, stream_callback=pieces.append)

    assert response.content == "all good" == "".join(pieces)
    assert len(fake_llm.requests) == 2
    assert len(sleeps) == 1


def test_stream_dropped_after_text_is_not_retried(
    client: ModelClient, fake_llm: FakeLLMServer
) -> None:
    reply = fake.text("one two three four five")
    fake_llm.enqueue(
        fake.Reply(content=reply.content, drop=True, drop_after_chunks=3), fake.text("again")
    )
    pieces: list[str] = []

    with pytest.raises(ModelUnavailableError, match="partial output"):
        client.complete(USER, stream_callback=pieces.append)

    assert pieces  # the caller saw the start, so a retry would repeat it
    assert len(fake_llm.requests) == 1


# --------------------------------------------------------------------------- retries


def test_rate_limit_honours_retry_after(
    client: ModelClient, fake_llm: FakeLLMServer, sleeps: list[float]
) -> None:
    fake_llm.enqueue(fake.rate_limited(retry_after=7), fake.text("after the wait"))

    assert client.complete(USER).content == "after the wait"
    assert sleeps == [7.0]
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize(
    ("header", "value", "low", "high"),
    [
        ("retry-after-ms", "1500", 1.5, 1.5),
        ("Retry-After", 3600, 20.0, 20.0),  # an HTTP date an hour away: capped
        ("Retry-After", 15, 5.0, 15.0),  # an HTTP date 15 s away (1 s resolution)
    ],
    ids=["milliseconds", "http date beyond cap", "http date"],
)
def test_retry_after_forms(
    client: ModelClient,
    fake_llm: FakeLLMServer,
    sleeps: list[float],
    header: str,
    value: str | int,
    low: float,
    high: float,
) -> None:
    if isinstance(value, int):
        value = email.utils.formatdate(time.time() + value, usegmt=True)
    headers = {header: value}
    error = {"message": "Slow down.", "type": "requests", "code": "rate_limit_exceeded"}
    fake_llm.enqueue(fake.Reply(status=429, error=error, headers=headers), fake.text("ok"))

    client.complete(USER)

    assert len(sleeps) == 1 and low <= sleeps[0] <= high


def test_retry_after_is_capped(
    client: ModelClient, fake_llm: FakeLLMServer, sleeps: list[float]
) -> None:
    fake_llm.enqueue(fake.rate_limited(retry_after=3600), fake.text("ok"))

    client.complete(USER)

    assert sleeps == [client.backoff_cap]


def test_rate_limit_without_retry_after_uses_jittered_backoff(
    client: ModelClient, fake_llm: FakeLLMServer, sleeps: list[float]
) -> None:
    fake_llm.enqueue(fake.rate_limited(retry_after=None), fake.text("ok"))

    client.complete(USER)

    assert len(sleeps) == 1
    assert 0.0 <= sleeps[0] <= client.backoff_base


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_error_then_success(
    client: ModelClient, fake_llm: FakeLLMServer, sleeps: list[float], status: int
) -> None:
    fake_llm.enqueue(fake.server_error(status), fake.text("recovered"))

    assert client.complete(USER).content == "recovered"
    assert len(fake_llm.requests) == 2
    assert len(sleeps) == 1


class _RawBodies:
    """A real HTTP endpoint answering 200 with each given body in turn (then an echo)."""

    def __init__(self, *bodies: bytes) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        queue = list(bodies)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                self.rfile.read(int(self.headers["Content-Length"]))
                body = queue.pop(0) if queue else json.dumps(_completion("fine")).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _completion(content: object, **message: object) -> dict[str, object]:
    return {
        "id": "x",
        "object": "chat.completion",
        "model": "raw-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, **message}}],
    }


@pytest.mark.parametrize(
    "body",
    [b"<html>bad gateway</html>", b'{"error": {"message": "upstream failed"}}', b"[]"],
    ids=["not-json", "no-choices", "a-list"],
)
def test_unusable_200_answer_is_retried_like_a_server_error(
    body: bytes, sleeps: list[float]
) -> None:
    endpoint = _RawBodies(body)
    client = ModelClient("k", endpoint.url, "m", max_retries=1, sleep=sleeps.append)
    try:
        assert client.complete(USER).content == "fine"
        assert len(sleeps) == 1
    finally:
        endpoint.close()


def test_unusable_answers_exhaust_the_retries(sleeps: list[float]) -> None:
    endpoint = _RawBodies(b"{}", b"{}")
    client = ModelClient("k", endpoint.url, "m", max_retries=1, sleep=sleeps.append)
    try:
        with pytest.raises(ModelUnavailableError):
            client.complete(USER)
    finally:
        endpoint.close()


def test_tool_call_arguments_sent_as_an_object_become_json_text() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": {"a": 1}}}
    endpoint = _RawBodies(json.dumps(_completion(None, tool_calls=[call])).encode())
    client = ModelClient("k", endpoint.url, "m", max_retries=0)
    try:
        answer = client.complete(USER)
    finally:
        endpoint.close()
    assert answer.content is None
    assert answer.tool_calls == [ToolCall(id="c1", name="t", arguments='{"a": 1}')]
    assert answer.model == "raw-model"


def test_timeout_then_success(fake_llm: FakeLLMServer, sleeps: list[float]) -> None:
    fake_llm.enqueue(fake.hang(30), fake.text("in time"))
    impatient = ModelClient(
        "k", fake_llm.url, "fake-model", timeout=0.3, max_retries=2, sleep=sleeps.append
    )

    assert impatient.complete(USER).content == "in time"
    assert len(fake_llm.requests) == 2
    assert len(sleeps) == 1
    impatient.close()


def test_dropped_connection_then_success(
    client: ModelClient, fake_llm: FakeLLMServer, sleeps: list[float]
) -> None:
    fake_llm.enqueue(fake.dropped_connection(), fake.text("reconnected"))

    assert client.complete(USER).content == "reconnected"
    assert len(fake_llm.requests) == 2


def test_retries_exhausted(
    client: ModelClient, fake_llm: FakeLLMServer, sleeps: list[float]
) -> None:
    fake_llm.enqueue(fake.server_error(503), times=10)

    with pytest.raises(ModelUnavailableError) as caught:
        client.complete(USER)

    error = caught.value
    assert error.attempts == 4
    assert (error.model, error.base_url, error.status) == ("fake-model", fake_llm.url, 503)
    assert fake_llm.url in str(error) and "fake-model" in str(error)
    assert isinstance(error.__cause__, openai.InternalServerError)
    assert len(fake_llm.requests) == 4
    # Full jitter: each wait is somewhere below its doubling ceiling.
    assert len(sleeps) == 3
    for attempt, slept in enumerate(sleeps):
        assert 0.0 <= slept <= client.backoff_base * 2**attempt


def test_zero_retries_fails_on_first_transient_error(
    fake_llm: FakeLLMServer, sleeps: list[float]
) -> None:
    fake_llm.enqueue(fake.server_error(500))
    once = ModelClient("k", fake_llm.url, "fake-model", max_retries=0, sleep=sleeps.append)

    with pytest.raises(ModelUnavailableError):
        once.complete(USER)
    assert sleeps == []
    once.close()


# --------------------------------------------------------------------------- no retry


def test_bad_key_fails_at_once(
    client: ModelClient, fake_llm: FakeLLMServer, sleeps: list[float]
) -> None:
    fake_llm.enqueue(fake.auth_error())

    with pytest.raises(ModelAuthError) as caught:
        client.complete(USER)

    message = str(caught.value)
    assert fake_llm.url in message and "fake-model" in message
    assert "HERMES_API_KEY" in message
    assert len(fake_llm.requests) == 1
    assert sleeps == []


def test_server_checking_keys_rejects_a_wrong_one(sleeps: list[float]) -> None:
    with FakeLLMServer(api_key="right-key") as server:
        wrong = ModelClient("wrong-key", server.url, "fake-model", sleep=sleeps.append)
        with pytest.raises(ModelAuthError):
            wrong.complete(USER)
        right = ModelClient("right-key", server.url, "fake-model", sleep=sleeps.append)
        assert right.complete(USER).content == "echo: hello there"
        wrong.close()
        right.close()
    assert sleeps == []


def test_unknown_model_fails_at_once(fake_llm: FakeLLMServer, sleeps: list[float]) -> None:
    fake_llm.strict_models = True
    missing = ModelClient("k", fake_llm.url, "no-such-model", sleep=sleeps.append)

    with pytest.raises(ModelNotFoundError) as caught:
        missing.complete(USER)

    assert "no-such-model" in str(caught.value)
    assert len(fake_llm.requests) == 1
    assert sleeps == []
    missing.close()


@pytest.mark.parametrize("streamed", [False, True])
def test_context_length_error(
    client: ModelClient, fake_llm: FakeLLMServer, sleeps: list[float], streamed: bool
) -> None:
    fake_llm.enqueue(fake.context_length_exceeded(max_tokens=8192))

    with pytest.raises(ContextLengthError) as caught:
        client.complete(USER, stream_callback=[].append if streamed else None)

    assert "8192" in str(caught.value) and "/compress" in str(caught.value)
    assert len(fake_llm.requests) == 1
    assert sleeps == []


def test_provider_messages_are_redacted_and_kept_short(
    client: ModelClient, fake_llm: FakeLLMServer
) -> None:
    message = "Invalid key sk-proj-abcdefghijklmnop1234 in request. See the docs for details."
    fake_llm.enqueue(fake.Reply(status=400, error={"message": message, "type": "x"}))

    with pytest.raises(ModelError) as caught:
        client.complete(USER)

    text = str(caught.value)
    assert "abcdefghijklmnop1234" not in text and "abcdefghijklmnop1234" not in caught.value.detail
    assert "See the docs" not in text  # one sentence for a person; the rest is in .detail
    assert "See the docs" in caught.value.detail
    assert caught.value.status == 400


FAULTS = {
    "rate limit": fake.rate_limited(0),
    "server error": fake.server_error(500),
    "unavailable": fake.server_error(503),
    "dropped": fake.dropped_connection(),
    "bad key": fake.auth_error(),
    "no model": fake.model_not_found(),
    "too long": fake.context_length_exceeded(),
    "teapot": fake.Reply(status=418, error={"message": "I'm a teapot.", "type": "x", "code": None}),
}


@pytest.mark.parametrize("fault", FAULTS.values(), ids=FAULTS.keys())
@pytest.mark.parametrize("streamed", [False, True])
def test_every_fault_surfaces_as_a_hermes_error(
    fake_llm: FakeLLMServer, fault: fake.Reply, streamed: bool
) -> None:
    fake_llm.enqueue(fault)
    once = ModelClient("k", fake_llm.url, "fake-model", max_retries=0, sleep=lambda _: None)

    with pytest.raises(AgentError) as caught:
        once.complete(USER, stream_callback=[].append if streamed else None)

    assert isinstance(caught.value, ModelError)
    assert not isinstance(caught.value, openai.OpenAIError)
    assert isinstance(caught.value.__cause__, openai.OpenAIError)
    once.close()


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 418, 422, 429, 500, 503])
def test_a_plain_answers_error_is_the_one_the_sdk_itself_raises(
    fake_llm: FakeLLMServer, status: int
) -> None:
    # A non-streamed call is one POST of our own (chat_post); its failure must be the
    # SDK's exception for that answer (class, message, error object), as if the SDK
    # had made the call, so retries and translation see one kind of error.
    def answer() -> fake.Reply:
        return fake.Reply(status=status, error={"message": "no good", "type": "x", "code": "c"})

    fake_llm.enqueue(answer(), answer())
    sdk = openai.OpenAI(api_key="k", base_url=fake_llm.url, max_retries=0)
    with pytest.raises(openai.APIStatusError) as theirs:
        sdk.chat.completions.create(model="fake-model", messages=USER)
    sdk.close()
    once = ModelClient("k", fake_llm.url, "fake-model", max_retries=0, sleep=lambda _: None)
    with pytest.raises(ModelError) as ours:
        once.complete(USER)
    cause = ours.value.__cause__
    assert type(cause) is type(theirs.value)
    assert (cause.status_code, cause.message, cause.body, cause.code) == (
        theirs.value.status_code, theirs.value.message, theirs.value.body, theirs.value.code,
    )  # fmt: skip


def test_a_refused_plain_call_is_the_sdks_connection_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # a port nobody listens on
    once = ModelClient("k", url, "fake-model", max_retries=0, sleep=lambda _: None)
    with pytest.raises(ModelUnavailableError) as caught:
        once.complete(USER)
    assert type(caught.value.__cause__) is openai.APIConnectionError
    assert "connection" in str(caught.value).lower()


def _all_subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _all_subclasses(sub)
    return found


def test_no_openai_error_class_is_left_unmapped() -> None:
    classes = _all_subclasses(openai.OpenAIError) | {openai.OpenAIError}
    assert len(classes) > 10  # the walk really found the SDK's tree
    for cls in classes:
        # Bypass each class's own __init__: only the class matters for the mapping.
        exc = cls.__new__(cls)
        Exception.__init__(exc, "boom")
        mapped = translate_openai_error(exc, model="m", base_url="http://x/v1")
        assert isinstance(mapped, ModelError), cls
        assert "http://x/v1" in str(mapped) and " m" in str(mapped), cls


# --------------------------------------------------------------------------- interrupts


@pytest.mark.timeout(20)
def test_interrupt_stops_a_stalled_stream(client: ModelClient, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(fake.stall("first words then a long silence", after_chunks=3, seconds=60))
    first_text = threading.Event()
    pieces: list[str] = []

    def on_text(piece: str) -> None:
        pieces.append(piece)
        first_text.set()

    interrupter = threading.Thread(target=lambda: first_text.wait(10) and client.interrupt())
    interrupter.start()
    with pytest.raises(TurnInterrupted):
        client.complete(USER, stream_callback=on_text)
    interrupter.join()

    assert pieces and "silence" not in "".join(pieces)
    assert len(fake_llm.requests) == 1  # an interrupt is never retried


def interrupted_while_hanging(client: ModelClient, fake_llm: FakeLLMServer, sent: int) -> None:
    """The next call hangs; it is interrupted once the model has ``sent`` requests."""
    fake_llm.enqueue(fake.hang(60))

    def interrupt_once_sent() -> None:
        wait_for_requests(fake_llm, sent)
        client.interrupt()

    interrupter = threading.Thread(target=interrupt_once_sent)
    interrupter.start()
    with pytest.raises(TurnInterrupted):
        client.complete(USER)
    interrupter.join()


@pytest.mark.timeout(20)
def test_interrupt_before_the_first_byte(client: ModelClient, fake_llm: FakeLLMServer) -> None:
    interrupted_while_hanging(client, fake_llm, 1)


@pytest.mark.timeout(20)
def test_interrupt_ends_a_call_on_a_kept_connection(
    client: ModelClient, fake_llm: FakeLLMServer
) -> None:
    # The first call leaves a kept connection; the second runs on it in this thread,
    # and the interrupt shuts its socket instead of abandoning a model-call thread.
    assert client.complete(USER).content == "echo: hello there"
    interrupted_while_hanging(client, fake_llm, 2)
    assert len(fake_llm.requests) == 2  # an interrupt is never retried
    client.clear_interrupt()
    assert client.complete(USER).content == "echo: hello there"  # a new connection


def test_interrupt_stays_set_until_cleared(client: ModelClient, fake_llm: FakeLLMServer) -> None:
    client.interrupt()

    assert client.interrupted
    with pytest.raises(TurnInterrupted):
        client.complete(USER)
    assert fake_llm.requests == []

    client.clear_interrupt()
    assert client.complete(USER).content == "echo: hello there"


def test_interrupt_during_backoff(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(fake.server_error(500), times=5)
    patient = ModelClient("k", fake_llm.url, "fake-model", max_retries=3)
    # The injected sleep interrupts, as a user pressing Ctrl-C during the wait would.
    patient._sleep = lambda _seconds: patient.interrupt()

    with pytest.raises(TurnInterrupted):
        patient.complete(USER)
    assert len(fake_llm.requests) == 1
    patient.close()


def test_shared_cancel_event(fake_llm: FakeLLMServer) -> None:
    event = threading.Event()
    shared = ModelClient("k", fake_llm.url, "fake-model", cancel_event=event)

    event.set()
    with pytest.raises(TurnInterrupted):
        shared.complete(USER)
    shared.close()


# --------------------------------------------------------------------------- laziness


def test_constructing_a_client_imports_no_openai_and_calls_nothing() -> None:
    code = (
        "import sys\n"
        "from hermes.agent.model.client import ModelClient\n"
        "ModelClient('k', 'http://127.0.0.1:9/v1', 'm')\n"
        "assert 'openai' not in sys.modules, 'openai imported too early'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_repr_hides_the_key() -> None:
    assert "sk-secret" not in repr(ModelClient("sk-secret", "http://x/v1", "m"))


def _tool_schema(name: str) -> dict[str, object]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {}}},
    }


def test_a_plain_answer_behind_a_proxy_goes_the_sdks_way(
    fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The kept connection speaks to the endpoint itself, so an endpoint the environment
    # sends through a proxy is left to the SDK (its own headers show it made the call).
    for name in ("NO_PROXY", "no_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", fake_llm.url.removesuffix("/v1"))
    fake_llm.enqueue(fake.text("through the proxy"))
    client = ModelClient("k", "http://models.invalid/v1", "fake-model", max_retries=0)

    assert client.complete(USER).content == "through the proxy"
    assert "x-stainless-lang" in fake_llm.request_headers[-1]
    client.close()
