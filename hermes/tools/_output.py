"""Cutting long command output down to size: keep the head and the tail, say what was cut.

The model sees the start of the output (what ran) and the end (how it finished); the
middle is replaced by ``... [N characters cut] ...`` so it knows something is missing.
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import BinaryIO

_CHUNK = 1 << 20


def cut_marker(count: int) -> str:
    return f"\n\n... [{count} characters cut] ...\n\n"


def cap_text(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its head and tail around a marker."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return text[:head] + cut_marker(len(text) - head - tail) + text[len(text) - tail :]


def read_capped(stream: BinaryIO, limit: int) -> str:
    """Decode a whole binary stream as UTF-8, keeping only head and tail beyond ``limit``.

    Reads in chunks so a command that printed gigabytes never sits in memory at once.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    head_size = limit // 2
    tail_size = limit - head_size
    head = ""
    tail = ""
    total = 0
    while True:
        chunk = stream.read(_CHUNK)
        text = decoder.decode(chunk, final=not chunk)
        total += len(text)
        if len(head) < head_size:
            take = head_size - len(head)
            head, text = head + text[:take], text[take:]
        tail = (tail + text)[-tail_size:] if tail_size else ""
        if not chunk:
            break
    if total <= limit:
        return head + tail
    return head + cut_marker(total - len(head) - len(tail)) + tail


def tail_lines(path: Path, lines: int, max_chars: int) -> str:
    """The last ``lines`` lines of a file, at most ``max_chars`` characters (head kept)."""
    if lines <= 0:
        return ""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return ""
    # Read backwards just far enough: enough bytes for the lines asked, bounded so a
    # log with one enormous line still costs little.
    budget = min(size, max(64 * 1024, max_chars * 4))
    with open(path, "rb") as handle:
        handle.seek(size - budget, os.SEEK_SET)
        data = handle.read(budget)
    text = data.decode("utf-8", errors="replace")
    picked = text.splitlines(keepends=True)
    if budget < size and picked:
        picked = picked[1:]  # the first line was probably entered mid-way
    return cap_text("".join(picked[-lines:]), max_chars)
