"""What the token benchmark reads off the requests a runtime sent: tokens to the main and
the summary model, uncached tokens, the largest request, compressions, and the share of
planted facts still within reach after each compression.

One estimate serves both runtimes: characters / 4 of each request's text (the tool
schemas, then each message's role, content, tool calls and tool call id), the figure
hermes's own ``hermes.agent.tokens`` uses. A request's *uncached* tokens are those past
its longest common prefix with the previous main-model request (the part a provider's
prompt cache could not have served). Each uncached token is put down to one source
(``SOURCES``): new content (a message no earlier request held: the floor, what every
request must add once), a summary written or rewritten, a tool output replaced by its
stub or placeholder (masking), the tail (messages sent before, re-sent after the point
where the request departs from the previous one), and the system prompt and tool schemas.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.tokens_script import CHARS_PER_TOKEN, Fact, current_turn
from hermes.testing.llm_server import content_text, context_problems

# A summary request: no tools offered, and it asks for a summary or a compaction.
_SUMMARY_ASK = re.compile(r"summar|compact|checkpoint|condense", re.IGNORECASE)
# A summary message in a main-model request (hermes's and 0.19's prefixes).
_SUMMARY_MESSAGE = re.compile(r"^\[CONTEXT (?:COMPACTION|SUMMARY)")

NEW, SUMMARY, MASKING, TAIL, SYSTEM = "new content", "summary", "masking", "tail", "system"
SOURCES = (NEW, SUMMARY, MASKING, TAIL, SYSTEM)

Lookup = Callable[[str], str]


def kind_of(body: dict[str, Any]) -> str:
    """``main`` (tools offered: the agent's turn), ``summary`` or ``other``."""
    if body.get("tools"):
        return "main"
    texts = [content_text(m.get("content")) for m in (body.get("messages") or [])[:2]]
    return "summary" if any(_SUMMARY_ASK.search(t) for t in texts) else "other"


def pieces(body: dict[str, Any]) -> list[str]:
    """The request as the text a prompt cache sees, one piece for the tool schemas and
    one per message, in order."""
    tools = body.get("tools")
    head = json.dumps(tools, separators=(",", ":"), ensure_ascii=False) if tools else ""
    return [head, *(_piece(m) for m in body.get("messages") or [])]


def tokens(chars: int) -> int:
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def request_tokens(body: dict[str, Any]) -> int:
    return tokens(sum(len(p) for p in pieces(body)))


def common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    """Characters of the longest common prefix of two requests' pieces, joined."""
    shared = 0
    for left, right in zip(a, b, strict=False):
        if left == right:
            shared += len(left)
            continue
        return shared + len(os.path.commonprefix([left, right]))
    return shared


@dataclass
class Recall:
    """Planted facts within reach right after one compression."""

    compression: int
    planted: int
    verbatim: int
    by_lookup: int
    lookups: int
    missed: dict[str, int] = field(default_factory=dict)  # facts out of reach, by kind
    lost: list[str] = field(default_factory=list)  # those facts, "kind (turn N, where)"

    @property
    def within(self) -> int:
        return self.verbatim + self.by_lookup

    @property
    def share(self) -> float:
        return 100.0 * self.within / self.planted if self.planted else 100.0


@dataclass
class Figures:
    """One runtime's figures for the whole conversation."""

    main_requests: int = 0
    main_tokens: int = 0
    summary_requests: int = 0
    summary_tokens: int = 0
    other_requests: int = 0
    other_tokens: int = 0
    uncached_tokens: int = 0
    uncached_chars: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))
    largest: int = 0
    compressions: int = 0
    runtime_compressions: int | None = None
    failed_turns: int = 0
    invalid_requests: int = 0  # main-model requests a provider would refuse
    recall: list[Recall] = field(default_factory=list)
    end: Recall | None = None  # the same at the conversation's last main-model request
    lookups_available: bool = False

    @property
    def worst(self) -> Recall | None:
        """The point (a compression or the end) with the fewest facts within reach."""
        points = [*self.recall, *([self.end] if self.end else [])]
        return min(points, key=lambda r: r.share) if points else None

    @property
    def uncached_by_source(self) -> dict[str, int]:
        """The uncached tokens, by where they came from (``SOURCES``)."""
        return {source: tokens(chars) for source, chars in self.uncached_chars.items()}

    @property
    def total_tokens(self) -> int:
        """Prompt tokens to every model: the main one and the summary model."""
        return self.main_tokens + self.summary_tokens

    @property
    def billed_tokens(self) -> int:
        """Main-model tokens with a prompt cache that bills cached tokens at 10 %."""
        return self.uncached_tokens + (self.main_tokens - self.uncached_tokens) // 10

    def as_dict(self) -> dict[str, Any]:
        data = {
            k: v for k, v in self.__dict__.items() if k not in ("recall", "end", "uncached_chars")
        }
        data["uncached_by_source"] = self.uncached_by_source
        data["billed_tokens"] = self.billed_tokens
        data["total_tokens"] = self.total_tokens
        data["recall"] = [{**r.__dict__, "share": round(r.share, 1)} for r in self.recall]
        data["end"] = {**self.end.__dict__, "share": round(self.end.share, 1)} if self.end else None
        data["recall_mean"] = self.recall_mean
        data["recall_min"] = self.recall_min
        return data

    @property
    def recall_mean(self) -> float | None:
        return (
            round(sum(r.share for r in self.recall) / len(self.recall), 1) if self.recall else None
        )

    @property
    def recall_min(self) -> float | None:
        return round(min(r.share for r in self.recall), 1) if self.recall else None


@dataclass
class _Compression:
    after: dict[str, Any]  # the first main-model request after the summary call(s)
    seen: set[str]  # the facts some earlier main-model request held


def measure(
    requests: Sequence[dict[str, Any]], facts: Sequence[Fact], lookup: Lookup | None = None
) -> Figures:
    """The figures of one runtime from the request bodies it sent, in order. ``lookup``
    is one ``recall`` call (anchor -> its result), or None when the runtime has none."""
    figures = Figures(lookups_available=lookup is not None)
    previous: list[str] | None = None
    previous_body: dict[str, Any] | None = None
    seen: set[str] = set()
    summarising = False
    compressions: list[_Compression] = []
    waiting = False
    last: dict[str, Any] | None = None
    for body in requests:
        kind = kind_of(body)
        size = request_tokens(body)
        if kind == "summary":
            figures.summary_requests += 1
            figures.summary_tokens += size
            if not summarising:
                figures.compressions += 1
                summarising = waiting = True
            continue
        if kind == "other":
            figures.other_requests += 1
            figures.other_tokens += size
            continue
        summarising = False
        current = pieces(body)
        shared = common_prefix(previous, current) if previous is not None else 0
        figures.main_requests += 1
        figures.main_tokens += size
        figures.uncached_tokens += tokens(sum(len(p) for p in current) - shared)
        for source, chars in uncached_sources(previous_body, body, previous, current, shared):
            figures.uncached_chars[source] += chars
        figures.largest = max(figures.largest, size)
        figures.invalid_requests += bool(context_problems(body.get("messages")))
        if waiting:
            compressions.append(_Compression(after=body, seen=set(seen)))
            waiting = False
        _note_facts(body, current, shared, facts, seen)
        previous, previous_body, last = current, body, body
    for number, point in enumerate(compressions, 1):
        figures.recall.append(_recall(number, point, facts, lookup))
    if last is not None and compressions:
        figures.end = _recall(0, _Compression(after=last, seen=set(seen)), facts, lookup)
    return figures


def uncached_sources(
    previous_body: dict[str, Any] | None,
    body: dict[str, Any],
    previous: Sequence[str] | None,
    current: Sequence[str],
    shared: int,
) -> Iterator[tuple[str, int]]:
    """(source, characters) for each piece of a request past its shared prefix."""
    sent_before = set(previous or ())
    outputs_before = {
        m.get("tool_call_id"): _piece(m)
        for m in (previous_body or {}).get("messages") or []
        if m.get("role") == "tool"
    }
    messages = body.get("messages") or []
    offset = 0
    for index, piece in enumerate(current):
        past = len(piece) - max(0, min(len(piece), shared - offset))
        offset += len(piece)
        if past <= 0:
            continue
        message = messages[index - 1] if index else {}
        yield _source(message, piece, index, sent_before, outputs_before), past


def _source(
    message: dict[str, Any],
    piece: str,
    index: int,
    sent_before: set[str],
    outputs_before: dict[Any, str],
) -> str:
    if index == 0 or message.get("role") == "system":
        return SYSTEM
    if piece in sent_before:
        return TAIL
    if _SUMMARY_MESSAGE.match(content_text(message.get("content"))):
        return SUMMARY
    if message.get("role") == "tool" and message.get("tool_call_id") in outputs_before:
        return MASKING
    return NEW


def _note_facts(
    body: dict[str, Any], current: list[str], shared: int, facts: Sequence[Fact], seen: set[str]
) -> None:
    """Add to ``seen`` the facts this request holds: only its new part can hold one not
    seen before, and only facts of turns up to the request's own."""
    turn = current_turn(body.get("messages") or [])
    waiting = [f for f in facts if f.text not in seen and (turn is None or f.turn <= turn)]
    if not waiting:
        return
    new = "".join(current)[shared:]
    seen.update(f.text for f in waiting if f.text in new)


def _recall(
    number: int, point: _Compression, facts: Sequence[Fact], lookup: Lookup | None
) -> Recall:
    request = "".join(pieces(point.after))
    planted = [f for f in facts if f.text in point.seen]
    verbatim = by_lookup = lookups = 0
    missed: dict[str, int] = {}
    lost: list[str] = []
    for fact in planted:
        if fact.text in request:
            verbatim += 1
            continue
        anchor = None
        if lookup is not None:
            anchor = next((a for a in fact.anchors if len(a) >= 4 and a in request), None)
        if anchor is not None:
            lookups += 1
            if fact.text in lookup(anchor):
                by_lookup += 1
                continue
        missed[fact.kind] = missed.get(fact.kind, 0) + 1
        lost.append(
            f"{fact.kind} (turn {fact.turn}, {'said' if fact.where == 'user' else 'in a file'})"
        )
    return Recall(number, len(planted), verbatim, by_lookup, lookups, missed, lost)


def _piece(message: dict[str, Any]) -> str:
    parts = [str(message.get("role") or ""), content_text(message.get("content"))]
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts += [str(call.get("id") or ""), str(function.get("name") or "")]
        parts.append(str(function.get("arguments") or ""))
    if message.get("tool_call_id"):
        parts.append(str(message["tool_call_id"]))
    return "\n".join(parts) + "\n"
