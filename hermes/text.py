"""Plain-text rendering shared by the commands: tables, times, one-line previews.

Deliberately free of rich, so listing commands start fast and pipe cleanly.
"""

from __future__ import annotations

import time
from collections.abc import Sequence


def when(timestamp: float | None, now: float | None = None) -> str:
    """A short local time: '14:05' today, 'Mar 03 14:05' this year, else the date."""
    if not timestamp:
        return "-"
    now = now or time.time()
    local, today = time.localtime(timestamp), time.localtime(now)
    if local[:3] == today[:3]:
        return time.strftime("%H:%M", local)
    if local.tm_year == today.tm_year:
        return time.strftime("%b %d %H:%M", local)
    return time.strftime("%Y-%m-%d", local)


def stamp(timestamp: float | None) -> str:
    """A full local time, for transcripts."""
    if not timestamp:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def one_line(text: str | None, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    cells = [[str(c) for c in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [c.ljust(w) for c, w in zip(row[:-1], widths[:-1], strict=True)]
        lines.append("  ".join([*padded, row[-1]]).rstrip())
    return "\n".join(lines)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def retry_note(number: int, of: int, delay: float, why: str) -> str:
    """'endpoint not answering (why), retry 2/5 in 4 s…': shown while a model call waits."""
    return f"endpoint not answering ({one_line(why, 60)}), retry {number}/{of} in {delay:.0f} s…"
