"""Steering a running turn (``/steer``): text sent while a turn runs, which the turn
takes after its next tool results, before its next model call, as one user message
stored once.

The inbox is open only while a turn runs: ``steer`` on a closed inbox says no (False),
so the caller sends the text as an ordinary message and nothing waits unseen. What the
turn did not take (it answered without another tool call) comes back from ``close``
for the caller to send as the next turn, as Hermes Agent 0.19 does; an interrupt drops
it (0.19 too: the steer was for a step that will not happen).
"""

from __future__ import annotations

import threading


class SteeringInbox:
    """One agent's steering, shared by the thread that runs its turns and the ones
    that steer them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._texts: list[str] = []
        self._open = False

    @property
    def open(self) -> bool:
        """Whether a turn runs and takes steering now."""
        return self._open

    def steer(self, text: str) -> bool:
        """Hand ``text`` to the running turn; False when it is blank or no turn runs."""
        cleaned = text.strip()
        if not cleaned:
            return False
        with self._lock:
            if not self._open:
                return False
            self._texts.append(cleaned)
            return True

    def take(self) -> str | None:
        """What was sent since the last take, one text (newline-joined); None if nothing."""
        with self._lock:
            texts, self._texts = self._texts, []
        return "\n".join(texts) or None

    def drop(self) -> None:
        """Forget what waits (the turn was interrupted)."""
        with self._lock:
            self._texts = []

    def begin(self) -> None:
        """A turn starts: steering goes to it from now on."""
        with self._lock:
            self._open, self._texts = True, []

    def close(self) -> str | None:
        """The turn ends: no more steering; what it did not take, for the next turn."""
        with self._lock:
            self._open = False
            texts, self._texts = self._texts, []
        return "\n".join(texts) or None
