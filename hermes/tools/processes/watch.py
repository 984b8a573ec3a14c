"""Watch patterns: a line of a background process's output holding one of its patterns
tells the conversation, rate-limited as Hermes Agent 0.19's are.

Per process (``PatternWatch``): at most one notice every ``WATCH_MIN_INTERVAL_SECONDS``.
A match inside that interval is dropped and makes the interval a *strike* (one per
interval, however many matches it drops); the next notice says how many were dropped.
An interval without a drop clears the strikes. After ``WATCH_STRIKE_LIMIT`` strikes in a
row the patterns are switched off and the process is promoted to ``notify_on_complete``
(one message when it ends), said once in a ``watch_disabled`` notice.

Across the processes of one hermes process (``WatchLimits``): at most
``WATCH_GLOBAL_MAX_PER_WINDOW`` notices per ``WATCH_GLOBAL_WINDOW_SECONDS``; one more
trips a breaker that drops every match for ``WATCH_GLOBAL_COOLDOWN_SECONDS``, said once
when it trips (``watch_overflow_tripped``) and once when the first match after it gets
through (``watch_overflow_released``, with the count dropped).

Time comes from the limits' clock (monotonic; tests drive their own).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

WATCH_MIN_INTERVAL_SECONDS = 15  # the least time between two notices of one process
WATCH_STRIKE_LIMIT = 3  # strike intervals in a row before the patterns are switched off
WATCH_GLOBAL_MAX_PER_WINDOW = 15  # notices of all processes per window
WATCH_GLOBAL_WINDOW_SECONDS = 10
WATCH_GLOBAL_COOLDOWN_SECONDS = 30  # how long a tripped breaker drops every match

MATCHED_LINES_SHOWN = 20
MATCHED_CHARS_SHOWN = 2000

# The kinds of notice, as 0.19's completion_queue names them.
WATCH_MATCH = "watch_match"
WATCH_DISABLED = "watch_disabled"
OVERFLOW_TRIPPED = "watch_overflow_tripped"
OVERFLOW_RELEASED = "watch_overflow_released"

Clock = Callable[[], float]


@dataclass(frozen=True)
class Notice:
    """Something to tell the conversation about a watched process's output."""

    kind: str
    pattern: str | None = None
    output: str = ""
    suppressed: int = 0  # matches dropped since the previous notice (or during a flood)


@dataclass
class WatchLimits:
    """The rate limits shared by every watched process of one hermes process: the
    clock and the global breaker."""

    clock: Clock = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _window_start: float = 0.0
    _window_hits: int = 0
    _tripped_until: float = 0.0
    _dropped_while_tripped: int = 0

    def admit(self, now: float) -> tuple[bool, list[Notice]]:
        """Whether one more notice may go out at ``now``, and the breaker's own notices
        (it tripped, or it was released) to send first."""
        said: list[Notice] = []
        with self._lock:
            if self._tripped_until and now >= self._tripped_until:
                if self._dropped_while_tripped:
                    said.append(Notice(OVERFLOW_RELEASED, suppressed=self._dropped_while_tripped))
                self._tripped_until, self._dropped_while_tripped = 0.0, 0
                self._window_start, self._window_hits = now, 0
            if self._tripped_until:
                self._dropped_while_tripped += 1
                return False, said
            if now - self._window_start >= WATCH_GLOBAL_WINDOW_SECONDS:
                self._window_start, self._window_hits = now, 0
            if self._window_hits >= WATCH_GLOBAL_MAX_PER_WINDOW:
                self._tripped_until = now + WATCH_GLOBAL_COOLDOWN_SECONDS
                self._dropped_while_tripped += 1
                return False, [*said, Notice(OVERFLOW_TRIPPED)]
            self._window_hits += 1
            return True, said


LIMITS = WatchLimits()  # this hermes process's


class PatternWatch:
    """The patterns of one process and its per-process rate limit."""

    def __init__(self, patterns: Sequence[str], limits: WatchLimits | None = None) -> None:
        self.patterns = [p for p in patterns if p]
        self.limits = limits or LIMITS
        self.disabled = False
        self.hits = 0
        self._cooldown_until = 0.0
        self._dropped = 0
        self._strike_this_interval = False
        self._strikes = 0

    def feed(self, lines: Iterable[str]) -> list[Notice]:
        """The notices due for these new lines of output (oldest first)."""
        if self.disabled:
            return []
        matched: list[str] = []
        first: str | None = None
        for line in lines:
            pattern = next((p for p in self.patterns if p in line), None)
            if pattern is not None:
                matched.append(line.rstrip())
                first = first or pattern
        if not matched:
            return []
        now = self.limits.clock()
        if now < self._cooldown_until:
            return self._drop(len(matched))
        if self._cooldown_until and not self._strike_this_interval:
            self._strikes = 0  # a clean interval: back to a healthy pace
        self._strike_this_interval = False
        self._cooldown_until = now + WATCH_MIN_INTERVAL_SECONDS
        dropped, self._dropped = self._dropped, 0
        admitted, said = self.limits.admit(now)
        if not admitted:
            return said
        self.hits += 1
        output = "\n".join(matched[:MATCHED_LINES_SHOWN])
        if len(output) > MATCHED_CHARS_SHOWN:
            output = output[:MATCHED_CHARS_SHOWN] + "\n...(truncated)"
        return [*said, Notice(WATCH_MATCH, pattern=first, output=output, suppressed=dropped)]

    def _drop(self, count: int) -> list[Notice]:
        self._dropped += count
        if self._strike_this_interval:
            return []
        self._strike_this_interval = True
        self._strikes += 1
        if self._strikes < WATCH_STRIKE_LIMIT:
            return []
        self.disabled = True
        return [Notice(WATCH_DISABLED, suppressed=self._dropped)]


class LogLines:
    """The complete lines a growing log file gained since the last look, read a block
    at a time (a flood of output costs one block of memory per look)."""

    BLOCK = 1 << 20
    LONGEST_LINE = 64 * 1024  # a longer one is matched in pieces of this size

    def __init__(self, path: str) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""

    def new_lines(self) -> list[str]:
        """The lines of the next block (empty when nothing new is there)."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read(self.BLOCK)
        except FileNotFoundError:
            return []
        self._offset += len(chunk)
        *complete, self._partial = (self._partial + chunk).split(b"\n")
        if len(self._partial) > self.LONGEST_LINE:
            complete.append(self._partial)
            self._partial = b""
        return [line.decode("utf-8", errors="replace") for line in complete]

    def rest(self) -> list[str]:
        """The new lines of the next block and, once at the end, an unfinished last
        one (the process has ended); empty when all is read."""
        lines = self.new_lines()
        if not lines and self._partial:
            lines, self._partial = [self._partial.decode("utf-8", errors="replace")], b""
        return lines
