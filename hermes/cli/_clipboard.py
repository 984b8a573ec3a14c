"""Putting text on the clipboard of the terminal the chat runs in: OSC 52.

The terminal itself (xterm, kitty, iTerm2, WezTerm, Windows Terminal, tmux with
``set-clipboard on``...) takes the text, so it works over ssh and needs no clipboard
program; a terminal that does not support it ignores the sequence.
"""

from __future__ import annotations

import base64
import os
from typing import IO


def osc52(text: str) -> str:
    """The escape sequence that sets the clipboard to ``text`` (wrapped for tmux, which
    passes it on to the outer terminal only when asked to)."""
    payload = base64.b64encode(text.encode("utf-8")).decode("ascii")
    sequence = f"\x1b]52;c;{payload}\x07"
    if os.environ.get("TMUX"):
        sequence = "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return sequence


def copy(text: str, terminal: IO[str]) -> None:
    terminal.write(osc52(text))
    terminal.flush()
