"""One turn at a time per conversation, for every surface (docs/design.md, invariant 11).

Every ``AIAgent`` turn that writes the transcript holds the store's per-conversation
turn lock (``db.gateway.try_lock_turn``): a CLI, a library caller, the gateway and a
background-process event on one conversation, in one process or several, run their
turns one after another. The lock is exclusive between threads of one process too.
While another turn holds it the agent waits, polling with a short backoff, says so
once (the ``turn_waiting`` event) and can be interrupted. A caller that already holds
the lock for this turn (the gateway's lanes) marks the agent's binding with
``held_by_caller``.
The read-only review fork takes no lock.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from hermes.agent.errors import TurnInterrupted

if TYPE_CHECKING:
    from hermes.agent.binding import ConversationBinding
    from hermes.agent.host import TurnHost

log = logging.getLogger(__name__)

FIRST_POLL = 0.02  # seconds; doubled after each refusal
LAST_POLL = 0.5


@contextlib.contextmanager
def holding_turn(host: TurnHost) -> Iterator[None]:
    """Hold the conversation's turn lock for the body, waiting for it if need be."""
    binding = host.binding
    db, conversation = binding.session_db, binding.conversation_id
    if (
        binding.holds_turn_lock
        or not binding.writes_transcript
        or conversation is None
        or db is None
    ):
        yield
        return
    delay, told = FIRST_POLL, False
    while not db.gateway.try_lock_turn(conversation):
        if not told:
            log.info("conversation %s is running another turn; waiting", conversation)
            host.emit("turn_waiting", conversation_id=conversation)
            told = True
        if host.interruption.wait(delay):
            raise TurnInterrupted("Interrupted while waiting for another turn to finish.")
        delay = min(delay * 2, LAST_POLL)
    try:
        with binding.turn_lock_held():
            yield
    finally:
        try:
            db.gateway.unlock_turn(conversation)
        except Exception:  # at worst the lock goes with the process
            log.exception("could not give back the turn lock of %s", conversation)


@contextlib.contextmanager
def held_by_caller(binding: ConversationBinding) -> Iterator[None]:
    """The caller holds this conversation's turn lock around the agent's work."""
    with binding.turn_lock_held():
        yield
