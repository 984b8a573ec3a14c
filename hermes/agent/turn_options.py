"""The choices one request makes for its turn, passed as a value.

An ``AIAgent`` holds configuration: the endpoint, the store, the default model, its
owner's callbacks. What one caller asks for a single turn (an HTTP request's model,
instructions, sampling parameters and client tools; a run's approvals and steering; a
cron job's tools) travels with that turn as a ``TurnOptions`` given to
``run``, so nothing a caller chose is left on a long-lived agent for the
next turn (or another thread) to find. ``None`` (or empty) means "the agent's own".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

StreamCallback = Callable[[str], None]
EventCallback = Callable[[str, dict[str, Any]], None]
Approver = Callable[[str, str], bool]
Steering = Callable[[], list[str]]


@dataclass(frozen=True)
class TurnOptions:
    """One turn's choices; fields left ``None`` (or empty) take the agent's."""

    model: str | None = None
    # Sent after the segment's system prompt for this turn only, never stored.
    instructions: str | None = None
    # The tool names offered (a cron job's toolsets); None: the agent's toolset.
    tools: tuple[str, ...] | None = None
    # A caller's own tools (OpenAI function schemas): a call to one ends the turn with
    # that call for the caller to run.
    client_tools: tuple[Mapping[str, Any], ...] = ()
    # Sampling parameters for the turn's model calls (temperature, max_tokens, ...).
    sampling: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    # Where the answer's text goes as it streams; None: the agent's own callback.
    stream_callback: StreamCallback | None = None
    # Told the turn's events after the agent's own event callback.
    event_callback: EventCallback | None = None
    # Someone follows this turn and answers approval questions (an API run).
    approve: Approver | None = None
    # Guidance sent while the turn runs: the texts not yet taken, read before each call.
    steering: Steering | None = None
    # Keep what an interrupted stream had sent as a partial answer (a client that went
    # away was shown it, and resends it as the conversation so far).
    keep_partial_answer: bool = False
    # How many characters of the streamed text the caller was sent (the HTTP API counts
    # what it wrote before its client left): the partial answer keeps those, not what
    # the model wrote after. None: all that was streamed.
    sent_chars: Callable[[], int] | None = None


@dataclass(frozen=True)
class ResolvedOptions:
    """A turn's options with the agent's configuration filled in: what the turn uses."""

    model: str
    instructions: str | None
    tools: tuple[str, ...] | None
    client_tools: tuple[Mapping[str, Any], ...]
    sampling: Mapping[str, Any]
    stream_callback: StreamCallback | None
    event_callback: EventCallback | None
    approve: Approver | None
    interactive: bool
    steering: Steering | None
    keep_partial_answer: bool
    sent_chars: Callable[[], int] | None = None


@dataclass(frozen=True)
class TurnDefaults:
    """What an agent chose for its turns, where a turn's ``TurnOptions`` choose nothing:
    its model, its own instructions, its chat's request parameters and its owner's
    callbacks (``AIAgent.connect``)."""

    model: str
    max_iterations: int  # model calls a turn may make before it stops
    instructions: str | None = None
    stream_callback: StreamCallback | None = None
    approve: Approver | None = None
    interactive: bool = False
    # Request parameters the chat chose (/reasoning, /fast): a turn's own sampling wins.
    sampling: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
