"""A scripted OpenAI-compatible HTTP server for tests, benchmarks and manual use.

It speaks just enough of the OpenAI wire protocol for the real ``openai`` package:
``POST /v1/chat/completions`` (JSON or SSE streaming) and ``GET /v1/models``. It
runs a stdlib ``ThreadingHTTPServer`` in a background thread on 127.0.0.1 with an
OS-chosen port, so tests go through real sockets, real HTTP and the real client.

What it answers, in order of precedence:

1. the next scripted ``Reply`` in its queue (``enqueue``/``script``), faults included;
2. otherwise the ``responder`` hook (request body -> ``Reply`` | ``str`` | ``None``);
3. otherwise a deterministic default, ``"echo: <last user message>"``.

Replies are built with the helpers below (``text``, ``tool_call``, ``rate_limited``,
``hang``, ``dropped_connection``, ``context_length_exceeded``...). Every chat request
body is recorded in ``server.requests`` before any fault applies, so a test can count
retries.

With ``strict_context=True`` every chat request's ``messages`` are first checked the
way OpenAI checks them (``context_problems``: tool results follow the assistant message
that called them, every call is answered before the next non-tool message, no empty
assistant message without tool calls); a refused request gets HTTP 400 with OpenAI's
body and is counted in ``stats()["invalid_contexts"]``.

Every chat request's service time (from its headers being read to its answer being
written) is kept with the request's last user message: ``stats()`` in-process, or
``GET /stats`` (``?reset=1`` forgets them after answering) from another process, so a
benchmark can see whether a model asked to answer after 100 ms really did under load.

Standalone: ``python -m hermes.testing.llm_server --port 0 --latency-ms 100`` prints
the base URL and serves until interrupted (SIGTERM or Ctrl-C).

It imports only the standard library. For a test that needs no HTTP at all, the
in-process ``hermes.testing.ScriptedModel`` is lighter.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import json
import re
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_MODEL",
    "FakeLLMServer",
    "FakeToolCall",
    "Reply",
    "Responder",
    "auth_error",
    "calling_offered_tool",
    "content_text",
    "context_problems",
    "context_length_exceeded",
    "dropped_connection",
    "empty",
    "estimate_prompt_tokens",
    "hang",
    "last_user_text",
    "main",
    "malformed_tool_call",
    "model_not_found",
    "rate_limited",
    "server_error",
    "stall",
    "text",
    "tool_call",
    "tool_calls",
]

DEFAULT_MODEL = "fake-model"
# How many service-time samples ``stats()`` keeps (the newest).
SERVICE_SAMPLES = 100_000


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class FakeToolCall:
    """One tool call the fake model makes; ``arguments`` is the raw JSON text sent."""

    name: str
    arguments: str = "{}"
    id: str = ""


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a normal completion, or a fault.

    ``status`` >= 400 sends ``error`` as OpenAI's ``{"error": {...}}`` body; its
    ``message`` may use ``{model}`` and ``{prompt_tokens}`` placeholders. ``delay`` is
    slept before anything is sent, ``drop`` closes the socket instead of answering
    (for streams, after ``drop_after_chunks`` chunks), and ``stall_after_chunks``
    pauses a stream for ``stall_seconds`` mid-way (or until ``stall_until`` is set, if
    sooner: a test that lets the stream go on once it has looked). The token fields override the
    usage the server would otherwise estimate; ``usage_extra`` adds to the usage block.
    """

    content: str | None = None
    tool_calls: tuple[FakeToolCall, ...] = ()
    reasoning: str | None = None
    finish_reason: str | None = None
    status: int = 200
    error: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    drop_after_chunks: int = 0
    stall_after_chunks: int | None = None
    stall_seconds: float = 0.0
    stall_until: threading.Event | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # Merged into the ``usage`` block: cache and reasoning details, OpenRouter's cost.
    usage_extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_error(self) -> bool:
        return self.status >= 400


Responder = Callable[[dict[str, Any]], "Reply | str | None"]


def text(content: str, *, reasoning: str | None = None, **overrides: Any) -> Reply:
    """A plain assistant answer."""
    return Reply(content=content, reasoning=reasoning, **overrides)


def empty(**overrides: Any) -> Reply:
    """An answer with empty content and no tool calls."""
    return Reply(content="", **overrides)


def tool_call(
    name: str,
    arguments: dict[str, Any] | str | None = None,
    *,
    id: str | None = None,
    content: str | None = None,
    **overrides: Any,
) -> Reply:
    """One tool call; a ``str`` for ``arguments`` is sent verbatim (even if malformed)."""
    return tool_calls((name, arguments, id), content=content, **overrides)


def tool_calls(
    *calls: tuple[str, dict[str, Any] | str | None]
    | tuple[str, dict[str, Any] | str | None, str | None],
    content: str | None = None,
    **overrides: Any,
) -> Reply:
    """Several tool calls in one answer: ``(name, arguments[, id])`` each."""
    built = []
    for call in calls:
        name, arguments = call[0], call[1]
        call_id = call[2] if len(call) > 2 else None
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        built.append(FakeToolCall(name, raw, call_id or f"call_{uuid.uuid4().hex[:12]}"))
    return Reply(content=content, tool_calls=tuple(built), **overrides)


def malformed_tool_call(
    name: str = "terminal", raw_arguments: str = '{"command": "ls', **overrides: Any
) -> Reply:
    """A tool call whose arguments are not valid JSON."""
    return tool_call(name, raw_arguments, **overrides)


def _error(
    status: int,
    message: str,
    type_: str,
    code: str | None,
    *,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    body = {"message": message, "type": type_, "param": param, "code": code}
    return Reply(status=status, error=body, headers=headers or {})


def rate_limited(retry_after: float | None = 1.0) -> Reply:
    """HTTP 429, with a ``Retry-After`` header (seconds) unless ``retry_after`` is None."""
    headers = {} if retry_after is None else {"Retry-After": _format_seconds(retry_after)}
    return _error(
        429,
        "Rate limit reached for {model}. Please try again later.",
        "requests",
        "rate_limit_exceeded",
        headers=headers,
    )


def server_error(status: int = 500) -> Reply:
    """HTTP 500 (or 502/503/...) with OpenAI's server-error body."""
    message = (
        "The engine is currently overloaded, please try again later."
        if status == 503
        else "The server had an error while processing your request."
    )
    return _error(status, message, "server_error", None)


def auth_error() -> Reply:
    """HTTP 401, invalid API key."""
    return _error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")


def model_not_found() -> Reply:
    """HTTP 404, the requested model does not exist."""
    return _error(
        404,
        "The model `{model}` does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
    )


def context_length_exceeded(max_tokens: int = 128_000) -> Reply:
    """HTTP 400 with OpenAI's ``context_length_exceeded`` body."""
    message = (
        f"This model's maximum context length is {max_tokens} tokens. However, your "
        "messages resulted in {prompt_tokens} tokens. Please reduce the length of the messages."
    )
    return _error(
        400, message, "invalid_request_error", "context_length_exceeded", param="messages"
    )


def hang(seconds: float = 30.0, then: Reply | None = None) -> Reply:
    """Wait ``seconds`` before answering (longer than the client's timeout)."""
    base = then or text("(late reply)")
    return replace(base, delay=seconds)


def dropped_connection(after_chunks: int = 0) -> Reply:
    """Close the connection without an answer (for streams, after N chunks)."""
    return Reply(content="(never delivered)", drop=True, drop_after_chunks=after_chunks)


def stall(
    content: str,
    *,
    after_chunks: int = 1,
    seconds: float = 30.0,
    until: threading.Event | None = None,
) -> Reply:
    """A streamed answer that pauses ``seconds`` after ``after_chunks`` chunks, or until
    ``until`` is set if that comes first."""
    return Reply(
        content=content, stall_after_chunks=after_chunks, stall_seconds=seconds, stall_until=until
    )


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else str(seconds)


# --------------------------------------------------------------------------- helpers


def content_text(content: Any) -> str:
    """The text of a message's content, whether a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message of a chat request body ('' if none)."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def estimate_prompt_tokens(body: dict[str, Any]) -> int:
    """A deliberately simple usage figure: characters of the messages / 4."""
    chars = 0
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        chars += len(content_text(message.get("content"))) + 16
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            chars += len(function.get("name") or "") + len(function.get("arguments") or "")
    return max(1, chars // 4)


def _split_words(content: str) -> list[str]:
    """Streaming pieces: one word with its trailing space each, like real models."""
    return re.findall(r"\s*\S+\s*|\s+", content) or [content]


def _split_fixed(raw: str, size: int = 12) -> list[str]:
    return [raw[i : i + size] for i in range(0, len(raw), size)] or [""]


# --------------------------------------------------------------------------- strict context

# How many refused requests' reasons ``stats()`` keeps (the first ones).
KEPT_CONTEXT_REASONS = 20


def _has_content(message: dict[str, Any]) -> bool:
    return bool(content_text(message.get("content")).strip())


def context_problems(messages: Any) -> list[str]:
    """Why a provider would refuse this ``messages`` list (empty when it would accept it).

    Written independently of hermes on purpose: it is the referee of what hermes sends.
    A ``tool`` message must answer a call of the nearest preceding assistant message
    (only other results of that assistant message in between); every call must be
    answered before the next user/assistant/system message and before the end; an
    assistant message needs content or tool calls.
    """
    if not isinstance(messages, list):
        return ["messages is not a list"]
    problems: list[str] = []
    open_calls: set[Any] | None = None  # calls of the current assistant, unanswered
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if open_calls is None or call_id not in open_calls:
                problems.append(
                    f"messages[{index}]: tool result {call_id!r} does not answer a tool call"
                    " of the preceding assistant message"
                )
            else:
                open_calls.discard(call_id)
            continue
        if open_calls:
            problems.append(
                f"messages[{index}]: {role} message before tool calls {sorted(open_calls)}"
                " were answered"
            )
        open_calls = None
        if role == "assistant":
            ids = [c.get("id") for c in message.get("tool_calls") or [] if isinstance(c, dict)]
            if ids:
                open_calls = set(ids)
            elif not _has_content(message):
                problems.append(f"messages[{index}]: assistant message with no content")
    if open_calls:
        problems.append(f"end of messages before tool calls {sorted(open_calls)} were answered")
    return problems


def invalid_context(problems: list[str]) -> Reply:
    """HTTP 400 with OpenAI's body for a message list it refuses."""
    return _error(
        400,
        "Invalid messages: " + "; ".join(problems[:3]),
        "invalid_request_error",
        None,
        param="messages",
    )


# --------------------------------------------------------------------------- server


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Benchmarks open hundreds of connections at once; the stdlib default backlog is 5,
    # and a full backlog drops SYNs, which the client retries only after a second.
    request_queue_size = 1024
    owner: FakeLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients vanish on purpose here (timeouts, interrupts, dropped streams);
        # only a real bug in the fake deserves a traceback.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class FakeLLMServer:
    """The scripted server. Use as a context manager or ``start()``/``stop()``."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Iterable[str] = (DEFAULT_MODEL,),
        strict_models: bool = False,
        api_key: str | None = None,
        latency: float = 0.0,
        responder: Responder | None = None,
        strict_context: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.models = list(models)
        # When true, a request for a model not in ``models`` gets OpenAI's 404.
        self.strict_models = strict_models
        # When set, requests must carry ``Authorization: Bearer <api_key>``.
        self.api_key = api_key
        # Seconds added before every answer, for benchmarks.
        self.latency = latency
        self.responder = responder
        # When true, a request a provider would refuse (``context_problems``) gets 400.
        self.strict_context = strict_context
        self._invalid_contexts = 0
        self._context_reasons: list[str] = []
        self._lock = threading.Lock()
        self._queue: collections.deque[Reply] = collections.deque()
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._ids = itertools.count(1)
        # (last user message, service time in ms) of each chat request, newest last.
        self._service: collections.deque[tuple[str, float]] = collections.deque(
            maxlen=SERVICE_SAMPLES
        )
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer((self.host, self.port), _Handler)
        httpd.owner = self
        self.port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            daemon=True,
            name=f"fake-llm:{self.port}",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        # Wake handlers sleeping in a delay or stall first, then cut kept-alive
        # connections so no client or handler thread waits on a dead server.
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL to give the client, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    # -- scripting

    def enqueue(self, *replies: Reply | str, times: int = 1) -> FakeLLMServer:
        """Append replies to the queue; ``times`` repeats the whole group."""
        built = [_as_reply(r) for r in replies]
        with self._lock:
            for _ in range(times):
                self._queue.extend(built)
        return self

    def script(self, *replies: Reply | str) -> FakeLLMServer:
        """Replace the queue with exactly these replies."""
        with self._lock:
            self._queue.clear()
        return self.enqueue(*replies)

    def reset(self) -> None:
        """Forget the queue, the responder and every recorded request."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._headers.clear()
            self._service.clear()
            self._invalid_contexts = 0
            self._context_reasons.clear()
        self.responder = None

    def stats(self, *, reset: bool = False) -> dict[str, Any]:
        """Service times of the chat requests answered so far (the newest 100,000).

        ``{"requests": n, "service_ms": {"p50", "p99", "max", "mean"},
        "samples": [[last user message, ms], ...]}``; the service time runs from the
        request's headers being read to its answer being written, so it includes the
        configured latency and this server's own slowness, not the accept queue.
        ``reset`` forgets the samples once read. ``invalid_contexts`` counts the requests
        refused by ``strict_context`` and ``context_reasons`` keeps the first reasons.
        """
        with self._lock:
            samples = list(self._service)
            invalid, reasons = self._invalid_contexts, list(self._context_reasons)
            if reset:
                self._service.clear()
        ordered = sorted(ms for _, ms in samples)

        def pick(share: float) -> float | None:
            if not ordered:
                return None
            return round(ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))], 3)

        summary = {
            "p50": pick(0.5),
            "p99": pick(0.99),
            "max": pick(1.0),
            "mean": round(sum(ordered) / len(ordered), 3) if ordered else None,
        }
        return {
            "requests": len(samples),
            "service_ms": summary,
            "samples": [[prompt, round(ms, 3)] for prompt, ms in samples],
            "invalid_contexts": invalid,
            "context_reasons": reasons,
        }

    @property
    def pending(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A copy of every chat request body received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The headers of each recorded request (lower-cased names), same order."""
        with self._lock:
            return list(self._headers)

    @property
    def last_request(self) -> dict[str, Any] | None:
        with self._lock:
            return self._requests[-1] if self._requests else None

    # -- used by the handler

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self._requests.append(body)
            self._headers.append(headers)

    def _refusal(self, body: dict[str, Any]) -> Reply | None:
        """The 400 for a message list a provider would refuse, counted; None if valid."""
        if not self.strict_context:
            return None
        problems = context_problems(body.get("messages"))
        if not problems:
            return None
        with self._lock:
            self._invalid_contexts += 1
            room = KEPT_CONTEXT_REASONS - len(self._context_reasons)
            self._context_reasons.extend(problems[: max(0, room)])
        return invalid_context(problems)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        refusal = self._refusal(body)
        if refusal is not None:
            return refusal
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        responder = self.responder
        if responder is not None:
            answer = responder(body)
            if answer is not None:
                return _as_reply(answer)
        return text(f"echo: {last_user_text(body)}")

    def _served(self, body: dict[str, Any], started: float) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        prompt = last_user_text(body)
        with self._lock:
            self._service.append((prompt, elapsed))

    def _next_id(self) -> str:
        return f"chatcmpl-fake-{next(self._ids)}"

    def _track(self, conn: socket.socket, alive: bool) -> None:
        with self._lock:
            if alive:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


def _as_reply(reply: Reply | str) -> Reply:
    return text(reply) if isinstance(reply, str) else reply


# --------------------------------------------------------------------------- handler


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so the client keeps connections alive as it would with a real API.
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; Nagle would hold the body back
    # for a delayed ACK (~40 ms) and skew latency benchmarks.
    disable_nagle_algorithm = True
    server: _HTTPServer
    # (request body, start) of the chat request being answered, until its time is noted.
    _serving: tuple[dict[str, Any], float] | None = None

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, alive=True)

    def finish(self) -> None:
        self.server.owner._track(self.connection, alive=False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request access log; tests assert on ``requests``."""

    @property
    def owner(self) -> FakeLLMServer:
        return self.server.owner

    # -- routing

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            if self._authorised():
                data = [
                    {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                    for m in self.owner.models
                ]
                self._send_json(200, {"object": "list", "data": data})
            return
        if path in ("/health", "/v1/health"):
            self._send_json(200, {"status": "ok"})
            return
        if path in ("/stats", "/v1/stats"):
            query = self.path.partition("?")[2]
            reset = any(p in ("reset=1", "reset=true") for p in query.split("&"))
            self._send_json(200, self.owner.stats(reset=reset))
            return
        self._send_json(404, _error_body(f"Unknown path {path}.", "invalid_request_error", None))

    def do_POST(self) -> None:
        started = time.perf_counter()
        # A request sent through a proxy names the whole URL: the fake serves it as one.
        path = urlsplit(self.path).path.rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:
            # The client died mid-request (the soak kills agents at random): there is
            # no request to judge or answer, only a connection to close.
            self.close_connection = True
            return
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(
                404, _error_body(f"Unknown path {path}.", "invalid_request_error", None)
            )
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, _error_body("Invalid JSON body.", "invalid_request_error", None))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.owner._record(body, headers)
        if not self._authorised():
            return
        model = str(body.get("model") or "")
        if self.owner.strict_models and model not in self.owner.models:
            self._send_reply(model_not_found(), body)
        else:
            self._serving = (body, started)
            self._send_reply(self.owner._next_reply(body), body)
        self._note_served()  # a dropped or refused request too

    def _authorised(self) -> bool:
        expected = self.owner.api_key
        if expected is None or self.headers.get("Authorization") == f"Bearer {expected}":
            return True
        self._send_reply(auth_error(), {})
        return False

    # -- answering

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops first; False means stop now."""
        return seconds <= 0 or not self.owner._stopping.wait(seconds)

    def _stall(self, reply: Reply) -> bool:
        """Pause a stream as ``reply`` says; False means the server stops: drop it."""
        until = reply.stall_until
        if until is None:
            return self._sleep(reply.stall_seconds)
        deadline = time.monotonic() + reply.stall_seconds
        while not until.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
            if self.owner._stopping.is_set():
                return False
            if time.monotonic() >= deadline:
                break
        return True

    def _send_reply(self, reply: Reply, body: dict[str, Any]) -> None:
        if not self._sleep(self.owner.latency + reply.delay):
            self._drop()
            return
        if reply.drop and (reply.drop_after_chunks <= 0 or not body.get("stream")):
            self._drop()
            return
        prompt_tokens = reply.prompt_tokens or estimate_prompt_tokens(body)
        if reply.is_error:
            self._send_error(reply, body, prompt_tokens)
        elif body.get("stream"):
            self._send_stream(reply, body, prompt_tokens)
        else:
            self._send_json(200, _completion(self.owner._next_id(), reply, body, prompt_tokens))

    def _send_error(self, reply: Reply, body: dict[str, Any], prompt_tokens: int) -> None:
        error = dict(reply.error or {"message": "Error.", "type": "server_error", "code": None})
        fields = {"model": body.get("model", ""), "prompt_tokens": prompt_tokens}
        error["message"] = str(error.get("message", "")).format_map(fields)
        self._send_json(reply.status, {"error": error}, reply.headers)

    def _send_json(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        # Before any byte: a client may act on the status line alone (end_headers sends it).
        self._note_served()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data)

    def _send_stream(self, reply: Reply, body: dict[str, Any], prompt_tokens: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        events = _stream_events(self.owner._next_id(), reply, body, prompt_tokens, include_usage)
        try:
            for sent, event in enumerate(events):
                stalls = sent == reply.stall_after_chunks
                if (reply.drop and sent >= reply.drop_after_chunks) or (
                    stalls and not self._stall(reply)
                ):
                    self._drop()
                    return
                self._write_chunk(f"data: {event}\n\n".encode())
            self._note_served()
            self._write_chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            # The client went away (an interrupted stream): nothing left to do.
            self.close_connection = True

    def _note_served(self) -> None:
        """Record the request's service time before its answer's last bytes go out: a
        client that asks ``/stats`` right after its answer finds it counted."""
        if self._serving is not None:
            self.owner._served(*self._serving)
            self._serving = None

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _drop(self) -> None:
        """Close the socket without (finishing) an answer."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _error_body(message: str, type_: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _usage(reply: Reply, prompt_tokens: int) -> dict[str, Any]:
    produced = (reply.content or "") + (reply.reasoning or "")
    produced += "".join(c.name + c.arguments for c in reply.tool_calls)
    completion = reply.completion_tokens
    if completion is None:
        completion = (len(produced) + 3) // 4
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
        **reply.usage_extra,
    }


def _completion(
    reply_id: str, reply: Reply, body: dict[str, Any], prompt_tokens: int
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning is not None:
        message["reasoning"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    return {
        "id": reply_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or DEFAULT_MODEL,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _finish_reason(reply),
                "logprobs": None,
            }
        ],
        "usage": _usage(reply, prompt_tokens),
    }


def _stream_events(
    reply_id: str,
    reply: Reply,
    body: dict[str, Any],
    prompt_tokens: int,
    include_usage: bool,
) -> Iterator[str]:
    """The JSON of each SSE chunk, in order (without the final ``[DONE]``)."""
    base = {
        "id": reply_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model") or DEFAULT_MODEL,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return json.dumps({**base, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    if reply.reasoning:
        for piece in _split_words(reply.reasoning):
            yield chunk({"reasoning": piece})
    if reply.content:
        for piece in _split_words(reply.content):
            yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        head = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for piece in _split_fixed(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish_reason(reply))
    if include_usage:
        yield json.dumps({**base, "choices": [], "usage": _usage(reply, prompt_tokens)})


# --------------------------------------------------------------------------- CLI


def calling_offered_tool(name: str) -> Responder:
    """A responder that calls the client's tool ``name`` when a request offers it and
    ends with a user message (the first leg of a tool loop)."""

    def respond(body: dict[str, Any]) -> Reply | None:
        offered = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
        messages = body.get("messages") or [{}]
        if name in offered and messages[-1].get("role") == "user":
            return tool_call(name, {"query": last_user_text(body)})
        return None

    return respond


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hermes.testing.llm_server",
        description="Run the scripted OpenAI-compatible fake server until interrupted.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 lets the OS choose")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="delay before each answer")
    parser.add_argument(
        "--model", action="append", dest="models", help="a known model id (repeatable)"
    )
    parser.add_argument("--strict-models", action="store_true", help="404 for unknown models")
    parser.add_argument("--api-key", default=None, help="require this bearer key")
    parser.add_argument(
        "--strict-context", action="store_true", help="400 for messages a provider refuses"
    )
    parser.add_argument(
        "--call-tool",
        default=None,
        help="when a request offers a tool of this name and ends with a user message, "
        "call it (a client's tool loop); otherwise answer as usual",
    )
    args = parser.parse_args(argv)
    server = FakeLLMServer(
        host=args.host,
        port=args.port,
        models=args.models or [DEFAULT_MODEL],
        strict_models=args.strict_models,
        api_key=args.api_key,
        latency=args.latency_ms / 1000.0,
        strict_context=args.strict_context,
        responder=calling_offered_tool(args.call_tool) if args.call_tool else None,
    )
    done = threading.Event()
    # SIGTERM (from a benchmark runner) stops as cleanly as Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with server:
        print(server.url, flush=True)
        try:
            while not done.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
