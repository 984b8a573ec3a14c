"""The terminal chat hears its background processes finish.

A ``notify_on_complete`` process started by the chat's tools ends; its watcher thread
finds no event bus on the chat's agent and spools the completion event in the home
(``processes/events/``), exactly as before. The chat takes, from that spool, the events
addressed to its own conversation: before each prompt (so right after each turn) and,
while it waits at the prompt, by looking once a second (``Repl`` interrupts the prompt
when one is there).

Why the spool and no event bus: one path covers every way an event arrives (this
chat's watcher thread, a process that ended while no hermes process watched it, found
by ``background.refresh_all``, an earlier chat of the same conversation), the claim by
rename hands each event to exactly one taker, and an event the chat has no time for
(it is leaving) simply stays spooled for the next one. A bus subscriber would only be
a second, faster path for the first case, and would have to spool anyway when the chat
cannot take it.

Events of other conversations are never taken: they stay spooled for their own taker
(a gateway, hermes-webui, a later chat of that conversation).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hermes.redaction import redact
from hermes.text import one_line
from hermes.tools.processes import background, events
from hermes.tools.processes.events import CompletionEvent

if TYPE_CHECKING:
    from hermes.agent import AIAgent

log = logging.getLogger(__name__)


class ProcessNotices:
    """The completion events spooled for one chat's conversation."""

    def __init__(self, agent: AIAgent) -> None:
        self.agent = agent

    def waiting(self) -> bool:
        """Whether an event of this conversation is spooled (a look: nothing is taken).

        Safe from any thread; a failure is logged and counts as nothing waiting."""
        if self.agent.binding.conversation_id is None:
            return False
        try:
            background.refresh_all(self.agent.hermes_home)
            return any(self._mine(event) for event in events.spooled(self.agent.hermes_home))
        except Exception:
            log.exception("could not look for completion events")
            return False

    def take(self) -> list[CompletionEvent]:
        """Take this conversation's spooled events, oldest first (others stay spooled)."""
        if self.agent.binding.conversation_id is None:
            return []
        try:
            background.refresh_all(self.agent.hermes_home)
            return events.take_spooled(self.agent.hermes_home, wanted=self._mine)
        except Exception:
            log.exception("could not take completion events")
            return []

    def _mine(self, event: CompletionEvent) -> bool:
        """Addressed to this chat's conversation, following its segments as the gateway
        does (``GatewayRunner._address``): an event naming a segment of it is its own."""
        conversation = self.agent.binding.conversation_id
        if conversation is None or not event.conversation_id:
            return False
        if event.conversation_id == conversation:
            return True
        db = self.agent.binding.session_db
        segment = db.get_session(event.conversation_id) if db is not None else None
        return segment is not None and segment["conversation_id"] == conversation


def notice_line(event: CompletionEvent) -> str:
    """The one line the chat prints: process id, how it ended (exit code), command."""
    return one_line(redact(event.headline()), 200)
