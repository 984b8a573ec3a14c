"""The anchor index: exact strings from the messages a summary covers.

A summary paraphrases; an anchor never does. The index lists, verbatim, the strings a
later turn is most likely to need back exactly (file paths, commit hashes and ids, URLs,
issue and version numbers, error lines, identifiers), so the model can quote them and
hand one to the ``recall`` tool, which returns the stored messages that contain it.

Everything here is a pure function of the covered messages: the same rows always give
the byte-identical index (a provider's prompt cache keeps hitting), anchors are listed
in order of first appearance, each once, and the index is capped in size, keeping the
most distinctive kinds first. An earlier summary among the covered messages gives its own
index's anchors again (never its paraphrase), all of them and outside the cap: an anchor
once shown to the model is *carried* into every later index of the conversation
(append-only), so what was one ``recall`` away stays one ``recall`` away after any number
of compressions (the store checks it: ``anchor_index.dropped``). A masked tool output (a stub) gives
the stored id that brings it back, with the anchors listed after the stub
(``stub_digest``: what the summary model reads of an output it does not read whole).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hermes.state.context.anchor_index import (
    ERROR,
    ID,
    INDEX_HEADER,
    LABELS,
    MASKED,
    NAME,
    NUMBER,
    PATH,
    PRIORITY,
    SEPARATOR,
    SUMMARY_PREFIX,
    URL,
    is_summary_message,
    parse,
)
from hermes.state.context.message import Message

__all__ = [
    "INDEX_HEADER",
    "SUMMARY_PREFIX",
    "MAX_INDEX_CHARS",
    "MIN_INDEX_CHARS",
    "Anchor",
    "extract",
    "index_block",
    "is_summary_message",
    "parse",
    "render",
    "stub_digest",
    "words_only",
]

# About 400 tokens, enough for a few dozen anchors, or PER_MESSAGE_CHARS for each
# message covered when that is more (a summary of a hundred turns of tool work names a
# hundred files); an eighth of the covered text below that, so the index of a short
# middle stays a small share of its summary.
MAX_INDEX_CHARS = 1600
PER_MESSAGE_CHARS = 24
MIN_INDEX_CHARS = 480
COVERED_SHARE = 8
MAX_ANCHOR_CHARS = 160
LONG_ERROR_CHARS = 100  # an error line longer than this is cut to its error's sentence
MAX_ERROR_LINES = 8
MAX_DIGEST_CHARS = 600  # the anchors read with one masked tool output's stub

_URL = re.compile(r"\b(?:https?|ftp|wss?|file)://[^\s<>\"'`\])}]+")
_PATH = re.compile(r"(?<![\w~/.:@+-])(?:(?:~|\.{1,2})?(?:/[\w.@+-]+)+|[\w.@+-]+(?:/[\w.@+-]+)+)/?")
_EXTENSIONS = (
    "py|pyi|js|mjs|cjs|ts|tsx|jsx|json|jsonl|yaml|yml|toml|ini|cfg|conf|md|rst|txt|csv|"
    "tsv|log|sh|bash|zsh|ps1|go|rs|c|h|cc|cpp|hpp|java|kt|rb|php|cs|swift|sql|html|css|"
    "scss|xml|lock|env|db|sqlite|pem|key|crt|ipynb|tf|proto|gradle|mod|sum|patch|diff"
)
_FILE = re.compile(
    rf"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:{_EXTENSIONS})(?![\w.-]*\w)"
    r"|\b(?:Dockerfile|Makefile|Gemfile|Procfile|Justfile|Containerfile)\b"
)
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_HEX = re.compile(r"(?<![\w-])[0-9a-f]{7,64}(?![\w-])")
_NUMBERS = re.compile(
    r"(?<![\w&#])#\d+\b"  # issue or pull request
    r"|\b(?:PR|pr|issue|Issue|bug|Bug|ticket|Ticket)\s?#?\d+\b"
    r"|\b(?:localhost|\d{1,3}(?:\.\d{1,3}){3}):\d{2,5}\b"  # host:port
    r"|\bport\s\d{2,5}\b"
    r"|(?<![\w.])v?\d+(?:\.\d+){2,3}(?:[-+][0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?(?!\w|\.\w)"
    r"|\bv\d+\.\d+(?!\w|\.\w)"  # a version or an address
    r"|(?<![\w.#:-])\d{4,}(?!\w|\.\w)"  # an id
)
_YEAR = re.compile(r"(?:19|20)\d\d")
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w])")
# A word with an inner underscore or a capital after its first letter (checked further
# by _is_identifier): plain words never reach Python, which keeps long outputs quick.
_WORD = re.compile(r"(?<![\w])_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9_]*|[A-Z][A-Za-z0-9_]*)(?![\w])")
_ERROR = re.compile(
    r"\w*(?:Error|Exception)\b|\bTraceback\b|\bFAIL(?:ED)?\b|\bERROR\b|\bfailed\b|\bfatal:"
    r"|\bpanic:|Permission denied|No such file|command not found|Segmentation fault"
    r"|\bnot found\b|\brefused\b"
)
_GENERIC_ERRORS = {"Traceback (most recent call last):"}
_MASKED = re.compile(r"\[tool output masked: [^\]\n]*?recall\(message_id=(\d+)\)[^\]\n]*\]")
# What a tool says where it cut a long output (``hermes.tools._output.cut_marker``): the
# runtime's words, not the work's; its count would crowd the index's numbers.
_CUT_MARKER = re.compile(r"\.\.\. \[\d+ characters cut\] \.\.\.")


@dataclass(frozen=True)
class Anchor:
    """One exact string, its kind, and in how many covered messages it appears."""

    kind: str
    text: str
    first: int  # order of first appearance
    messages: int = 1
    said: bool = True  # first found outside a tool's output
    carried: bool = False  # from an earlier summary's index: always kept


def index_block(
    messages: Sequence[Message],
    *,
    recall: bool,
    new: bool = True,
    carry: Sequence[tuple[str, str]] = (),
) -> str:
    """The index for a summary of ``messages`` ('' when they hold no anchor); ``recall``
    says whether the model has the ``recall`` tool to bring an anchor's messages back.
    The anchors carried from an earlier summary among them are always listed; the new
    ones within a cap of their own, or not at all (``new=False``: a summary whose own
    index would outweigh what it saves still keeps what earlier summaries showed).
    ``carry``: more anchors (kind, text) to list as carried, before all others."""
    covered = sum(len(_text(m.get("content"))) for m in messages if not is_summary_message(m))
    most = max(MAX_INDEX_CHARS, PER_MESSAGE_CHARS * len(messages))
    cap = min(most, max(MIN_INDEX_CHARS, covered // COVERED_SHARE))
    found = extract(messages, carry)
    if not new:
        found = [a for a in found if a.carried]
        if not found:
            return ""
    return render(found, recall=recall, cap=cap)


def extract(messages: Sequence[Message], carry: Sequence[tuple[str, str]] = ()) -> list[Anchor]:
    """Every anchor of ``messages``, each once (its first kind), by first appearance;
    ``carry`` (kind, text) first, as carried anchors."""
    found: dict[str, Anchor] = {}
    for kind, text in carry:
        found.setdefault(text, Anchor(kind, text, len(found), carried=True))
    for message in messages:
        seen_here: set[str] = set()
        said = message.get("role") != "tool"
        carried = is_summary_message(message)
        for kind, text in _anchors_of(message):
            if kind == ERROR and len(text) > MAX_ANCHOR_CHARS:
                text = text[:MAX_ANCHOR_CHARS]  # a prefix is still a verbatim substring
            if not text or len(text) > MAX_ANCHOR_CHARS:
                continue
            known = found.get(text)
            if known is None:
                found[text] = Anchor(kind, text, len(found), said=said, carried=carried)
            elif text not in seen_here:
                found[text] = Anchor(
                    known.kind,
                    text,
                    known.first,
                    known.messages + 1,
                    known.said or said,
                    known.carried or carried,
                )
            seen_here.add(text)
    return list(found.values())


def render(anchors: Sequence[Anchor], *, recall: bool, cap: int = MAX_INDEX_CHARS) -> str:
    """The index as the summary message carries it: every carried anchor, and the new
    ones within ``cap`` characters."""
    kept = _within_cap(anchors, cap)
    if not kept:
        return _RECALL_ONLY if recall else ""
    lines = [_header(recall)]
    for kind in LABELS:
        texts = [a.text for a in kept if a.kind == kind]
        if not texts:
            continue
        if kind == ERROR:
            lines.append(f"{LABELS[kind]}:")
            lines.extend(f"- {text}" for text in texts)
        else:
            lines.append(f"{LABELS[kind]}: {SEPARATOR.join(texts)}")
    return "\n".join(lines)


def words_only(summary: str) -> str:
    """``summary`` (a summary's segments) without its anchor indexes: what the summary
    model reads of an earlier summary it continues. It writes only what the new messages
    add; their index is made here, and the earlier anchors are carried mechanically."""
    labels = {f"{label}:" for label in LABELS.values()}
    kept: list[str] = []
    in_index = False
    for line in summary.split("\n"):
        if line.startswith(f"{INDEX_HEADER} ") or line == _RECALL_ONLY:
            in_index = True
            continue
        label = line if line.endswith(":") else line.partition(": ")[0] + ":"
        if in_index and (label in labels or line.startswith("- ")):
            continue
        in_index = False
        kept.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()


def stub_digest(stub: str, message: Message, cap: int = MAX_DIGEST_CHARS) -> str:
    """What the summary model reads of a tool output it is not given whole: the stub
    the model is sent, then the output's own anchors (within ``cap`` characters), one
    line per kind, so the summary can name them and ``recall`` brings the output back."""
    found = [a for a in extract([message]) if a.kind != MASKED]
    lines = [stub]
    for kind in LABELS:
        texts = [a.text for a in _within_cap(found, cap) if a.kind == kind]
        if kind == ERROR and texts:
            lines += [f"{LABELS[kind]}:", *(f"- {text}" for text in texts)]
        elif texts:
            lines.append(f"{LABELS[kind]}: {SEPARATOR.join(texts)}")
    return "\n".join(lines)


def _header(recall: bool) -> str:
    text = f"{INDEX_HEADER} Exact strings from the compacted messages, never paraphrased."
    if recall:
        text += (
            ' Call recall(query="<any of them>") to get the original messages that contain'
            " it, verbatim, from any part of this conversation."
        )
    return text


_RECALL_ONLY = (
    'Call recall(query="<exact text>") to get the original messages of this conversation'
    " that contain some exact text, verbatim, from any part of it."
)


def _cost(anchor: Anchor) -> int:
    return len(anchor.text) + (3 if anchor.kind == ERROR else len(SEPARATOR))


def _within_cap(anchors: Sequence[Anchor], cap: int) -> list[Anchor]:
    """The most distinctive anchors that fit the cap, back in order of appearance.

    The kinds take turns, in ``PRIORITY`` order, so no kind crowds out the others (a
    directory listing's paths, the URL a user gave); within a kind, the more specific
    shapes go first (``_shape``), then a shorter anchor (more of them fit), then one
    said outside a tool's output (a tool output is also reached through its call's
    arguments and its stored id, what the user said only through its own words: of
    ten commit hashes, the user's five go first), then an earlier one. How often an
    anchor was mentioned does not count: what the work kept coming back to is what the
    summary's words keep, the rest is what they drop. At
    most ``MAX_ERROR_LINES`` new error lines per ``MAX_INDEX_CHARS`` of the cap. A
    carried anchor is always kept, outside the cap (an earlier summary showed it: it is
    never dropped)."""
    errors = max(MAX_ERROR_LINES, MAX_ERROR_LINES * cap // MAX_INDEX_CHARS)
    queues = [
        sorted(
            (a for a in anchors if a.kind == kind and not a.carried),
            key=lambda a: (_shape(a), len(a.text), not a.said, a.first),
        )[: errors if kind == ERROR else None]
        for kind in PRIORITY
    ]
    kept = [a for a in anchors if a.carried]
    used = 0
    while any(queues):
        for queue in queues:
            while queue:
                anchor = queue.pop(0)
                if used + _cost(anchor) <= cap:
                    used += _cost(anchor)
                    kept.append(anchor)
                    break
    return sorted(kept, key=lambda a: a.first)


def _shape(anchor: Anchor) -> int:
    """How specific an anchor's shape is, 0 the most: a path with a directory before a
    bare file name; a name mixing cases (``InvoiceWriter``) before a snake_case one or
    a dotted name of three parts, before a dotted pair (``os.path``, often just two
    words of prose)."""
    text = anchor.text
    if anchor.kind == PATH:
        return 0 if "/" in text else 1
    if anchor.kind == NAME:
        if any(c.isupper() for c in text) and any(c.islower() for c in text):
            return 0
        return 1 if "_" in text or text.count(".") > 1 else 2
    return 0


# --------------------------------------------------------------------------- finding


def _anchors_of(message: Message) -> Iterator[tuple[str, str]]:
    content = _text(message.get("content"))
    if is_summary_message(message):
        yield from parse(content)  # an earlier summary: its anchors, not its paraphrase
        return
    masked = _MASKED.search(content)
    if masked is not None:
        # A stub, and the anchors a stub digest lists after it (``stub_digest``).
        yield MASKED, f"recall(message_id={masked.group(1)})"
        rest = content[masked.end() :]
        yield from ((ERROR, line[2:]) for line in rest.splitlines() if line.startswith("- "))
        yield from _tokens(rest)
        return
    content = _CUT_MARKER.sub("...", content)
    if message.get("role") != "assistant":
        yield from _error_lines(content)
    yield from _tokens(content)
    for call in message.get("tool_calls") or []:
        function = (call.get("function") or {}) if isinstance(call, dict) else {}
        for value in _strings(function.get("arguments")):
            yield from _tokens(value)


def _error_lines(text: str) -> Iterator[tuple[str, str]]:
    """Lines that report an error; of a long one, the sentence from the word holding
    the first error word on (a message's prose around it is not the error)."""
    for raw in text.splitlines():
        line = raw.strip()
        found = _ERROR.search(line)
        if found is None or len(line) < 8 or line in _GENERIC_ERRORS:
            continue
        if len(line) > LONG_ERROR_CHARS:
            start = max(line.rfind(" ", 0, found.start()) + 1, 0)
            end = line.find(". ", found.end())  # the sentence the error is in
            line = line[start : end + 1 if end > 0 else None][:MAX_ANCHOR_CHARS]
            cut = line.rfind(" ")
            if len(line) == MAX_ANCHOR_CHARS and cut > MAX_ANCHOR_CHARS // 2:
                line = line[:cut]  # end on a whole word
        yield ERROR, line


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    """The single-token anchors of ``text`` in order of position; a string inside a
    longer anchor (a name inside a path) is not listed again on its own."""
    starts: list[int] = []  # the claimed spans, disjoint, sorted by start
    ends: list[int] = []
    found: list[tuple[int, int, str, str]] = []
    for rank, (kind, matches) in enumerate(_passes(text)):
        for start, end, token in matches:
            at = bisect.bisect_right(starts, start)
            if (at and ends[at - 1] > start) or (at < len(starts) and starts[at] < end):
                continue
            starts.insert(at, start)
            ends.insert(at, end)
            found.append((start, rank, kind, token))
    for _, _, kind, token in sorted(found):
        yield kind, token


def _passes(text: str) -> Iterator[tuple[str, Iterable[tuple[int, int, str]]]]:
    """Each kind's matches, the kinds that may hold the others first."""
    yield URL, _stripped(_URL.finditer(text), ".,;:!?'\"")
    yield PATH, (m for m in _stripped(_PATH.finditer(text), ".,;:") if _is_path(m[2]))
    yield PATH, _spans(_FILE.finditer(text))
    yield ID, _spans(_UUID.finditer(text))
    yield ID, (m for m in _spans(_HEX.finditer(text)) if _is_hash(m[2]))
    yield NUMBER, (m for m in _spans(_NUMBERS.finditer(text)) if not _YEAR.fullmatch(m[2]))
    yield NAME, (m for m in _spans(_DOTTED.finditer(text)) if _is_dotted(m[2]))
    yield NAME, (m for m in _spans(_WORD.finditer(text)) if _is_identifier(m[2]))


def _spans(matches: Iterable[re.Match[str]]) -> Iterator[tuple[int, int, str]]:
    for match in matches:
        yield match.start(), match.end(), match.group()


def _stripped(matches: Iterable[re.Match[str]], trailing: str) -> Iterator[tuple[int, int, str]]:
    for match in matches:
        token = match.group().rstrip(trailing)
        yield match.start(), match.start() + len(token), token


def _is_path(token: str) -> bool:
    if not any(c.isalpha() for c in token) or token.strip("/.~") == "":
        return False
    rooted = token.startswith(("/", "~/", "./", "../"))
    last = token.rstrip("/").rsplit("/", 1)[-1]
    return rooted or token.count("/") >= 2 or "." in last.strip(".")


def _is_hash(token: str) -> bool:
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def _is_dotted(token: str) -> bool:
    parts = token.split(".")
    return len(token) >= 5 and all(len(p) > 1 for p in parts) and max(map(len, parts)) >= 3


def _is_identifier(token: str) -> bool:
    """snake_case (an inner underscore) or CamelCase (lower and upper case after the
    first letter), at least four characters."""
    core = token.strip("_")
    if len(core) < 4 or not any(c.isalpha() for c in core):
        return False
    if "_" in core:
        return True
    return any(c.islower() for c in core) and any(c.isupper() for c in core[1:])


def _strings(arguments: Any) -> Iterator[str]:
    """The string values of a tool call's arguments (as the model sent them, decoded)."""
    if not isinstance(arguments, str):
        return
    try:
        value = json.loads(arguments)
    except ValueError:
        yield arguments
        return
    stack = [value]
    while stack:
        item = stack.pop(0)
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""
