"""What a turn needs of the agent that runs it: the ``TurnHost`` protocol.

``turn``, ``compression``, ``recontext``, ``turn_holding``, ``review`` and
``plugin_hooks`` are handed a host, never the ``AIAgent`` class: a few small objects,
each one concern, and a few calls.

- ``binding``: the conversation in the store (ids, history, persistence; binding.py);
- ``client``: the model (``hermes.agent.model.protocol.Model``);
- ``toolbox``: the registry, the names offered and a call's context (toolbox.py);
- ``window``: the compressor, the masking and the encoded context (window.py);
- ``settings``: the configuration, typed (settings.py); ``defaults()``: the agent's
  choices where a turn's options make none;
- ``interruption``: the user's stop (interruption.py); ``steering``: the user's
  ``/steer`` for the running turn (steering.py); ``emit``: the owner's events;
- ``compress()``: the turn's compressions, through the agent's ``_compress_context``
  (Hermes Agent's extension point: a subclass or a patch may override it);
- ``lease``: who this agent is when it takes a conversation's compression lease;
- ``is_fork``, ``plugins``, ``review_threads`` and ``review_fork()``: the background
  review and the plugins' hooks.

``AIAgent`` (agent.py) assembles these parts and satisfies the protocol.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hermes.agent.binding import ConversationBinding
    from hermes.agent.interruption import Interruption
    from hermes.agent.model.protocol import Model
    from hermes.agent.settings import AgentOptions
    from hermes.agent.steering import SteeringInbox
    from hermes.agent.toolbox import Toolbox
    from hermes.agent.turn_options import TurnDefaults
    from hermes.agent.turn_result import TurnResult
    from hermes.agent.window import ContextWindow
    from hermes.plugins import PluginManager
    from hermes.state.context.message import Message


@dataclass(frozen=True)
class Lease:
    """Who holds a conversation's compression lease for this agent, and for how long."""

    holder: str
    ttl: float  # seconds; a holder refreshes it while its summary is written


class ReviewFork(Protocol):
    """What the background review asks of the fork ``TurnHost.review_fork`` makes."""

    @property
    def client(self) -> Model: ...

    def run(
        self, user_message: Any, *, conversation_history: Sequence[Any] | None = None
    ) -> TurnResult: ...

    def tool_names(self) -> list[str]: ...

    def interrupt(self) -> None: ...

    def guard_model_calls(self, guard: Callable[[str], None]) -> None: ...


class TurnHost(Protocol):
    """The parts of an agent a turn and the compression path use (see the module doc)."""

    # One read-only property a member, alike by design: this list is the seam.
    @property
    def binding(self) -> ConversationBinding: ...

    @property
    def client(self) -> Model: ...

    @property
    def toolbox(self) -> Toolbox: ...

    @property
    def window(self) -> ContextWindow: ...

    @property
    def settings(self) -> AgentOptions: ...

    @property
    def interruption(self) -> Interruption: ...

    @property
    def steering(self) -> SteeringInbox: ...

    @property
    def lease(self) -> Lease: ...

    @property
    def is_fork(self) -> bool: ...

    @property
    def plugins(self) -> PluginManager: ...

    @property
    def review_threads(self) -> list[threading.Thread]: ...

    def defaults(self) -> TurnDefaults: ...

    def emit(self, kind: str, **data: Any) -> None: ...

    # AIAgent.compress's signature, repeated: a protocol states it.
    def compress(
        self,
        messages: list[Message],
        system_message: str | None,
        *,
        approx_tokens: int | None = None,
        detached: bool = False,
    ) -> tuple[list[Message], str | None]: ...

    def review_fork(self) -> ReviewFork: ...
