"""Splitting a reply into pieces no longer than a platform's message limit.

Cuts prefer a paragraph break, then a line break, then a space, and fall back to a
hard cut. A cut inside a fenced code block closes the fence in one piece and reopens
it (with its language) in the next, so every piece renders on its own.
"""

from __future__ import annotations

from collections.abc import Callable

Measure = Callable[[str], int]

_FENCE = "```"
# Never cut earlier than this share of the limit just to land on a nicer break.
_MIN_SHARE = 0.3


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units, the unit Telegram counts in."""
    return len(text.encode("utf-16-le")) // 2


def split_message(text: str, limit: int, measure: Measure = len) -> list[str]:
    """``text`` cut into pieces of at most ``limit`` (as ``measure`` counts); none empty."""
    if limit < 16:
        raise ValueError("a message limit below 16 characters cannot hold a closed code fence")
    text = text.strip("\n")
    pieces: list[str] = []
    reopen = ""
    while text:
        prefix = reopen + "\n" if reopen else ""
        text = prefix + text
        if measure(text) <= limit:
            pieces.append(text)
            break
        budget = _fit(text, limit - len(_FENCE) - 1, measure)
        # A cut must take more than the reopened fence line, or nothing would progress.
        cut = _best_cut(text, budget, floor=max(int(budget * _MIN_SHARE), len(prefix)))
        piece, text = text[:cut].rstrip(), text[cut:].lstrip("\n")
        reopen = _open_fence(piece)
        if len(reopen) + 1 > limit // 3:
            reopen = ""  # a fence line that long would crowd out the next piece
        if reopen:
            piece += "\n" + _FENCE
        pieces.append(piece)
    return [p for p in pieces if p.strip()]


def _fit(text: str, limit: int, measure: Measure) -> int:
    """The longest prefix length of ``text`` whose measure is within ``limit``."""
    if measure is len:
        return min(len(text), limit)
    low, high = 0, min(len(text), limit)
    while low < high:
        mid = (low + high + 1) // 2
        if measure(text[:mid]) <= limit:
            low = mid
        else:
            high = mid - 1
    return low


def _best_cut(text: str, budget: int, floor: int) -> int:
    window = text[:budget]
    for separator in ("\n\n", "\n", " "):
        at = window.rfind(separator)
        if at > floor:
            return at + len(separator)
    return max(budget, floor + 1)


def _open_fence(piece: str) -> str:
    """The opening fence line (e.g. '```python') if ``piece`` ends inside a code block."""
    opener = ""
    for line in piece.splitlines():
        stripped = line.strip()
        if stripped.startswith(_FENCE):
            language = stripped[len(_FENCE) :].split(maxsplit=1)
            opener = "" if opener else _FENCE + (language[0][:20] if language else "")
    return opener
