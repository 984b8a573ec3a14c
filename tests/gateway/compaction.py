"""Scripting compression through the fake model: its summary, and text that fills a
small context quickly."""

from __future__ import annotations

from typing import Any

SUMMARY = "Summary: the user shared numbered notes and started a build."
PADDING = "lorem ipsum dolor sit amet " * 22  # ~600 characters a message


def is_summary_request(body: dict[str, Any]) -> bool:
    first = (body.get("messages") or [{}])[0]
    return str(first.get("content", "")).startswith("You compact the history")
