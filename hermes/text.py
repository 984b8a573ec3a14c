"""Plain-text rendering shared by the commands: tables, times, one-line previews.

Deliberately free of rich, so listing commands start fast and pipe cleanly.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Sequence

# C0 controls but tab and newline, DEL, C1 controls (ESC and CSI start escape sequences),
# and the bidirectional overrides that reorder what a terminal shows.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with every terminal control character shown as an escape (``\\x1b``),
    never interpreted: text from the model, a tool or the store cannot move the cursor,
    rewrite a line, set the window title or hide what a prompt shows."""
    return _CONTROL.sub(_escape, text)


def well_formed(text: str) -> str:
    """``text`` as valid UTF-8: a lone surrogate (a JSON ``"\\ud800"``, a file name that
    is not UTF-8) is shown as ``\\udc..`` instead of failing the turn when stored or sent."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


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
    """``text`` on one line, cut to ``width`` terminal columns with an ellipsis."""
    flat = visible(" ".join((text or "").split()))
    if cells(flat) <= width:
        return flat
    cut, used = [], 0
    for char in flat:
        used += cells(char)
        if used > width - 1:
            break
        cut.append(char)
    return "".join(cut) + "…"


def cells(text: str) -> int:
    """How many terminal columns ``text`` takes: a CJK character or an emoji takes
    two, a combining accent none (``len`` would misalign a table's columns)."""
    return sum(_cell(char) for char in text)


def _cell(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    shown = [[visible(str(c)) for c in headers]]
    shown += [["" if c is None else visible(str(c)) for c in r] for r in rows]
    widths = [max(cells(row[i]) for row in shown) for i in range(len(headers))]
    lines = []
    for row in shown:
        padded = [c + " " * (w - cells(c)) for c, w in zip(row[:-1], widths[:-1], strict=True)]
        lines.append("  ".join([*padded, row[-1]]).rstrip())
    return "\n".join(lines)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def retry_note(number: int, of: int, delay: float, why: str) -> str:
    """'endpoint not answering (why), retry 2/5 in 4 s…': shown while a model call waits."""
    return f"endpoint not answering ({one_line(why, 60)}), retry {number}/{of} in {delay:.0f} s…"
