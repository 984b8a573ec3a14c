"""What a turn did, as its caller gets it: ``AIAgent.run`` returns a ``TurnResult``.

The result is data, frozen; native callers (the gateway, cron, the terminal chat, the
review) read its fields. Hermes Agent's dict shape of ``run_conversation`` is made from it
at the edge, in ``hermes.compat.agent``, and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes.state.context.message import Message

# Hermes Agent 0.19's answer to a turn interrupted while it waited for the model starts
# so; its tools (and hermes's gateway) tell such an answer by this start.
INTERRUPT_WAITING_FOR_MODEL_PREFIX = "Operation interrupted: waiting for model response ("
STOPPED_NOTE = "(stopped)"  # an interrupted turn that was not waiting for the model


def stopped_note(waited_for_model: float | None) -> str:
    """What an interrupted turn with no answer says: 0.19's sentence with the seconds it
    waited for the model, or hermes's short note when it was not waiting."""
    if waited_for_model is None:
        return STOPPED_NOTE
    return f"{INTERRUPT_WAITING_FOR_MODEL_PREFIX}{waited_for_model:.1f}s elapsed)."


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
    # Seconds the interrupted turn had waited for the model's answer when it stopped;
    # None when it was not interrupted during a model call.
    waited_for_model: float | None = None
