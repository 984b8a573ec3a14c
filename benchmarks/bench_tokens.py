"""Tokens and recall: one scripted agent conversation through hermes and Hermes Agent 0.19.

The conversation (``benchmarks/tokens_script.py``) has 200 user turns by default, each
~300 tokens, answered in ~200 tokens, and most turns make tool calls whose outputs
dominate, as in real agent work: the scripted model reads files (``read_file``, ~6 KB
each, written to a temporary workspace) or runs ``cat`` on logs (``terminal``). The main
model has a 64k context window. Both runtimes talk over loopback to the same fake
OpenAI-compatible server (``hermes/testing/llm_server.py``), whose answers depend only on
the turn's user text and the tool results already present, never on the runtime; it
records every request body. Requests offering tools are the main model's; the others
asking for a summary are the summary model's (it always answers the same ~500 tokens).
``--shape sparse`` runs issue #48's conversation instead: one ``terminal`` call every
4th turn ``cat``-ing a 2-8 KB file, 42 facts planted in the first 28 user turns and in
the files they read.

- **hermes** at its defaults: ``run_agent.AIAgent`` in this process, a real SQLite
  store in a temporary HERMES_HOME (config: the window, and no background review).
- **Hermes Agent 0.19** at its defaults, when its venv exists (``--hermes-agent-python``,
  default ``/tmp/hermes-agent-0.19.0-venv/bin/python``): its own ``run_agent.AIAgent``
  in a subprocess of that venv (``benchmarks/tokens_hermes_agent.py``), its own
  HERMES_HOME and config.yaml (custom provider at the fake server, the window, no
  skill/memory nudges), each turn sent as its CLI sends it.

Figures per runtime, and hermes/0.19 ratios: prompt tokens sent to the main model and to
the summary model (characters / 4 of each request: tool schemas and messages, one
estimate for both), uncached tokens (per main-model request, the tokens past its longest
common prefix with the previous one, summed), the main tokens billed when cached ones
cost 10 %, the largest request, compressions (runs of summary requests), requests a
provider would refuse (``context_problems`` of the fake server), and recall:
facts planted in the early turns' user messages and tool outputs (paths, commit hashes,
URLs, numbers, error lines, identifiers); after each compression, the share of the facts
sent so far that is verbatim in the next main-model request, or returned verbatim by one
call of hermes's ``recall`` tool (through its tool registry) on an anchor of the fact
present in that request; the same at the conversation's last request (the end), and
the worst of those points as "n/N" facts. Without a ``recall`` tool only verbatim
presence counts; 0.19 gets the verbatim share only. The uncached tokens are also put
down to their sources (``tokens_measure.SOURCES``): new content (the floor: what every
request must add once), a summary written, tool outputs masked, messages re-sent after
the point where a request departs from the previous one (the tail), and the system
prompt and tool schemas.

``--family`` runs issue #55's family of conversations (``tokens_script.FAMILY``: its
description, 200 turns of ~200 tokens, a 64k window, a ``terminal`` call every 4th turn
reading a 2-8 KB file, with one thing changed each: tool output every turn or none,
2,000-token user turns, a 32k or 128k window, 50 KB or JSON outputs, a topic switch,
500 turns), each beside 0.19, then one table with each conversation's targets (total
<= 0.5x, uncached <= 0.75x, every fact within reach at every compression). 0.19 refuses
a window under 64k; for the 32k conversation its driver lifts that check only.

    python -m benchmarks.bench_tokens                    # 200 turns, both runtimes
    python -m benchmarks.bench_tokens --shape sparse     # issue #48's conversation
    python -m benchmarks.bench_tokens --family           # issue #55's family, each beside 0.19
    python -m benchmarks.bench_tokens --family --quick   # the same, a quarter of the turns
    python -m benchmarks.bench_tokens --shape json       # one of the family, at its size
    python -m benchmarks.bench_tokens --turns 40 --json
    python -m benchmarks --only tokens --tokens-turns 40 # the same, from the runner
    python -m benchmarks.bench_tokens --hermes-set compression.threshold=0.85

``--hermes-set KEY=VALUE`` (repeatable) adds a setting to hermes's config.yaml for the
run, to tune compression against 0.19 at its defaults; ``--file-kb`` sizes the files.

Summary *quality* needs a real model: ``--base-url URL --model NAME`` (key from
``--api-key`` or $HERMES_API_KEY / $OPENAI_API_KEY) runs the hermes side against it,
through the recording server (which then forwards every request): the user turns stay
scripted, the answers, tool calls and summaries are the real model's. The 0.19 column is
not run then.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmarks import tokens_script
from benchmarks.tokens_measure import (
    SOURCES,
    Figures,
    Lookup,
    kind_of,
    measure,
    request_tokens,
)
from benchmarks.tokens_script import Script

DEFAULT_TURNS = 200
DEFAULT_WINDOW = 65_536
HERMES_AGENT_PYTHON = Path("/tmp/hermes-agent-0.19.0-venv/bin/python")
FAKE_MODEL = "fake-model"
DRIVER = Path(__file__).with_name("tokens_hermes_agent.py")
HERMES, HERMES_AGENT = "hermes", "hermes-agent 0.19"


@dataclass
class Comparison:
    turns: int
    window: int
    file_bytes: int
    shape: str = tokens_script.MIXED
    columns: dict[str, Figures] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # runtime -> why not run
    model: str = FAKE_MODEL
    settings: dict[str, Any] = field(default_factory=dict)  # hermes's --hermes-set


# --------------------------------------------------------------------------- the models


class Models:
    """The fake server's responder: the scripted main model and summary model, or a
    forwarder to a real model (``--base-url``)."""

    def __init__(self, script: Script, real: Any = None, real_model: str | None = None) -> None:
        self.script = script
        self.real = real
        self.real_model = real_model
        self.summary = tokens_script.summary_text()

    def __call__(self, body: dict[str, Any]) -> Any:
        from hermes.testing.llm_server import text

        if self.real is not None:
            return self._forward(body)
        kind = kind_of(body)
        if kind == "main":
            # The usage a provider would report: what the request holds, tools included.
            return replace(self.script.reply(body), prompt_tokens=request_tokens(body))
        if kind == "summary":
            return text(self.summary, prompt_tokens=request_tokens(body))
        return text("OK.")

    def _forward(self, body: dict[str, Any]) -> Any:
        import openai

        from hermes.testing.llm_server import FakeToolCall, Reply, server_error

        wanted = ("messages", "tools", "tool_choice", "temperature", "max_tokens")
        sent = {k: body[k] for k in wanted if k in body}
        try:
            response = self.real.chat.completions.create(model=self.real_model, **sent)
        except openai.OpenAIError as exc:  # the runtime sees a provider error, as it would
            print(f"bench_tokens: the real model failed: {exc}", file=sys.stderr)
            return server_error(502)
        message = response.choices[0].message
        calls = tuple(
            FakeToolCall(c.function.name, c.function.arguments or "{}", c.id)
            for c in message.tool_calls or []
        )
        usage = response.usage
        return Reply(
            content=message.content,
            tool_calls=calls,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
        )


# --------------------------------------------------------------------------- hermes


@contextlib.contextmanager
def _hermes_home(home: Path) -> Iterator[None]:
    before = os.environ.get("HERMES_HOME")
    os.environ["HERMES_HOME"] = str(home)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("HERMES_HOME", None)
        else:
            os.environ["HERMES_HOME"] = before


def hermes_config(window: int, settings: dict[str, Any] | None = None) -> str:
    """hermes's config.yaml for the run: the window, no background review (its forks are
    other conversations), then ``settings`` (dotted keys, ``--hermes-set``)."""
    import yaml

    values: dict[str, Any] = {"model.context_length": window, "agent.review_interval": 0}
    values.update(settings or {})
    nested: dict[str, Any] = {}
    for key, value in values.items():
        *parents, last = key.split(".")
        node = nested
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return str(yaml.safe_dump(nested, sort_keys=True))


def run_hermes(
    script: Script,
    server: Any,
    home: Path,
    window: int,
    model: str,
    api_key: str,
    settings: dict[str, Any] | None = None,
) -> Figures:
    """Drive hermes's ``AIAgent`` through the script; its figures, recall included."""
    from hermes.errors import HermesError
    from run_agent import AIAgent

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(hermes_config(window, settings))
    with _hermes_home(home):
        from hermes.config import load_config
        from hermes_state import SessionDB

        db = SessionDB(db_path=home / "state.db")
        try:
            agent = AIAgent(
                api_key=api_key,
                base_url=server.url,
                model=model,
                quiet_mode=True,
                session_db=db,
                skip_context_files=True,
                skip_memory=True,
                config=load_config(),
                cwd=script.workspace,
            )
            failed = rotations = 0
            for turn in script.turns:
                try:
                    result = agent.run_conversation(turn.user)
                except HermesError as exc:
                    print(f"hermes: turn {turn.number} failed: {exc}", file=sys.stderr)
                    failed += 1
                    continue
                rotations += len(result.get("compressions") or [])
                failed += not result.get("final_response")
            figures = measure(server.requests, script.facts, _recall_lookup(agent, db, home))
            figures.failed_turns = failed
            figures.runtime_compressions = rotations
        finally:
            db.close()
    return figures


def _recall_lookup(agent: Any, db: Any, home: Path) -> Lookup | None:
    """One call of hermes's ``recall`` tool through its registry, or None without one."""
    registry = agent.registry
    if registry.get("recall") is None:
        return None
    from hermes.tools.registry import ToolContext

    context = ToolContext(
        session_db=db,
        session_id=agent.session_id,
        conversation_id=agent.conversation_id,
        hermes_home=home,
        config=agent.config,
        cwd=agent.cwd,
    )

    def lookup(anchor: str) -> str:
        return str(registry.dispatch("recall", {"query": anchor}, context))

    return lookup


# --------------------------------------------------------------------------- 0.19


def run_hermes_agent(script: Script, server: Any, home: Path, window: int, python: Path) -> Figures:
    """Drive Hermes Agent 0.19's ``AIAgent`` (a subprocess of its venv) through the script."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        "model:\n"
        f"  default: {FAKE_MODEL}\n"
        "  provider: custom\n"
        f"  base_url: {server.url}\n"
        f"  context_length: {window}\n"
        # Its background skill/memory reviews are extra conversations, off like hermes's.
        "skills:\n  creation_nudge_interval: 0\n"
        "memory:\n  memory_enabled: false\n  user_profile_enabled: false\n"
    )
    spec = home / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "base_url": server.url,
                "model": FAKE_MODEL,
                "turns": [t.user for t in script.turns],
                "window": window,
            }
        )
    )
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("HERMES_", "PYTHON"))
    }
    env.update(
        HERMES_HOME=str(home),
        TERMINAL_CWD=str(script.workspace),
        HERMES_DISABLE_LAZY_INSTALLS="1",
    )
    # -I: nothing of this checkout (its run_agent.py, hermes_state.py) on 0.19's path.
    done = subprocess.run(
        [str(python), "-I", str(DRIVER), str(spec)],
        cwd=script.workspace,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"Hermes Agent 0.19 exited with {done.returncode}: {done.stderr.strip()[-2000:]}"
        )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    figures = measure(server.requests, script.facts, None)
    figures.failed_turns = int(report.get("failed_turns") or 0)
    figures.runtime_compressions = report.get("compressions")
    return figures


# --------------------------------------------------------------------------- the run


def compare(
    turns: int = DEFAULT_TURNS,
    window: int = DEFAULT_WINDOW,
    *,
    hermes_agent_python: Path | None = HERMES_AGENT_PYTHON,
    file_bytes: int | None = None,
    shape: str = tokens_script.MIXED,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    hermes_settings: dict[str, Any] | None = None,
) -> Comparison:
    """Run the scripted conversation through each runtime and collect their figures."""
    from hermes.testing.llm_server import FakeLLMServer

    real = None
    if base_url:
        import openai

        real = openai.OpenAI(base_url=base_url, api_key=api_key or "none", max_retries=2)
    if file_bytes is None and shape in tokens_script.FAMILY:
        file_bytes = tokens_script.FAMILY[shape].file_bytes
    if file_bytes is None:
        file_bytes = (
            tokens_script.SPARSE_FILE_BYTES
            if shape == tokens_script.SPARSE
            else tokens_script.FILE_BYTES
        )
    comparison = Comparison(
        turns,
        window,
        file_bytes,
        shape,
        model=model or FAKE_MODEL,
        settings=dict(hermes_settings or {}),
    )
    with tempfile.TemporaryDirectory(prefix="hermes-bench-tokens-") as tmp:
        root = Path(tmp)
        script = tokens_script.build(root / "workspace", turns, file_bytes=file_bytes, shape=shape)
        models = Models(script, real, model)
        with FakeLLMServer(models=[comparison.model]) as server:
            server.responder = models
            comparison.columns[HERMES] = run_hermes(
                script,
                server,
                root / "hermes-home",
                window,
                comparison.model,
                api_key or "bench-key",
                hermes_settings,
            )
            why = _why_not_hermes_agent(hermes_agent_python, real is not None)
            if why:
                comparison.skipped[HERMES_AGENT] = why
            else:
                assert hermes_agent_python is not None
                server.reset()
                server.responder = models
                try:
                    comparison.columns[HERMES_AGENT] = run_hermes_agent(
                        script, server, root / "hermes-agent-home", window, hermes_agent_python
                    )
                except RuntimeError as exc:
                    comparison.skipped[HERMES_AGENT] = str(exc)
    return comparison


def _why_not_hermes_agent(python: Path | None, real_model: bool) -> str | None:
    if real_model:
        return "not run against a real model (--base-url drives hermes only)"
    if python is None:
        return "not asked for"
    if not Path(python).exists():
        return (
            f"no python at {python} (make a venv with hermes-agent==0.19.0 there, or pass"
            " --hermes-agent-python)"
        )
    return None


# --------------------------------------------------------------------------- the report

ROWS = (
    ("prompt tokens, main model", "main_tokens"),
    ("prompt tokens, summary model", "summary_tokens"),
    ("prompt tokens, both models", "total_tokens"),
    ("uncached tokens, main model", "uncached_tokens"),
    ("main tokens billed, cached at 10 %", "billed_tokens"),
    ("largest request", "largest"),
    ("compressions", "compressions"),
    ("main-model requests", "main_requests"),
    ("failed turns", "failed_turns"),
    ("requests a provider would refuse", "invalid_requests"),
)


# Where the uncached tokens came from (``tokens_measure.SOURCES``), as the table says it.
SOURCE_LABELS = {
    "new content": "new content (the floor)",
    "summary": "summary written",
    "masking": "outputs masked",
    "tail": "re-sent after a change",
    "system": "system prompt, tools",
}


def ratios(comparison: Comparison) -> dict[str, float | None]:
    """hermes / 0.19 for each figure (None without a 0.19 column or for a zero)."""
    ours, theirs = comparison.columns.get(HERMES), comparison.columns.get(HERMES_AGENT)
    result: dict[str, float | None] = {}
    for _, key in ROWS:
        a = getattr(ours, key) if ours else None
        b = getattr(theirs, key) if theirs else None
        result[key] = round(a / b, 3) if a is not None and b else None
    return result


def report(comparison: Comparison) -> str:
    names = list(comparison.columns)
    lines = [
        "",
        f"Tokens ({comparison.turns} user turns, a {comparison.window:,}-token window,"
        f" ~{_user_tokens(comparison)}-token user turns, ~{tokens_script.ANSWER_TOKENS}-token"
        f" answers, {_outputs(comparison)}; model {comparison.model}; tokens = characters / 4)",
    ]
    if comparison.settings:
        shown = ", ".join(f"{k}={v}" for k, v in comparison.settings.items())
        lines.append(f"  hermes run with: {shown}")
    width = max(len(label) for label, _ in ROWS) + 2
    header = f"  {'':<{width}}" + "".join(f"{n:>20}" for n in names)
    if len(names) == 2:
        header += f"{'hermes/0.19':>14}"
    lines.append(header)
    ratio = ratios(comparison)
    for label, key in ROWS:
        row = f"  {label:<{width}}" + "".join(
            f"{getattr(comparison.columns[n], key):>20,}" for n in names
        )
        if len(names) == 2:
            value = ratio[key]
            row += f"{value:>13.2f}x" if value is not None else f"{'-':>14}"
        lines.append(row)
    for source in SOURCES:
        row = f"  {'  uncached: ' + SOURCE_LABELS[source]:<{width}}" + "".join(
            f"{comparison.columns[n].uncached_by_source[source]:>20,}" for n in names
        )
        lines.append(row)
    row = f"  {'recall after compressions, mean / min':<{width}}"
    for name in names:
        figures = comparison.columns[name]
        cell = (
            f"{figures.recall_mean:.0f} / {figures.recall_min:.0f} %"
            if figures.recall
            else "no compression"
        )
        row += f"{cell:>20}"
    lines.append(row)
    row = f"  {'planted facts within reach, worst point':<{width}}"
    for name in names:
        worst = comparison.columns[name].worst
        row += f"{f'{worst.within}/{worst.planted}' if worst else '-':>20}"
    lines.append(row)
    for name in names:
        figures = comparison.columns[name]
        if name == HERMES and not figures.lookups_available:
            how = "verbatim only: hermes has no `recall` tool, lookups unavailable"
        elif name == HERMES:
            lookups = sum(r.lookups for r in figures.recall)
            how = f"verbatim, or one `recall` call on an anchor in the request ({lookups} calls)"
        else:
            how = "verbatim only"
        shares = " ".join(f"{r.share:.0f}" for r in figures.recall) or "-"
        end = f"; at the end {figures.end.share:.0f}" if figures.end else ""
        lines.append(f"  recall % after each compression, {name} ({how}): {shares}{end}")
        for point in [*figures.recall, *([figures.end] if figures.end else [])]:
            if point.lost and figures.lookups_available:  # 0.19 keeps next to nothing
                where = "the end" if point is figures.end else f"compression {point.compression}"
                lines.append(f"    out of reach after {where}: {', '.join(point.lost)}")
    for name in names:
        figures = comparison.columns[name]
        if figures.other_requests:
            lines.append(
                f"  {name} also sent {figures.other_requests} requests neither main nor summary"
                f" ({figures.other_tokens:,} tokens, not counted above)"
            )
    for name, why in comparison.skipped.items():
        lines.append(f"  {name}: skipped, {why}")
    return "\n".join(lines)


def _outputs(comparison: Comparison) -> str:
    kb = comparison.file_bytes / 1000
    member = tokens_script.FAMILY.get(comparison.shape)
    if member is not None:
        every = f"every {member.every}th turn" if member.every > 1 else "every turn"
        kind = "JSON file" if member.json else "file"
        reads = f"a terminal call {every} reading a {0.4 * kb:g}-{1.6 * kb:g} KB {kind}"
        return f"{member.label}: {reads if member.every else 'no tool calls'}"
    if comparison.shape == tokens_script.SPARSE:
        return (
            f"a terminal call every {tokens_script.SPARSE_EVERY}th turn reading a"
            f" {0.4 * kb:g}-{1.6 * kb:g} KB file"
        )
    return f"{kb:g} KB tool outputs"


def _user_tokens(comparison: Comparison) -> int:
    member = tokens_script.FAMILY.get(comparison.shape)
    return member.user_tokens if member else tokens_script.USER_TOKENS


# --------------------------------------------------------------------------- the family

# The targets every conversation of the family is held to (issue #55).
TOTAL_TARGET, UNCACHED_TARGET = 0.5, 0.75


def run_family(
    *,
    quick: bool = False,
    only: list[str] | None = None,
    hermes_agent_python: Path | None = HERMES_AGENT_PYTHON,
    hermes_settings: dict[str, Any] | None = None,
    progress: bool = True,
) -> list[Comparison]:
    """Each conversation of ``tokens_script.FAMILY`` (or ``only`` those) through both
    runtimes at its own size and window; ``quick`` runs a quarter of the turns."""
    results = []
    for name in only or list(tokens_script.FAMILY):
        member = tokens_script.FAMILY[name]
        turns = max(40, member.turns // 4) if quick else member.turns
        if progress:
            print(f"bench_tokens: {name} ({turns} turns) ...", file=sys.stderr, flush=True)
        results.append(
            compare(
                turns,
                member.window,
                hermes_agent_python=hermes_agent_python,
                shape=name,
                hermes_settings=hermes_settings,
            )
        )
    return results


def family_rows(comparison: Comparison) -> dict[str, Any]:
    """One conversation's line of the family table: ratios, the floor, recall."""
    ours = comparison.columns.get(HERMES)
    theirs = comparison.columns.get(HERMES_AGENT)
    ratio = ratios(comparison)
    worst = ours.worst if ours else None
    shares = [r.share for r in ours.recall] + ([ours.end.share] if ours and ours.end else [])
    floor = None
    if ours and theirs and theirs.uncached_tokens:
        floor = round(ours.uncached_by_source["new content"] / theirs.uncached_tokens, 3)
    return {
        "conversation": tokens_script.FAMILY[comparison.shape].label,
        "turns": comparison.turns,
        "window": comparison.window,
        "total": ratio["total_tokens"],
        "uncached": ratio["uncached_tokens"],
        "floor": floor,
        "facts": f"{worst.within}/{worst.planted}" if worst else "-",
        "recall": shares,
        "compressions": (
            ours.compressions if ours else None,
            theirs.compressions if theirs else None,
        ),
        "met": bool(
            ratio["total_tokens"] is not None
            and ratio["total_tokens"] <= TOTAL_TARGET
            and ratio["uncached_tokens"] is not None
            and ratio["uncached_tokens"] <= UNCACHED_TARGET
            and all(share == 100.0 for share in shares)
        ),
    }


def family_report(results: list[Comparison]) -> str:
    """The family's table: one line per conversation, its targets printed beside it."""
    lines = [
        "",
        f"The family (issue #55), hermes / Hermes Agent 0.19 with the same fake models;"
        f" targets: total <= {TOTAL_TARGET}x, uncached <= {UNCACHED_TARGET}x, every planted"
        " fact verbatim or one `recall` away at every compression and at the end",
        f"  {'conversation':<28}{'turns':>6}{'window':>9}{'total':>8}{'uncached':>10}"
        f"{'floor':>7}{'facts, worst':>14}{'compressions':>14}  targets",
    ]
    for comparison in results:
        row = family_rows(comparison)
        ours, theirs = row["compressions"]
        lines.append(
            f"  {row['conversation']:<28}{row['turns']:>6}{row['window'] // 1024:>8}k"
            f"{_x(row['total']):>8}{_x(row['uncached']):>10}{_x(row['floor']):>7}"
            f"{row['facts']:>14}{f'{ours} / {theirs}':>14}  {'met' if row['met'] else 'MISSED'}"
        )
    lines.append(
        "  floor: hermes's uncached new content (what every request must add once) over"
        " 0.19's uncached tokens, the least the uncached ratio can be"
    )
    for comparison in results:
        skipped = "; ".join(f"{n} skipped: {why}" for n, why in comparison.skipped.items())
        if skipped:
            lines.append(f"  {comparison.shape}: {skipped}")
    return "\n".join(lines)


def _x(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else "-"


def as_json(comparison: Comparison) -> str:
    return json.dumps(
        {
            "turns": comparison.turns,
            "window": comparison.window,
            "file_bytes": comparison.file_bytes,
            "shape": comparison.shape,
            "model": comparison.model,
            "hermes_settings": comparison.settings,
            "runtimes": {n: f.as_dict() for n, f in comparison.columns.items()},
            "ratios": ratios(comparison) if len(comparison.columns) == 2 else None,
            "skipped": comparison.skipped,
        },
        indent=2,
    )


def run(args: argparse.Namespace) -> None:
    api_key = (
        args.tokens_api_key or os.environ.get("HERMES_API_KEY") or os.environ.get("OPENAI_API_KEY")
    )
    if args.tokens_base_url and not args.tokens_model:
        raise SystemExit("bench_tokens: --base-url needs --model NAME (the real model's id).")
    if args.tokens_family:
        results = []
        for name in tokens_script.FAMILY:  # each conversation's table as soon as it is done
            results += run_family(
                quick=bool(getattr(args, "quick", False) or getattr(args, "tokens_quick", False)),
                only=[name],
                hermes_agent_python=Path(args.hermes_agent_python),
                hermes_settings=_settings(args.hermes_set or []),
            )
            print(as_json(results[-1]) if args.tokens_json else report(results[-1]), flush=True)
        if not args.tokens_json:
            print(family_report(results), flush=True)
        return
    member = tokens_script.FAMILY.get(args.tokens_shape)  # its own size and window
    comparison = compare(
        args.tokens_turns or (member.turns if member else DEFAULT_TURNS),
        args.tokens_window or (member.window if member else DEFAULT_WINDOW),
        hermes_agent_python=Path(args.hermes_agent_python),
        file_bytes=int(args.tokens_file_kb * 1000) if args.tokens_file_kb else None,
        shape=args.tokens_shape,
        base_url=args.tokens_base_url,
        model=args.tokens_model,
        api_key=api_key,
        hermes_settings=_settings(args.hermes_set or []),
    )
    print(as_json(comparison) if args.tokens_json else report(comparison), flush=True)


def _settings(pairs: list[str]) -> dict[str, Any]:
    import yaml

    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"bench_tokens: --hermes-set takes KEY=VALUE, not {pair!r}.")
        settings[key.strip()] = yaml.safe_load(value)
    return settings


def add_arguments(parser: argparse.ArgumentParser, *, short: bool = False) -> None:
    """The flags, prefixed ``--tokens-`` for the runner (one parser for every scenario);
    ``short`` also accepts the bare names (``python -m benchmarks.bench_tokens``)."""

    def flag(name: str, **kwargs: Any) -> None:
        names = [f"--{name}", f"--tokens-{name}"] if short else [f"--tokens-{name}"]
        parser.add_argument(*names, dest=f"tokens_{name.replace('-', '_')}", **kwargs)

    flag("turns", type=int, default=None, help=f"tokens: user turns ({DEFAULT_TURNS})")
    flag("window", type=int, default=None, help=f"tokens: context window ({DEFAULT_WINDOW})")
    flag(
        "file-kb",
        type=float,
        default=None,
        help="tokens: size of each file the tools read (mixed: 6) or their mean (sparse: 5)",
    )
    flag(
        "shape",
        choices=(*tokens_script.SHAPES, *tokens_script.FAMILY),
        default=tokens_script.MIXED,
        help="tokens: the conversation: mixed (tool output on most turns), sparse (issue"
        " #48's: a terminal call every 4th turn, 42 planted facts) or one of the family's"
        " (issue #55's, see --family)",
    )
    flag("json", action="store_true", help="tokens: print JSON instead of the table")
    flag(
        "family",
        action="store_true",
        help="tokens: run every conversation of the family (issue #55) and print its table",
    )
    if short:
        flag("quick", action="store_true", help="tokens: with --family, a quarter of the turns")
    flag("base-url", default=None, help="tokens: run hermes against this real model endpoint")
    flag("model", default=None, help="tokens: the real model's name (with --base-url)")
    flag("api-key", default=None, help="tokens: the real endpoint's key (or $HERMES_API_KEY)")
    parser.add_argument(
        "--hermes-set",
        action="append",
        metavar="KEY=VALUE",
        help="tokens: a hermes config setting for the run (repeatable), e.g."
        " compression.threshold=0.85",
    )
    parser.add_argument(
        "--hermes-agent-python",
        default=str(HERMES_AGENT_PYTHON),
        help="tokens: python of a venv with hermes-agent==0.19.0 (its column is skipped"
        " when absent)",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_tokens",
        description=(__doc__ or "").split("\n\n", 1)[0],
        epilog="See the module docstring (and docs/benchmarks.md) for what is measured.",
    )
    add_arguments(parser, short=True)
    run(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
