"""Replies are split to each platform's limit without losing a character of content."""

from __future__ import annotations

import random

import pytest

from hermes.gateway.split import split_message, utf16_length


def squeeze(text: str) -> str:
    return "".join(text.split())


def test_short_text_is_one_piece() -> None:
    assert split_message("hello", 100) == ["hello"]
    assert split_message("", 100) == []


def test_prefers_paragraph_then_line_then_word_breaks() -> None:
    text = "first paragraph here.\n\nsecond one is a bit longer than that."
    assert split_message(text, 40) == [
        "first paragraph here.",
        "second one is a bit longer than that.",
    ]
    assert split_message("aaa bbb ccc ddd eee fff", 20) == ["aaa bbb ccc ddd", "eee fff"]


def test_hard_cut_when_no_break_exists() -> None:
    pieces = split_message("x" * 100, 30)
    assert all(len(p) <= 30 for p in pieces)
    assert "".join(pieces) == "x" * 100


def test_code_fence_is_closed_and_reopened() -> None:
    code = "\n".join(f"print({i})" for i in range(60))
    pieces = split_message(f"Here:\n```python\n{code}\n```\nDone.", 200)
    assert len(pieces) > 2
    for piece in pieces:
        assert len(piece) <= 200
        assert piece.count("```") % 2 == 0, piece
    assert pieces[1].startswith("```python\n")


@pytest.mark.parametrize("limit", [16, 50, 2000])
def test_random_texts_fit_and_keep_their_content(limit: int) -> None:
    rng = random.Random(limit)
    for _ in range(200):
        text = "".join(rng.choice("ab \n.é") for _ in range(rng.randint(0, 5000)))
        pieces = split_message(text, limit)
        assert all(0 < len(p) <= limit for p in pieces)
        assert squeeze("".join(pieces)) == squeeze(text)


def test_telegram_counts_utf16_units() -> None:
    text = "😀" * 3000  # 6000 UTF-16 units, 3000 code points
    pieces = split_message(text, 4096, utf16_length)
    assert all(utf16_length(p) <= 4096 for p in pieces)
    assert "".join(pieces) == text
