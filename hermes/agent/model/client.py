"""The one door to a model endpoint: ``ModelClient`` over the ``openai`` package (and,
for a plain answer, one POST of its own on a kept connection: ``chat_post``).

What belongs here: building the request, streaming and assembling the answer into a
``ModelResponse``, our own retry policy (exponential backoff with full jitter,
``Retry-After`` honoured), interrupting a running call, and translating every
transport and ``openai`` exception into ``hermes.agent.errors``
(``translate_openai_error``).

``openai`` takes about a second to import, so it is imported on the first call, never
at module import, and constructing a ``ModelClient`` touches neither it nor the network.

Each attempt runs in a model-call thread (``call_threads``) while the caller waits on it, so
``interrupt()`` returns control at once even before the endpoint has sent a byte; a
streamed body is then read in the caller's thread (so ``stream_callback`` runs there)
and an interrupt shuts its socket down to wake the blocked read.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hermes.agent.errors import (
    ContextLengthError,
    EndpointMismatchError,
    ModelAuthError,
    ModelError,
    ModelNotFoundError,
    ModelUnavailableError,
    TurnInterrupted,
)
from hermes.agent.model import provider_usage
from hermes.agent.model.call_threads import run_in_thread
from hermes.agent.model.chat_post import LeftToTheSDK, post_chat
from hermes.agent.model.diagnosis import diagnose, scheme_problem
from hermes.agent.model.provider_usage import UsageDetails
from hermes.redaction import register
from hermes.state.context.message import WireMessage, wire_form

__all__ = ["ModelClient", "ModelResponse", "ToolCall", "translate_openai_error"]

log = logging.getLogger(__name__)
T = TypeVar("T")

# Request parameters a caller may set per request (the HTTP API passes them through).
SAMPLING_KEYS = (
    "temperature",
    "max_tokens",
    "stop",
    "user",
    "tool_choice",
    # The other parameters an API caller may choose, sent as given.
    "top_p",
    "frequency_penalty",
    "presence_penalty",
    "seed",
    "logit_bias",
    "response_format",
    "parallel_tool_calls",
    "reasoning_effort",
    "verbosity",
    "service_tier",
    "prompt_cache_key",
    "safety_identifier",
    "metadata",
    "prediction",
    "web_search_options",
)

# The keys an OpenAI-compatible endpoint accepts on a chat message. hermes keeps its
# own bookkeeping on message dicts (``message_uid``, ``reasoning``...), and strict
# endpoints reject unknown keys, so only these cross the wire.
# Statuses worth another attempt: rate limits, timeouts, conflicts, server errors.
_RETRY_STATUSES = frozenset({408, 409, 429})

_CONTEXT_PHRASES = ("maximum context length", "context length", "context_length_exceeded")

# Used when no key is configured: local endpoints (Ollama, llama.cpp) need none, and a
# hosted one answers 401, which becomes a ModelAuthError that says what to set.
_NO_KEY = "no-key-configured"

_CHAT_PATH = "/chat/completions"


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the model sent it; ``arguments`` is raw JSON text, maybe malformed."""

    id: str
    name: str
    arguments: str


@dataclass
class ModelResponse:
    """One assistant answer. ``content`` is None when the model produced no text."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model: str | None = None
    usage: UsageDetails = field(default_factory=UsageDetails)  # cache, reasoning, cost


StreamCallback = Callable[[str], None]


class ModelClient:
    """A synchronous, thread-safe client for one OpenAI-compatible endpoint."""

    def __init__(
        self,
        api_key: str | None,
        base_url: str,
        model: str,
        *,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_cap: float = 20.0,
        sleep: Callable[[float], None] | None = None,
        rng: random.Random | None = None,
        cancel_event: threading.Event | None = None,
        headers: Mapping[str, str] | None = None,
        verify: bool | str = True,
    ) -> None:
        self.api_key = api_key
        register(api_key)  # a provider echoing it back is scrubbed everywhere
        # Sent with every request (a proxy's or Cloudflare Access's token, say), and how
        # the endpoint's certificate is checked: True, False (not at all), a CA file.
        self.headers = dict(headers or {})
        register(*self.headers.values())
        self.verify = verify
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        # Tests inject ``sleep`` to observe the backoff without waiting for it.
        self._sleep = sleep
        self._rng = rng or random.Random()
        # Shared with the agent when given, so one interrupt reaches every call.
        self._cancel = cancel_event or threading.Event()
        self._lock = threading.Lock()
        self._openai: Any = None  # the lazily imported module
        self._client: Any = None
        self._streams: set[Any] = set()
        self._waiters: set[threading.Event] = set()
        self._aborts: set[Any] = set()  # kept_http.Abort of posts running in place
        # on_retry(number, of, delay_seconds, why): told before each pause between
        # attempts, so a surface can say the endpoint is not answering (the agent
        # room itself prints nothing).
        self.on_retry: Callable[[int, int, float, str], None] | None = None
        # guard(stage): called with "send" just before each request goes out and with
        # "answer" when its answer came, before the caller acts on it; raising stops the
        # call (the background review so drops a context the user took back meanwhile).
        self.guard: Callable[[str], None] | None = None

    def __repr__(self) -> str:
        return f"ModelClient(base_url={self.base_url!r}, model={self.model!r})"

    # -- public API

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]] = (),
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
        stream_callback: StreamCallback | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        encoded: Sequence[bytes] | None = None,
        encoded_tools: Sequence[bytes] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ModelResponse:
        """Ask the model for its next message; stream text to ``stream_callback`` if given.

        ``encoded`` are the messages already in their wire form (``encode_message``
        each): the agent keeps its context so, and the body is then their join, so a
        long history is not encoded again on every call; ``encoded_tools`` are tool
        schemas so (instead of ``tools``). ``options`` holds sampling
        parameters a caller chose (``SAMPLING_KEYS``), sent as given. Raises a
        ``ModelError`` subclass on failure, ``TurnInterrupted`` on ``interrupt()``.
        """
        model = model or self.model
        request: dict[str, Any] = {"model": model}
        if tools and encoded_tools:
            raise ValueError("give tools or encoded_tools, not both")
        if tools:
            request["tools"] = list(tools)
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if temperature is not None:
            request["temperature"] = temperature
        request.update({k: v for k, v in (options or {}).items() if k in SAMPLING_KEYS})
        if stream_callback is not None:
            request["stream"] = True
            request["stream_options"] = {"include_usage": True}
        if encoded is None:
            encoded = [encode_message(m) for m in wire_messages(messages)]
        body = request_body(request, encoded, encoded_tools or ())
        if stream_callback is None:
            return self._with_retries(model, lambda: self._complete_once(body))
        return self._with_retries(model, lambda: self._stream_once(body, model, stream_callback))

    def list_models(self) -> list[str]:
        """The model ids the endpoint offers (for ``hermes doctor``)."""

        def fetch() -> list[str]:
            page = self._run_interruptibly(lambda: self._openai_client().models.list())
            return [m.id for m in page.data]

        try:
            return self._with_retries(self.model, fetch)
        except ModelNotFoundError as exc:
            # Here a 404 means the endpoint has no listing, not that the model is missing.
            raise ModelError(
                f"The endpoint {self.base_url} does not list its models (404). "
                "Check the base URL; it usually ends in /v1.",
                model=self.model,
                base_url=self.base_url,
                status=404,
            ) from exc

    def interrupt(self) -> None:
        """Stop the running call(s) promptly; they raise ``TurnInterrupted``.

        The flag stays set (later calls fail at once) until ``clear_interrupt()``, so an
        interrupt that lands just before a call starts is not lost.
        """
        self._cancel.set()
        with self._lock:
            streams = list(self._streams)
            waiters = list(self._waiters)
            aborts = list(self._aborts)
        for waiter in waiters:
            waiter.set()
        for abort in aborts:
            abort.request()
        for stream in streams:
            _abort_stream(stream)

    def clear_interrupt(self) -> None:
        """Allow calls again after an ``interrupt()`` (the agent does it per turn)."""
        self._cancel.clear()

    reset_interrupt = clear_interrupt

    @property
    def interrupted(self) -> bool:
        return self._cancel.is_set()

    def prepare(self) -> None:
        """Import the SDK and build the (shared) HTTP client now, not on the first
        request: a server warms up once instead of making its first user wait ~1 s.
        Makes no network call."""
        self._openai_client()

    def use_endpoint(
        self,
        api_key: str | None,
        base_url: str,
        headers: Mapping[str, str] | None = None,
        verify: bool | str = True,
    ) -> None:
        """Send the next requests to ``base_url`` with ``api_key``, and that endpoint's
        own ``headers`` and ``verify`` (never the last endpoint's: its headers may be a
        credential for it alone); a call already running finishes where it started."""
        register(api_key)
        register(*(headers or {}).values())
        with self._lock:
            self.api_key, self.base_url = api_key, base_url.rstrip("/")
            self.headers, self.verify = dict(headers or {}), verify
            self._client = None  # rebuilt for the new endpoint on the next request

    def close(self) -> None:
        """Let go of the HTTP client; the process-wide pool stays for other agents."""
        with self._lock:
            self._client = None

    def fork(self) -> ModelClient:
        """A client of its own for the same endpoint and model (a background review's):
        its own interrupt, timeout, guard and retry listener."""
        return ModelClient(
            self.api_key,
            self.base_url,
            self.model,
            timeout=self.timeout,
            max_retries=self.max_retries,
            backoff_base=self.backoff_base,
            backoff_cap=self.backoff_cap,
            headers=self.headers,
            verify=self.verify,
        )

    # -- retries

    def _with_retries(self, model: str, attempt: Callable[[], T]) -> T:
        problem = scheme_problem(self.base_url)
        if problem:  # can never work: said at once, not retried
            raise EndpointMismatchError(problem, model=model, base_url=self.base_url)
        openai = self._openai_module()
        attempts = self.max_retries + 1
        for number in range(1, attempts + 1):
            self._raise_if_interrupted()
            if self.guard is not None:
                self.guard("send")
            try:
                answer = attempt()
            except (openai.OpenAIError, _MalformedResponse) as exc:
                self._raise_if_interrupted(exc)
                if number == 1 and _worth_diagnosing(exc):
                    self._raise_diagnosed(model, exc)
                if not _is_retryable(exc, openai):
                    raise translate_openai_error(exc, model=model, base_url=self.base_url) from exc
                if number == attempts:
                    raise ModelUnavailableError(
                        model=model,
                        base_url=self.base_url,
                        status=getattr(exc, "status_code", None),
                        detail=_describe(exc),
                        attempts=attempts,
                    ) from exc
                delay = self._backoff(number, exc)
                log.info(
                    "Model call to %s (%s) failed (status %s: %s); retry %d/%d in %.2fs.",
                    self.base_url,
                    model,
                    _status_of(exc),
                    _describe(exc),
                    number,
                    self.max_retries,
                    delay,
                )
                if self.on_retry is not None:
                    self.on_retry(number, self.max_retries, delay, _describe(exc))
                self._pause(delay)
                continue
            if self.guard is not None:
                self.guard("answer")
            return answer
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _raise_diagnosed(self, model: str, exc: BaseException) -> None:
        """Raise the endpoint's own account of a 404 or a non-JSON answer (a URL missing
        /v1, a server that is not an OpenAI API, a model it does not offer), if it has one."""
        found = diagnose(self.base_url, self.api_key, model)
        if found is None:
            return
        kind = ModelNotFoundError if found.model_missing else EndpointMismatchError
        raise kind(
            found.sentence, model=model, base_url=self.base_url, status=_status_of(exc)
        ) from exc

    def _backoff(self, number: int, exc: BaseException) -> float:
        """Seconds before attempt ``number + 1``: Retry-After if sent, else full jitter."""
        retry_after = _retry_after_seconds(exc)
        if retry_after is not None:
            return min(retry_after, self.backoff_cap)
        ceiling = min(self.backoff_cap, self.backoff_base * (2 ** (number - 1)))
        return self._rng.uniform(0.0, ceiling)

    def _pause(self, seconds: float) -> None:
        if self._sleep is not None:
            self._sleep(seconds)
        else:
            self._cancel.wait(seconds)  # returns early on interrupt
        self._raise_if_interrupted()

    def _raise_if_interrupted(self, cause: BaseException | None = None) -> None:
        if self._cancel.is_set():
            raise TurnInterrupted() from cause

    # -- one attempt

    # Requests carry the body as built here: ``chat.completions.create`` walks every
    # message through its type transform and parses the answer into pydantic models,
    # ~4 ms of CPU per call with a 20-message history and more as it grows. Two ways
    # reach the model (docs/benchmarks.md, "Model transport"): a plain answer is one
    # POST on a kept connection (``chat_post``), ~0.6 ms of CPU less than the SDK's
    # low-level ``post``, the other way, which takes streams (its SSE reading and error
    # events), the model list, and plain answers behind a proxy or a redirect.

    def _complete_once(self, body: bytes) -> ModelResponse:
        key = self.api_key or _NO_KEY
        try:
            answer = self._post_in_place(key, body)
            if answer is None:  # no idle kept connection: connect in a model-call thread
                answer = self._run_interruptibly(
                    lambda: post_chat(
                        self.base_url, key, self.timeout, body, None, self.headers, self.verify
                    )
                )
        except LeftToTheSDK:
            answer = self._run_interruptibly(
                lambda: self._openai_client().post(_CHAT_PATH, content=body, cast_to=bytes)
            )
        return _response_from_json(answer)

    def _post_in_place(self, key: str, body: bytes) -> bytes | None:
        """The POST in this thread on a kept connection, which ``interrupt()`` aborts;
        None where it cannot be (see ``kept_http``). This spares the call two thread
        switches, about a tenth of a millisecond of CPU."""
        from hermes.agent.model import kept_http  # http.client and ssl: not at `import run_agent`

        abort = kept_http.Abort()
        # Registering under the lock pairs with interrupt(), as for streams.
        with self._lock:
            cancelled = self._cancel.is_set()
            if not cancelled:
                self._aborts.add(abort)
        if cancelled:
            raise TurnInterrupted()
        try:
            return post_chat(
                self.base_url, key, self.timeout, body, abort, self.headers, self.verify
            )
        except kept_http.NoKeptConnection:
            return None
        except BaseException as exc:
            self._raise_if_interrupted(exc)
            raise
        finally:
            with self._lock:
                self._aborts.discard(abort)

    def _stream_once(self, body: bytes, model: str, callback: StreamCallback) -> ModelResponse:
        client = self._openai_client()
        openai = self._openai_module()
        chunk_type = openai.types.chat.ChatCompletionChunk
        stream = self._run_interruptibly(
            lambda: client.post(
                _CHAT_PATH,
                content=body,
                cast_to=chunk_type,
                stream=True,
                stream_cls=openai.Stream[chunk_type],
            )
        )
        # Registering under the lock pairs with interrupt(): either it sees this
        # stream and aborts it, or we see its flag here.
        with self._lock:
            cancelled = self._cancel.is_set()
            if not cancelled:
                self._streams.add(stream)
        if cancelled:
            with contextlib.suppress(Exception):
                stream.close()
            raise TurnInterrupted()
        assembler = _StreamAssembler()
        try:
            for chunk in stream:
                self._raise_if_interrupted()
                text = assembler.add(chunk)
                if text:
                    callback(text)
        except TurnInterrupted:
            raise
        except Exception as exc:
            self._raise_if_interrupted(exc)
            if assembler.emitted_text and isinstance(exc, self._openai_module().OpenAIError):
                # Retrying would stream the same words to the caller twice.
                raise ModelUnavailableError(
                    model=model,
                    base_url=self.base_url,
                    detail=f"the stream broke after partial output ({_describe(exc)})",
                ) from exc
            raise
        finally:
            with self._lock:
                self._streams.discard(stream)
            with contextlib.suppress(Exception):
                stream.close()
        return assembler.response(model)

    def _run_interruptibly(self, call: Callable[[], Any]) -> Any:
        """Run ``call`` in a model-call thread; return its result or raise on interrupt."""
        self._raise_if_interrupted()
        done = threading.Event()
        outcome: dict[str, Any] = {}
        lock = threading.Lock()

        def work() -> None:
            try:
                result = call()
            except BaseException as exc:  # handed to the caller's thread below
                with lock:
                    outcome["error"] = exc
            else:
                with lock:
                    outcome["value"] = result
                    abandoned = outcome.get("abandoned", False)
                if abandoned:
                    # Nobody will read this answer: free its connection.
                    with contextlib.suppress(Exception):
                        getattr(result, "close", lambda: None)()
            finally:
                done.set()

        with self._lock:
            self._waiters.add(done)
        try:
            run_in_thread(work)
            done.wait()
        finally:
            with self._lock:
                self._waiters.discard(done)
            with lock:
                finished = "value" in outcome or "error" in outcome
                outcome["abandoned"] = not finished
        if not finished:
            raise TurnInterrupted()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    # -- the openai package, imported lazily

    def _openai_module(self) -> Any:
        if self._openai is None:
            import openai  # deferred: ~1 s, and `import run_agent` must stay fast

            self._openai = openai
        return self._openai

    def _openai_client(self) -> Any:
        # Import before taking the lock: interrupt() needs it and must never wait ~1 s.
        openai = self._openai_module()
        with self._lock:
            if self._client is None:
                self._client = _shared_openai_client(
                    openai, self.api_key, self.base_url, self.timeout, self.headers, self.verify
                )
            return self._client


# One openai client per (endpoint, key, timeout, headers, certificate check) for the
# whole process: building one costs ~25 ms of CPU (its TLS context), and a gateway runs
# hundreds of agents. The client and its connection pool are thread-safe.
_shared_clients: dict[tuple[Any, ...], Any] = {}
_shared_lock = threading.Lock()


def _shared_openai_client(
    openai: Any,
    api_key: str | None,
    base_url: str,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    verify: bool | str = True,
) -> Any:
    key = (base_url, api_key or _NO_KEY, timeout, tuple(sorted((headers or {}).items())), verify)
    with _shared_lock:
        client = _shared_clients.get(key)
        if client is None:
            from hermes.agent.model import kept_http  # ssl: not at `import run_agent`

            client = openai.OpenAI(
                api_key=api_key or _NO_KEY,
                base_url=base_url,
                timeout=timeout,
                # Retries are ours (policy, Retry-After, interrupts), never the SDK's.
                max_retries=0,
                default_headers=dict(headers) if headers else None,
                http_client=None
                if verify is True
                else openai.DefaultHttpxClient(verify=kept_http.ssl_context(verify)),
            )
            _shared_clients[key] = client
        return client


# --------------------------------------------------------------------------- requests


def wire_messages(messages: Iterable[Mapping[str, Any]]) -> list[WireMessage]:
    """Messages as the endpoint accepts them (``hermes.state.context.message.wire_form``)."""
    return [wire_form(message) for message in messages]


def encode_message(message: Mapping[str, Any]) -> bytes:
    """One wire-form message as the JSON text it has in a request body."""
    return _encode(message)


def request_body(
    request: Mapping[str, Any], encoded: Sequence[bytes], tools: Sequence[bytes] = ()
) -> bytes:
    """The JSON body: ``{"messages": [...], "tools": [...], **request}``, the messages
    and the tools (if any: already encoded, ``request`` then has none) joined as given."""
    rest = _encode(request)  # b'{"model":...}': never empty, it always names the model
    if tools:
        rest = b'{"tools":[' + b",".join(tools) + b"]," + rest[1:]
    head, tail = b'{"messages":[', b"]," + rest[1:]
    if not encoded:
        return head + tail
    # One join, one copy: each extra concatenation of a body of megabytes costs more
    # than the join itself.
    if len(encoded) == 1:
        return head + encoded[0] + tail
    return b",".join([head + encoded[0], *encoded[1:-1], encoded[-1] + tail])


def _encode(value: Any) -> bytes:
    # The SDK's own encoding (compact, UTF-8): what it would have sent for the dict.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


# --------------------------------------------------------------------------- responses


class _MalformedResponse(Exception):
    """The endpoint answered 200 with something unusable; retried like a 5xx."""


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _reasoning_of(message: Any) -> str | None:
    """A message's (or stream delta's) reasoning text, from a JSON dict or an SDK object."""
    # OpenRouter calls it ``reasoning``; DeepSeek, vLLM and llama.cpp ``reasoning_content``.
    for name in ("reasoning", "reasoning_content"):
        value = message.get(name) if isinstance(message, dict) else getattr(message, name, None)
        if _text(value):
            return value
    return None


def _response_from_json(body: bytes) -> ModelResponse:
    """A chat completion's JSON body as a ``ModelResponse``; odd shapes are malformed."""
    try:
        completion = json.loads(body)
    except ValueError as exc:
        raise _MalformedResponse("the endpoint answered with something that is not JSON") from exc
    choices = completion.get("choices") if isinstance(completion, dict) else None
    if not choices or not isinstance(choices[0], dict):
        # Some routers answer 200 with an error body and no choices when an
        # upstream provider fails; treat it like a 5xx.
        raise _MalformedResponse("the endpoint answered without any choices")
    choice = choices[0]
    message = _mapping(choice.get("message"))
    calls = []
    for call in message.get("tool_calls") or []:
        call = _mapping(call)
        function = _mapping(call.get("function"))
        calls.append(
            ToolCall(
                id=call.get("id") or _new_call_id(),
                name=function.get("name") or "",
                arguments=_arguments_text(function.get("arguments")),
            )
        )
    usage = _mapping(completion.get("usage"))
    return ModelResponse(
        content=_text(message.get("content")),
        tool_calls=calls,
        reasoning=_reasoning_of(message),
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        model=completion.get("model"),
        usage=provider_usage.details(usage),
    )


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _arguments_text(arguments: Any) -> str:
    # A few servers send the arguments as a JSON object instead of its text.
    if arguments is None:
        return ""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _StreamAssembler:
    """Folds streamed chunks into one ``ModelResponse``."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.usage = UsageDetails()
        self.model: str | None = None

    @property
    def emitted_text(self) -> bool:
        return any(self.text)

    def add(self, chunk: Any) -> str | None:
        """Take one chunk; return its text delta, if any, for the stream callback."""
        self.model = getattr(chunk, "model", None) or self.model
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.prompt_tokens = getattr(usage, "prompt_tokens", None)
            self.completion_tokens = getattr(usage, "completion_tokens", None)
            self.usage = provider_usage.details(usage)
        text = None
        for choice in getattr(chunk, "choices", None) or []:
            delta = choice.delta
            if delta is not None:
                text = _text(delta.content)
                if text:
                    self.text.append(text)
                reasoning = _reasoning_of(delta)
                if reasoning:
                    self.reasoning.append(reasoning)
                for call_delta in delta.tool_calls or []:
                    self._add_call(call_delta)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return text

    def _add_call(self, delta: Any) -> None:
        index = delta.index if delta.index is not None else self._index_for(delta.id)
        call = self.calls.setdefault(index, _PartialCall())
        if delta.id:
            call.id = delta.id
        function = delta.function
        if function is None:
            return
        name = function.name
        if name:
            # Most providers send the name once; some repeat it whole in every delta.
            call.name = name if not call.name or name.startswith(call.name) else call.name + name
        if function.arguments:
            call.arguments.append(function.arguments)

    def _index_for(self, call_id: str | None) -> int:
        for index, call in self.calls.items():
            if call_id and call.id == call_id:
                return index
        return len(self.calls) if call_id or not self.calls else max(self.calls)

    def response(self, requested_model: str) -> ModelResponse:
        calls = [
            ToolCall(id=c.id or _new_call_id(), name=c.name, arguments="".join(c.arguments))
            for _, c in sorted(self.calls.items())
        ]
        return ModelResponse(
            content="".join(self.text) or None,
            tool_calls=calls,
            reasoning="".join(self.reasoning) or None,
            finish_reason=self.finish_reason,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            usage=self.usage,
            model=self.model or requested_model,
        )


def _abort_stream(stream: Any) -> None:
    """Wake a thread blocked reading ``stream``: shut its socket down.

    Closing the response from another thread does not interrupt a blocked ``recv``;
    ``shutdown`` does, and the reading thread then closes the stream itself.
    """
    network = getattr(stream, "response", None)
    network = getattr(network, "extensions", {}).get("network_stream")
    sock = network.get_extra_info("socket") if network is not None else None
    import socket  # here: the openai client has imported it by now; `import run_agent` not

    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        return
    with contextlib.suppress(Exception):
        stream.close()


# --------------------------------------------------------------------------- errors


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _worth_diagnosing(exc: BaseException) -> bool:
    """A failure a wrong base URL causes: no such route (404, 405) or not JSON."""
    return isinstance(exc, _MalformedResponse) or _status_of(exc) in (404, 405)


def _is_retryable(exc: BaseException, openai: Any) -> bool:
    if isinstance(exc, _MalformedResponse | openai.APIConnectionError):
        return True  # timeouts, refused and dropped connections, garbage bodies
    status = _status_of(exc)
    if status is not None:
        return (status in _RETRY_STATUSES or status >= 500) and not _is_context_error(exc)
    # A bare APIError is an error event inside a stream (e.g. an upstream provider
    # failing mid-answer behind a router): transient unless it is about length.
    return type(exc) is openai.APIError and not _is_context_error(exc)


def _is_context_error(exc: BaseException) -> bool:
    if getattr(exc, "code", None) == "context_length_exceeded":
        return True
    message = str(getattr(exc, "message", None) or exc).lower()
    return any(phrase in message for phrase in _CONTEXT_PHRASES)


def _describe(exc: BaseException) -> str:
    """A short reason for a person: the provider's message without the SDK's prefix
    (the status is reported separately)."""
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message:
        message = str(getattr(exc, "message", None) or exc) or type(exc).__name__
    message = message.strip().rstrip(".")
    cause = exc.__cause__
    if cause is not None and _status_of(exc) is None and str(cause):
        # "Connection error" alone says little; the transport's reason says more.
        message = f"{message}: {str(cause).strip()}"
    return message


def translate_openai_error(exc: BaseException, *, model: str, base_url: str) -> ModelError:
    """The hermes error for an ``openai`` (or malformed-response) exception.

    The retry loop uses it for failures it does not retry; exhausted retries become
    ``ModelUnavailableError`` there. Anything unrecognised is a plain ``ModelError``.
    """
    import openai  # already loaded: the exception came from it

    status = _status_of(exc)
    detail = _describe(exc)
    kwargs: dict[str, Any] = {"model": model, "base_url": base_url, "status": status}
    if _is_context_error(exc) or status == 413:
        return ContextLengthError(detail=detail, **kwargs)
    if status in (401, 403) or isinstance(exc, openai.AuthenticationError):
        return ModelAuthError(detail=detail, **kwargs)
    if status == 404:
        return ModelNotFoundError(detail=detail, **kwargs)
    if isinstance(exc, openai.APIConnectionError | _MalformedResponse):
        return ModelUnavailableError(detail=detail, **kwargs)
    if status is not None and (status in _RETRY_STATUSES or status >= 500):
        return ModelUnavailableError(detail=detail, **kwargs)
    return ModelError(detail=detail, **kwargs)


def _retry_after_seconds(exc: BaseException) -> float | None:
    """The server's requested wait, from ``retry-after-ms`` or ``Retry-After``."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    with contextlib.suppress(TypeError, ValueError):
        milliseconds = headers.get("retry-after-ms")
        if milliseconds is not None:
            return max(0.0, float(milliseconds) / 1000.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    with contextlib.suppress(TypeError, ValueError):
        return max(0.0, float(value))
    import email.utils  # rare (an HTTP-date Retry-After) and ~2 ms to import

    with contextlib.suppress(TypeError, ValueError, IndexError):
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    return None
