"""What a turn did, as its caller gets it: ``AIAgent.run`` returns a ``TurnResult``.

The result is data, frozen; native callers (the gateway, cron, the terminal chat, the
review) read its fields. Hermes Agent's dict shape of ``run_conversation`` is made from it
at the edge, in ``hermes.compat.agent``, and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes.state.context.message import Message


@dataclass(frozen=True)
class TurnResult:
    """One turn's outcome: its answer (None when it ended without one), the client
    tools' calls handed back to the caller, the context it ran with, its usage."""

    answer: str | None
    tool_calls: list[dict[str, Any]]
    messages: list[Message]
    session_id: str | None
    iterations: int
    interrupted: bool
    prompt_tokens: int
    completion_tokens: int
    compressions: list[dict[str, Any]]
    system_prompt: str | None
    # /steer text the turn ended without taking: the caller sends it as the next turn.
    pending_steer: str | None = None
