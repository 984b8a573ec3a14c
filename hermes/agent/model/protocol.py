"""``Model``: what the agent needs of a model client, and no more.

The agent, its turn, its summariser and its background review talk to the model only
through these members. ``ModelClient`` (an OpenAI-compatible endpoint over HTTP) is the
one the agent builds by default; anything else with these members can be handed in
instead (``AIAgent(model_client=...)``, ``GatewayRunner(make_model=...)``), such as the
scripted model of ``hermes.testing``, which answers in-process without any network.

A structural protocol, not a base class: a model need not import hermes to satisfy it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hermes.agent.model.client import ModelResponse

__all__ = ["Model", "ModelFactory", "RetryCallback"]

# on_retry(number, of, delay_seconds, why): told before each pause between attempts.
RetryCallback = Callable[[int, int, float, str], None]


class Model(Protocol):
    """A synchronous model client one agent owns (a fork gets its own: ``fork``)."""

    model: str  # the model asked when a request names none
    timeout: float  # seconds one request may take (a background review caps it)
    on_retry: RetryCallback | None  # a surface hears the retries through it
    # guard(stage): called with "send" before each request and "answer" on each
    # answer, before the caller acts on it; raising stops the call.
    guard: Callable[[str], None] | None

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
        """The model's next message for ``messages`` (or ``encoded``: each message's
        JSON, as ``encode_message`` makes it), offering ``encoded_tools`` (each tool
        schema's JSON); streamed to ``stream_callback`` if given. ``options`` are
        sampling parameters sent as given. Raises ``hermes.agent.errors.ModelError``
        subclasses on failure (``ContextLengthError`` makes the turn compress and ask
        again) and ``TurnInterrupted`` after ``interrupt()``."""
        ...

    def interrupt(self) -> None:
        """Stop the running call at once; later calls fail until ``clear_interrupt``."""
        ...

    def clear_interrupt(self) -> None:
        """Allow calls again after an ``interrupt()``."""
        ...

    def prepare(self) -> None:
        """Get ready for a first request without making one (a server warms up)."""
        ...

    def close(self) -> None:
        """Let go of what this client holds; it is not used again."""
        ...

    def fork(self) -> Model:
        """A client of its own for a background review of the same conversation: the
        same endpoint and model, its own interrupt, timeout and guard."""
        ...


# What a gateway calls to give each agent it builds its model client.
ModelFactory = Callable[[], Model]
