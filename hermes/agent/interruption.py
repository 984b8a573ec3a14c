"""An agent's interrupt: set by the user (Ctrl-C, /stop, a cancelled run), read by the turn.

Setting it also stops the model client's stream at once; a running tool command watches
``event``; the turn checks ``requested`` at its safe points.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.agent.model.protocol import Model


class Interruption:
    """One agent's pending interrupt, shared with its model client."""

    def __init__(self, client: Model) -> None:
        self.client = client
        self.event = threading.Event()  # set while an interrupt is pending

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    def set(self) -> None:
        """Stop the running turn at the next safe point (a stream stops at once)."""
        self.event.set()
        self.client.interrupt()

    def clear(self) -> None:
        """Forget an interrupt that ended the last turn: a new turn starts clean."""
        self.event.clear()
        self.client.clear_interrupt()

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True if the turn was interrupted meanwhile."""
        return self.event.wait(seconds)
