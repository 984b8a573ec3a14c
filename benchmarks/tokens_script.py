"""The token benchmark's scripted conversation: the workspace files its tools read, the
user turns, the planted facts, and the fake models' answers.

Everything here is a pure function of the conversation's size, so two runtimes driven
through it get the same user turns, the same tool calls and the same answers: the
scripted main model reads only the turn marker of the newest user message and the ids of
that turn's tool results already present, never anything a runtime adds or rewrites.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hermes.testing.llm_server import Reply, content_text, text, tool_call

CHARS_PER_TOKEN = 4
USER_TOKENS = 300
ANSWER_TOKENS = 200
FILE_BYTES = 6_000  # a workspace file, ~1,500 tokens: tool output dominates, as in agent work
SUMMARY_TOKENS = 500  # the fake summary model's answer, whatever it is asked
SEED = 39

# The conversation's shapes. ``mixed``: tool calls on four turns of five, whose outputs
# dominate. ``sparse`` (issue #48's): one ``terminal`` call every 4th turn ``cat``-ing a
# 2-8 KB file, 42 facts planted in the early turns and inside those files.
MIXED, SPARSE = "mixed", "sparse"
SHAPES = (MIXED, SPARSE)
SPARSE_EVERY = 4
SPARSE_FILE_BYTES = 5_000  # the mean: files of 0.4x to 1.6x of it, 2-8 KB by default
SPARSE_PLANTING = 28  # turns with a planted fact: 28 in the user's words, 2 in each file
SPARSE_FILE_FACTS = 2

# The newest user message of a turn starts with this; the fake model keys on it.
TURN_MARK = re.compile(r"^\[turn (\d+)\]")
# Tool call ids the fake model gives: turn and step, so a step is known from the results.
CALL_ID = re.compile(r"^call_t(\d+)_s(\d+)$")

_VOCABULARY = (
    "ledger shard batch replica cursor window budget quota merge branch review patch "
    "release deploy rollback cache index schema column migration worker queue retry "
    "timeout handshake socket buffer stream parser config secret token session "
    "segment summary archive export import filter report metric latency throughput "
    "backlog owner holder lease clock drift offset partition checksum manifest bundle "
    "artifact pipeline runner stage job trigger cron tenant region cluster node pod "
    "volume"
)
_WORDS = tuple(_VOCABULARY.split())
# The words of the second topic, for a conversation that switches topic halfway.
_OTHER_VOCABULARY = (
    "invoice refund ledger tax vendor payroll audit receipt budget forecast margin "
    "customer contract renewal discount quote order shipment warehouse carrier parcel "
    "tariff customs supplier catalogue price stock reorder return claim dispute"
)
_OTHER_WORDS = tuple(_OTHER_VOCABULARY.split())


@dataclass(frozen=True)
class Family:
    """One conversation of the benchmark's family (``FAMILY``): issue #55's description
    with one thing changed. ``every``: a ``terminal`` call every Nth turn (0: none);
    ``user_tokens``: each user turn's size; ``file_bytes``: the files' mean size (0.4x to
    1.6x of it); ``json``: the files are JSON documents; ``switch``: the topic (words,
    folders) changes halfway; ``turns`` and ``window``: the run's defaults."""

    label: str
    every: int = 4
    user_tokens: int = 200
    file_bytes: int = 5_000
    json: bool = False
    switch: bool = False
    turns: int = 200
    window: int = 65_536


# Keyed by the name ``--shape`` takes; the first is issue #55's conversation as described.
FAMILY = {
    "every-4th": Family("tool output every 4th turn"),
    "every-turn": Family("tool output every turn", every=1),
    "no-tools": Family("no tool output", every=0),
    "long-turns": Family("2,000-token user turns", user_tokens=2_000),
    "window-32k": Family("32k window", window=32_768),
    "window-128k": Family("128k window", window=131_072),
    "outputs-50kb": Family("50 KB tool outputs", file_bytes=50_000),
    "json": Family("JSON tool outputs", json=True),
    "topic-switch": Family("a topic switch halfway", switch=True),
    "turns-500": Family("500 turns", turns=500),
}


@dataclass(frozen=True)
class Fact:
    """One planted fact: its exact text, its kind, where it was planted, and the anchors
    a model could look it up by (the fact's own tokens, then its container's handles)."""

    text: str
    kind: str
    turn: int
    where: str  # "user" or the path of the file whose tool output carries it
    anchors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Step:
    """One tool call of a turn."""

    tool: str
    arguments: dict[str, Any]


@dataclass
class Turn:
    number: int
    user: str
    steps: list[Step]
    answer: str


@dataclass
class Script:
    """The whole conversation: the turns, the files written, and the facts planted."""

    workspace: Path
    turns: list[Turn]
    facts: list[Fact] = field(default_factory=list)

    def reply(self, body: dict[str, Any]) -> Reply:
        """The scripted main model's answer to a request of any runtime."""
        messages = body.get("messages") or []
        number = current_turn(messages)
        if number is None or number >= len(self.turns):
            return text("Noted.")
        turn = self.turns[number]
        step = next_step(messages, number)
        if step < len(turn.steps):
            call = turn.steps[step]
            return tool_call(call.tool, call.arguments, id=f"call_t{number}_s{step}")
        return text(turn.answer)


def current_turn(messages: list[dict[str, Any]]) -> int | None:
    """The turn number of the newest user message that carries a turn mark."""
    for message in reversed(messages):
        if message.get("role") == "user":
            match = TURN_MARK.match(content_text(message.get("content")))
            if match:
                return int(match.group(1))
    return None


def next_step(messages: list[dict[str, Any]], number: int) -> int:
    """One past the newest step of turn ``number`` whose tool result is present."""
    done = -1
    for message in messages:
        if message.get("role") != "tool":
            continue
        match = CALL_ID.match(str(message.get("tool_call_id") or ""))
        if match and int(match.group(1)) == number:
            done = max(done, int(match.group(2)))
    return done + 1


def summary_text() -> str:
    """The fake summary model's answer: the same for every request, quoting nothing."""
    rng = random.Random(SEED * 7)
    body = _prose(rng, SUMMARY_TOKENS * CHARS_PER_TOKEN - 80)
    return "Summary of the earlier conversation (the user and the assistant worked on: " + body


# --------------------------------------------------------------------------- building


def build(
    workspace: Path, turns: int, *, file_bytes: int | None = None, shape: str = MIXED
) -> Script:
    """Write the workspace's files and return the script of ``turns`` user turns in
    ``shape``; ``file_bytes`` sizes the files (``mixed``: each; ``sparse``: the mean)."""
    if shape == SPARSE:
        return _build_sparse(workspace, turns, file_bytes or SPARSE_FILE_BYTES)
    if shape in FAMILY:
        member = FAMILY[shape]
        if file_bytes:
            member = replace(member, file_bytes=file_bytes)
        return _build_sparse(workspace, turns, member.file_bytes, member)
    file_bytes = file_bytes or FILE_BYTES
    rng = random.Random(SEED)
    workspace.mkdir(parents=True, exist_ok=True)
    planting = max(3, turns // 10)  # the early turns, where facts are planted
    facts: list[Fact] = []
    script = Script(workspace=workspace, turns=[], facts=facts)
    kinds = list(_FACT_MAKERS)
    for number in range(turns):
        plant = number < planting
        steps: list[Step] = []
        for index, (tool, path) in enumerate(_plan(workspace, number)):
            fact = None
            if plant:
                kind = kinds[(2 * number + 1 + index) % len(kinds)]
                handles = (str(path), f"call_t{number}_s{index}")
                fact = _make_fact(rng, kind, number, len(facts), str(path), handles)
                facts.append(fact)
            _write_file(rng, path, number, [fact] if fact else [], file_bytes)
            arguments = {"path": str(path)} if tool == "read_file" else {"command": f"cat {path}"}
            steps.append(Step(tool, arguments))
        user_fact = None
        if plant:
            kind = kinds[(2 * number) % len(kinds)]
            user_fact = _make_fact(rng, kind, number, len(facts), "user", ())
            facts.append(user_fact)
        user = _user_turn(rng, number, steps, user_fact)
        answer = _answer(rng, number)
        script.turns.append(Turn(number, user, steps, answer))
    return script


def _build_sparse(
    workspace: Path, turns: int, mean_bytes: int, family: Family | None = None
) -> Script:
    """Issue #48's conversation: a ``terminal`` call every 4th turn ``cat``-ing a file
    of 0.4x-1.6x ``mean_bytes``; a fact in each of the first 28 user turns and two in
    each file those turns read (42 in all at 200 turns). A ``family`` member changes
    one thing of it (``Family``)."""
    every = family.every if family else SPARSE_EVERY
    user_tokens = family.user_tokens if family else USER_TOKENS
    rng = random.Random(SEED + 1)
    workspace.mkdir(parents=True, exist_ok=True)
    planting = min(SPARSE_PLANTING, max(3, turns // 7))
    facts: list[Fact] = []
    script = Script(workspace=workspace, turns=[], facts=facts)
    kinds = list(_FACT_MAKERS)
    folders = (("logs", "run", ".log"), ("src", "module", ".py"), ("docs", "notes", ".md"))
    for number in range(turns):
        plant = number < planting
        steps: list[Step] = []
        switched = family is not None and family.switch and number >= turns // 2
        words = _OTHER_WORDS if switched else _WORDS
        if every and number % every == 0:
            folder, stem, suffix = folders[(number // every) % len(folders)]
            if family is not None and family.json:
                suffix = ".json"
            if switched:
                folder = f"billing/{folder}"
            path = workspace / folder / f"{stem}_{number:03d}{suffix}"
            planted = []
            for index in range(SPARSE_FILE_FACTS if plant else 0):
                kind = kinds[(number + 2 * index + 1) % len(kinds)]
                handles = (str(path), f"call_t{number}_s0")
                planted.append(_make_fact(rng, kind, number, len(facts), str(path), handles))
                facts.append(planted[-1])
            size = rng.randrange(mean_bytes * 2 // 5, mean_bytes * 8 // 5 + 1)
            _write_file(rng, path, number, planted, size, words)
            steps.append(Step("terminal", {"command": f"cat {path}"}))
        user_fact = None
        if plant:
            user_fact = _make_fact(rng, kinds[number % len(kinds)], number, len(facts), "user", ())
            facts.append(user_fact)
        user = _user_turn(rng, number, steps, user_fact, user_tokens, words)
        script.turns.append(Turn(number, user, steps, _answer(rng, number, words)))
    return script


def _plan(workspace: Path, number: int) -> list[tuple[str, Path]]:
    """The tool calls of turn ``number``: a rotation of reads, commands and plain chat."""
    kind = number % 5
    if kind == 0:
        return [("read_file", workspace / "src" / f"module_{number:03d}.py")]
    if kind == 1:
        return [("terminal", workspace / "logs" / f"run_{number:03d}.log")]
    if kind == 2:
        return [
            ("read_file", workspace / "src" / f"module_{number:03d}.py"),
            ("terminal", workspace / "logs" / f"run_{number:03d}.log"),
        ]
    if kind == 3:
        return []
    return [("read_file", workspace / "docs" / f"notes_{number:03d}.md")]


def _user_turn(
    rng: random.Random,
    number: int,
    steps: list[Step],
    fact: Fact | None,
    user_tokens: int = USER_TOKENS,
    words: tuple[str, ...] = _WORDS,
) -> str:
    asks = []
    for step in steps:
        if step.tool == "read_file":
            asks.append(f"Please read {step.arguments['path']} and tell me what it does.")
        else:
            asks.append(f"Run `{step.arguments['command']}` and look at the failures.")
    if not asks:
        asks.append("No tools this time: just think it through with me.")
    head = f"[turn {number}] " + " ".join(asks)
    if fact is not None:
        head += f" Keep this for later, we will need it exactly: {fact.text} ."
    return head + " " + _prose(rng, user_tokens * CHARS_PER_TOKEN - len(head), words)


def _answer(rng: random.Random, number: int, words: tuple[str, ...] = _WORDS) -> str:
    head = f"Done with turn {number}. "
    return head + _prose(rng, ANSWER_TOKENS * CHARS_PER_TOKEN - len(head), words)


def _write_file(
    rng: random.Random,
    path: Path,
    number: int,
    facts: list[Fact],
    file_bytes: int,
    words: tuple[str, ...] = _WORDS,
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    size = 0
    # The lines the facts go on, in order (the first drawn even without a fact, so the
    # mixed shape's files stay as they were).
    lines_at = [rng.randrange(5, 30)]
    lines_at += [rng.randrange(30 + 15 * i, 45 + 15 * i) for i in range(1, len(facts))]
    at = dict(zip(lines_at, facts, strict=False))
    if path.suffix == ".json":
        _write_json(rng, path, number, [at[k] for k in sorted(at)], file_bytes, words)
        return
    while size < file_bytes:
        if len(lines) in at:
            line = _fact_line(path, at[len(lines)])
        elif path.suffix == ".log":
            line = (
                f"2026-03-{1 + number % 28:02d} 12:{len(lines) % 60:02d}:{rng.randrange(60):02d}"
                f" INFO {rng.choice(words)}.{rng.choice(words)}: {_prose(rng, 60, words)}"
            )
        elif path.suffix == ".py":
            line = f"    {rng.choice(words)}_{rng.choice(words)} = {rng.choice(words)}({rng.randrange(100)})  # {_prose(rng, 30, words)}"
        else:
            line = _prose(rng, 70, words)
        lines.append(line)
        size += len(line) + 1
    lines += [_fact_line(path, fact) for where, fact in at.items() if where >= len(lines)]
    path.write_text("\n".join(lines) + "\n")


def _write_json(
    rng: random.Random,
    path: Path,
    number: int,
    facts: list[Fact],
    file_bytes: int,
    words: tuple[str, ...],
) -> None:
    """A JSON document of records, as an API or a tool's ``--json`` gives: the facts
    are values of early records (a fact's text is its field's value, verbatim)."""
    records: list[dict[str, Any]] = []
    size = 0
    while size < file_bytes or len(records) < 2 * len(facts) + 2:
        record: dict[str, Any] = {
            "id": f"{number:03d}-{len(records):04d}",
            "kind": rng.choice(words),
            "owner": f"{rng.choice(words)}_{rng.choice(words)}",
            "count": rng.randrange(1000),
            "note": _prose(rng, 50, words),
        }
        if len(records) % 2 == 1 and len(records) // 2 < len(facts):
            record["note"] = facts[len(records) // 2].text
        records.append(record)
        size += len(json.dumps(record)) + 4
    path.write_text(json.dumps({"items": records}, indent=1) + "\n")


def _fact_line(path: Path, fact: Fact) -> str:
    if path.suffix == ".log":
        return (
            fact.text
            if fact.kind == "error line"
            else f"2026-03-01 12:00:00 INFO note: {fact.text}"
        )
    if path.suffix == ".py":
        return f"    # see: {fact.text}"
    return f"Remember: {fact.text}"


def _prose(rng: random.Random, chars: int, vocabulary: tuple[str, ...] = _WORDS) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(vocabulary)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[: max(chars, 0)].rstrip() + "."


# --------------------------------------------------------------------------- facts


def _path_fact(rng: random.Random, index: int) -> str:
    return f"services/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{index}.py"


def _hash_fact(rng: random.Random, index: int) -> str:
    return f"{rng.getrandbits(160):040x}"


def _url_fact(rng: random.Random, index: int) -> str:
    return (
        f"https://ci.example.org/{rng.choice(_WORDS)}/builds/{rng.randrange(10_000, 99_999)}{index}"
    )


def _number_fact(rng: random.Random, index: int) -> str:
    return str(rng.randrange(1_000_000, 9_999_999) * 100 + index)


def _error_fact(rng: random.Random, index: int) -> str:
    return (
        f"ERROR {rng.choice(_WORDS)}.{rng.choice(_WORDS)}: checksum mismatch on shard"
        f" {rng.randrange(100, 999)} (code E{rng.randrange(1000, 9999)}{index})"
    )


def _identifier_fact(rng: random.Random, index: int) -> str:
    a, b = rng.choice(_WORDS), rng.choice(_WORDS)
    return f"{a}{b.capitalize()}Handler_v{index}"


_FACT_MAKERS = {
    "path": _path_fact,
    "commit hash": _hash_fact,
    "url": _url_fact,
    "number": _number_fact,
    "error line": _error_fact,
    "identifier": _identifier_fact,
}

# Anchor-like pieces of a fact a model might look it up by (what a mechanical anchor
# index extracts): URLs, paths, hex, long numbers, error codes, snake_case and dotted names.
_ANCHOR_PIECES = re.compile(
    r"https?://\S+|[\w.-]+/[\w./-]+|\b[0-9a-f]{7,40}\b|\b\d{4,}\b|\bE\d{4,}\b"
    r"|\b\w+_\w+\b|\b[A-Za-z_]\w*\.[A-Za-z_]\w*\b"
)


def _make_fact(
    rng: random.Random, kind: str, turn: int, index: int, where: str, handles: tuple[str, ...]
) -> Fact:
    value = _FACT_MAKERS[kind](rng, index)
    pieces = [p for p in _ANCHOR_PIECES.findall(value) if p != value]
    anchors = tuple(dict.fromkeys([value, *pieces, *handles]))
    return Fact(text=value, kind=kind, turn=turn, where=where, anchors=anchors)
