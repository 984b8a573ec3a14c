"""The anchor index as a summary message carries it: its header, its labelled lines, and
how to read it back (``parse``).

The agent writes it (``hermes.agent.anchors``: which strings, in which order, within
which cap); the store reads it to hold the rule that an anchor once shown to the model
stays shown (``dropped``): every anchor a segment's summaries showed is in its
compression child too, in the child's summary or in a row the child holds verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

# The first words of a compaction summary (the summariser writes it, as a user message).
SUMMARY_PREFIX = "[CONTEXT COMPACTION]"
INDEX_HEADER = "[ANCHORS]"
SEPARATOR = " · "

# Kinds, most distinctive first: when an index is over its cap, the later kinds go.
MASKED, ERROR, ID, PATH, URL, NUMBER, NAME = (
    "masked",
    "error",
    "id",
    "path",
    "url",
    "number",
    "name",
)
PRIORITY = (MASKED, ERROR, ID, PATH, URL, NUMBER, NAME)
# How each kind's line is labelled, in the order the lines are shown.
LABELS = {
    PATH: "files",
    ID: "commits and ids",
    URL: "urls",
    NUMBER: "numbers",
    NAME: "names",
    ERROR: "errors",
    MASKED: "masked tool outputs",
}

MASKED_ANCHOR = re.compile(r"recall\(message_id=(\d+)\)")


def is_summary_message(message: Mapping[str, Any]) -> bool:
    """True for a compaction summary the summariser wrote (it has the role ``user``)."""
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, str)
        and content.startswith(SUMMARY_PREFIX)
    )


def parse(summary: str) -> Iterator[tuple[str, str]]:
    """The anchors of the indexes a summary message carries (one per summary segment),
    in order; each index ends at the first line that is not one of its own."""
    kinds = {label: kind for kind, label in LABELS.items()}
    for block in summary.split(f"\n{INDEX_HEADER} ")[1:]:
        in_errors = False
        for line in block.splitlines()[1:]:
            label, _, rest = line.partition(": ")
            if in_errors and line.startswith("- "):
                yield ERROR, line[2:]
            elif line == f"{LABELS[ERROR]}:":
                in_errors = True
            elif label in kinds and rest:
                in_errors = False
                for text in rest.split(SEPARATOR):
                    if kinds[label] != MASKED or MASKED_ANCHOR.fullmatch(text):
                        yield kinds[label], text
            else:
                break


def dropped(shown: Iterable[str], child_texts: Iterable[str], child_origins: set[int]) -> list[str]:
    """The anchors of ``shown`` (a parent's summaries' contents) that its child no longer
    shows: in none of the child's texts, and (a masked output's id) not a row the child
    holds verbatim (``child_origins``). Empty when every way back is still there."""
    wanted = {
        text: kind
        for content in shown
        if content.startswith(SUMMARY_PREFIX)
        for kind, text in parse(content)
    }
    if not wanted:
        return []
    held = "\n".join(child_texts)
    missing = []
    for text, kind in wanted.items():
        if text in held:
            continue
        match = MASKED_ANCHOR.fullmatch(text) if kind == MASKED else None
        if match is not None and int(match.group(1)) in child_origins:
            continue  # the output itself is back in the context, verbatim
        missing.append(text)
    return missing
