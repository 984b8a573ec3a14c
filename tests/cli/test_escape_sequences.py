"""Escape sequences in stored titles and messages are shown, never interpreted.

A title set through the API (or a message the model wrote) can hold terminal control
sequences: set the window title, clear the screen, rewrite a line. `sessions list`,
`show`, `search` and `lineage` print them as visible escapes (``\\x1b``), so no raw ESC
or BEL byte reaches the terminal.
"""

from __future__ import annotations

from hermes.state import SessionDB
from hermes.text import visible

TITLE = "Plans\x1b]0;pwned\x07\x1b[2J"
MESSAGE = "fine\x1b[1A\x1b[2Kall good \u202ereversed"


def test_stored_escape_sequences_are_printed_visibly(hermes, compressed):
    with SessionDB(db_path=compressed.db_path) as db:
        db.set_title(compressed.root, TITLE)
        db.append_message(compressed.tip, "assistant", MESSAGE)
    for args in (
        ("sessions", "list"),
        ("sessions", "show", compressed.root, "--no-pager"),
        ("sessions", "search", "fine"),
        ("sessions", "lineage", compressed.root),
    ):
        result = hermes(*args)
        assert result.returncode == 0, (args, result.stderr)
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout, args
        assert "\u202e" not in result.stdout, args
        assert "\\x1b" in result.stdout, args


def test_visible_keeps_text_and_layout() -> None:
    assert visible("line one\n\tline two — ünïcode") == "line one\n\tline two — ünïcode"
    assert visible("a\x1b[31mb\x9bc\x00") == "a\\x1b[31mb\\x9bc\\x00"
