"""``ScriptedModel``: an in-process model that answers from a script, for tests.

It satisfies ``hermes.agent.model.protocol.Model``, so a real ``AIAgent`` (its turn,
tools, store, compression and review) runs against it without any network::

    model = ScriptedModel([tool_call("read_file", {"path": "notes.txt"}), "It says 42."])
    agent = AIAgent(session_db=db, model_client=model)
    assert agent.chat("What is in notes.txt?") == "It says 42."
    assert model.requests[1].messages[-1]["role"] == "tool"

Each request takes the next item of the script, in order:

- a ``str``: a plain text answer;
- a ``ModelResponse`` (``text``, ``tool_call`` and ``tool_calls`` make them);
- an exception, raised as the model's failure (``context_length_exceeded()`` makes
  the turn compress and ask again; any ``hermes.agent.errors.ModelError`` works);
- a function of the ``ModelRequest``, returning any of the above.

When the script runs out, ``function`` (if given) answers every further request;
otherwise the request fails with ``ScriptExhausted``. Every request is recorded in
``requests`` (as a ``ModelRequest``: the messages and tool schemas as the endpoint
would get them) before it is answered, the ones that fail included.

A background review (every ``agent.review_interval`` user turns) asks a fork of the
model, never this script: the fork answers from ``fork_replies`` (default: one line
saying nothing was saved), and ``forks`` holds the forks made.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from hermes.agent.errors import ContextLengthError, TurnInterrupted
from hermes.agent.model.client import ModelResponse, ToolCall, encode_message, wire_messages
from hermes.agent.model.protocol import Model, RetryCallback
from hermes.agent.tokens import estimate_text_tokens, estimate_tokens

SCRIPTED_MODEL = "scripted-model"
NOTHING_SAVED = "Nothing new to save."


@dataclass(frozen=True)
class ModelRequest:
    """One request as the model got it."""

    messages: list[dict[str, Any]]  # the system message first, as sent
    tools: list[dict[str, Any]]  # the tool schemas offered (OpenAI's function form)
    model: str
    options: dict[str, Any] = field(default_factory=dict)  # sampling parameters
    streamed: bool = False

    @property
    def last_user_text(self) -> str:
        """The text of the last user message ("" if none)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered."""
        return [str((tool.get("function") or {}).get("name")) for tool in self.tools]


# A script item: an answer, a failure, or a function of the request making one.
Scripted: TypeAlias = str | ModelResponse | BaseException | Callable[[ModelRequest], "Scripted"]


class ScriptExhausted(RuntimeError):
    """A request came after the script's last reply and no ``function`` was given."""


def text(content: str, *, reasoning: str | None = None) -> ModelResponse:
    """A plain text answer."""
    return ModelResponse(content=content, reasoning=reasoning)


def tool_call(
    name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str | None = None
) -> ModelResponse:
    """An answer calling one tool; ``arguments`` as a mapping, or raw JSON text (which
    may be malformed on purpose)."""
    return tool_calls((name, arguments or {}), ids=[id] if id else None)


def tool_calls(
    *calls: tuple[str, Mapping[str, Any] | str], ids: Sequence[str] | None = None
) -> ModelResponse:
    """An answer calling several tools at once: ``(name, arguments)`` each."""
    made = [
        ToolCall(
            id=(ids[number] if ids else "") or f"call_{uuid.uuid4().hex[:12]}",
            name=name,
            arguments=arguments if isinstance(arguments, str) else json.dumps(dict(arguments)),
        )
        for number, (name, arguments) in enumerate(calls)
    ]
    return ModelResponse(content=None, tool_calls=made)


def context_length_exceeded(
    max_tokens: int = 128_000, *, model: str = SCRIPTED_MODEL
) -> ContextLengthError:
    """The failure of a request longer than the model's context window of ``max_tokens``
    (the agent believes the figure, as it believes a provider's, and compresses to it)."""
    detail = f"This model's maximum context length is {max_tokens} tokens."
    return ContextLengthError(model=model, base_url="scripted://", status=400, detail=detail)


class ScriptedModel:
    """A ``Model`` answering from ``script`` (then ``function``); see the module."""

    def __init__(
        self,
        script: Iterable[Scripted] = (),
        *,
        function: Callable[[ModelRequest], Scripted] | None = None,
        model: str = SCRIPTED_MODEL,
        fork_replies: Iterable[Scripted] | None = None,
    ) -> None:
        self.model = model
        self.timeout = 120.0
        self.on_retry: RetryCallback | None = None  # never called: nothing is retried
        self.guard: Callable[[str], None] | None = None
        self.function = function
        self.requests: list[ModelRequest] = []
        self.forks: list[ScriptedModel] = []
        self.closed = False
        self._script: deque[Scripted] = deque(script)
        self._fork_replies = list(fork_replies) if fork_replies is not None else None
        self._interrupted = threading.Event()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ScriptedModel({len(self._script)} replies left, {len(self.requests)} requests)"

    @property
    def remaining(self) -> int:
        """Script items not yet used."""
        return len(self._script)

    def add(self, *items: Scripted) -> None:
        """Append to the script."""
        with self._lock:
            self._script.extend(items)

    # Model.complete's signature (agent/model/protocol.py), repeated: this is a Model.
    def complete(
        self,
        messages: Sequence[Mapping[str, Any]] = (),
        *,
        model: str | None = None,
        stream_callback: Callable[[str], None] | None = None,
        encoded: Sequence[bytes] | None = None,
        encoded_tools: Sequence[bytes] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ModelResponse:
        """The next scripted answer to this request (see the module)."""
        self._stop_if_interrupted()
        if self.guard is not None:
            self.guard("send")
        request = ModelRequest(
            messages=[json.loads(m) for m in encoded] if encoded is not None else _plain(messages),
            tools=[json.loads(t) for t in encoded_tools or ()],
            model=model or self.model,
            options=dict(options or {}),
            streamed=stream_callback is not None,
        )
        with self._lock:
            self.requests.append(request)
            item = self._next_item(len(self.requests))
        response = _answer(item, request)
        self._stop_if_interrupted()
        if self.guard is not None:
            self.guard("answer")
        if stream_callback is not None and response.content:
            for piece in re.findall(r"\s*\S+\s*|\s+", response.content):
                stream_callback(piece)
        return response

    def interrupt(self) -> None:
        self._interrupted.set()

    def clear_interrupt(self) -> None:
        self._interrupted.clear()

    def prepare(self) -> None:
        """Nothing to warm up."""

    def close(self) -> None:
        self.closed = True

    def fork(self) -> Model:
        """A model of its own for a background review (see the module)."""
        replies = self._fork_replies
        fork = ScriptedModel(
            replies or (),
            function=None if replies is not None else (lambda _: NOTHING_SAVED),
            model=self.model,
        )
        self.forks.append(fork)
        return fork

    def _next_item(self, number: int) -> Scripted:
        if self._script:
            return self._script.popleft()
        if self.function is not None:
            return self.function
        raise ScriptExhausted(
            f"ScriptedModel got request {number} but its script is used up; "
            "add replies to the script or give it a function."
        )

    def _stop_if_interrupted(self) -> None:
        if self._interrupted.is_set():
            raise TurnInterrupted()


def _answer(item: Scripted, request: ModelRequest) -> ModelResponse:
    """The answer ``item`` makes to ``request``, its usage filled in as a provider would."""
    while callable(item) and not isinstance(item, (ModelResponse, BaseException)):
        item = item(request)
    if isinstance(item, BaseException):
        raise item
    response = replace(text(item)) if isinstance(item, str) else replace(item)
    if response.finish_reason is None:
        response.finish_reason = "tool_calls" if response.tool_calls else "stop"
    if response.prompt_tokens is None:
        response.prompt_tokens = estimate_tokens(request.messages)
    if response.completion_tokens is None:
        response.completion_tokens = estimate_text_tokens(response.content)
    response.model = response.model or request.model
    return response


def _plain(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages as an endpoint gets them (hermes's own keys left out), copied."""
    return [json.loads(encode_message(m)) for m in wire_messages(messages)]


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""
