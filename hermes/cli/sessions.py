"""`hermes sessions`: list, show, search, export, lineage, rename, delete, prune.

Every command takes any segment id of a conversation (or its title) and works on the
whole logical conversation. The read-only ones open the store read-only, so they are
safe while a gateway is writing; show and export stream page by page, so a huge
conversation never has to fit in memory.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

import click

from hermes.cli._ask import Duration, confirm_or_refuse, describe_duration
from hermes.cli._group import DefaultGroup
from hermes.cli._store import opened_store, rename_conversation, resolve_conversation
from hermes.cli._table import echo_listing, echo_table
from hermes.config import load_config, register_secrets
from hermes.errors import HermesError
from hermes.redaction import redact
from hermes.state import SessionDB
from hermes.state.location import store_location
from hermes.text import one_line, plural, stamp, visible, when

TOOL_OUTPUT_LINES = 20  # `show` cuts long tool results; `export` never does


def _limit_option(help: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """``-n/--limit N`` (at least 1, 20 by default), as list and search take it."""
    return click.option(
        "-n", "--limit", type=click.IntRange(min=1), default=20, show_default=True, help=help
    )


@click.group(cls=DefaultGroup)
def sessions() -> None:
    """List, show, search, export conversations (default: list)."""


# -- list -------------------------------------------------------------------------------


@sessions.command("list")
@click.option("--source", help="Only conversations from this source (cli, telegram, api...).")
@_limit_option("How many conversations to show, newest first.")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Also list conversations holding only one unanswered first message.",
)
@click.option(
    "--workspace",
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help="Only conversations started in DIR or a directory below it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_cmd(
    source: str | None, limit: int, show_all: bool, as_json: bool, workspace: Path | None = None
) -> None:
    """One row per conversation: title, messages, last activity, source, tip id.

    Undone messages are not counted (the NOTE column says how many there are), and a
    conversation whose last message was never answered (the model call failed) says
    so. A failed first message alone is not listed, unless --all.
    """
    rows = []
    if _store_exists():  # a fresh home has no store yet: an empty listing, not an error
        with opened_store(read_only=True) as db:
            rows = db.list_conversations(
                limit=limit + 1,  # one more, to know whether to say there are more
                source=source,
                include_abandoned=show_all,
                workspace=os.path.realpath(workspace) if workspace else None,
            )
    more = len(rows) > limit
    rows = rows[:limit]
    if as_json:
        click.echo(json.dumps([_conversation_json(r) for r in rows], indent=2, ensure_ascii=False))
        return
    if not rows:
        click.echo(
            "No conversations yet; start one with `hermes chat`."
            if not source
            else f"No conversations from {source}."
        )
        return
    now = time.time()
    # The tip's id comes last, under `ID`, as in Hermes Agent's table: tools read it there.
    body = [
        (
            one_line(r["title"] or "(untitled)", 40),
            r["message_count"],
            when(r["last_active_at"], now),
            r["source"],
            _note(r),
            r["tip_id"],
        )
        for r in rows
    ]
    echo_table(("TITLE", "MESSAGES", "LAST ACTIVE", "SOURCE", "NOTE", "ID"), body)
    if more:  # on stderr: tools that read the table's rows see only rows
        click.echo(
            f"The {limit} most recently active shown; there are more: "
            f"`hermes sessions list -n {limit * 5}` shows up to {limit * 5}.",
            err=True,
        )


def _store_exists() -> bool:
    return store_location().exists


def _unanswered(row: dict[str, Any]) -> bool:
    """The conversation's newest standing row is the person's: no answer came."""
    return bool(row["last_role"] == "user")


def _note(row: dict[str, Any]) -> str:
    notes = []
    if _unanswered(row):
        notes.append("last message unanswered")
    if row["undone_count"]:
        notes.append(f"{row['undone_count']} undone")
    return ", ".join(notes)


def _conversation_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "conversation_id": row["conversation_id"],
        "tip_id": row["tip_id"],
        "title": row["title"],
        "source": row["source"],
        "model": row["model"],
        "messages": row["message_count"],
        "undone": row["undone_count"],
        "unanswered": _unanswered(row),
        "segments": row["segments"],
        "started_at": row["started_at"],
        "last_active_at": row["last_active_at"],
        "live": row["ended_at"] is None,
    }


# -- show -------------------------------------------------------------------------------


@sessions.command("show")
@click.argument("ref", metavar="ID")
@click.option("--no-pager", is_flag=True, help="Print straight to the terminal.")
def show_cmd(ref: str, no_pager: bool) -> None:
    """Show a whole conversation, every segment, oldest first (ID or title)."""
    with opened_store(read_only=True) as db:
        chain = db.get_segments(resolve_conversation(db, ref))
        lines = map(visible, _scrubbed(_transcript(db, chain)))
        if no_pager or not sys.stdout.isatty():
            _write_stream(lines, sys.stdout)
        else:
            click.echo_via_pager(lines)


def _transcript(db: SessionDB, chain: list[dict[str, Any]]) -> Iterator[str]:
    root = chain[0]
    yield f"{root['title'] or '(untitled)'}\n"
    yield (
        f"conversation {root['conversation_id']} · {root['source']} · "
        f"{plural(len(chain), 'segment')} · "
        f"started {stamp(root['started_at'])}\n\n"
    )
    index = {s["id"]: s for s in chain}
    current = root["id"]
    for message in db.iter_conversation_messages(root["id"], include_summaries=True):
        segment = index.get(message["session_id"])
        if segment is not None and segment["id"] != current:
            current = segment["id"]
            yield f"── compressed here: segment {segment['segment_index']} ({segment['id']}) ──\n\n"
        if message["compacted"]:
            continue  # the marker above stands for the summary
        yield from _message_lines(message)


def _message_lines(message: dict[str, Any]) -> Iterator[str]:
    name = f" {message['tool_name']}" if message.get("tool_name") else ""
    undone = " · undone" if message.get("undone") else ""
    yield f"[{message['role']}{name} · {stamp(message['created_at'])}{undone}]\n"
    content = message.get("content") or ""
    if message["role"] == "tool":
        content = _clip_lines(content, TOOL_OUTPUT_LINES)
    if content:
        yield content.rstrip("\n") + "\n"
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {}) if isinstance(call, dict) else {}
        yield f"  ↳ {fn.get('name')} {one_line(fn.get('arguments'), 100)}\n"
    yield "\n"


def _clip_lines(text: str, limit: int) -> str:
    lines = text.splitlines()
    if len(lines) <= limit:
        return text
    hidden = len(lines) - limit
    return (
        "\n".join(lines[:limit])
        + f"\n… {plural(hidden, 'more line')} (see `hermes sessions export`)"
    )


def _write_stream(chunks: Iterable[str], out: TextIO) -> None:
    try:
        for chunk in chunks:
            out.write(chunk)
        out.flush()
    except BrokenPipeError:
        # The reader (`| head`) went away: stop quietly, like any Unix filter.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(0) from None


# -- search -----------------------------------------------------------------------------


@sessions.command("search")
@click.argument("query", nargs=-1, required=True)
@_limit_option("Most hits to show, newest first.")
@click.option("--source", help="Only conversations from this source.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def search_cmd(query: tuple[str, ...], limit: int, source: str | None, as_json: bool) -> None:
    """Full-text search over every message of every conversation; each hit names its
    conversation by the id `hermes sessions list` shows (its live segment).

    Every word must match (`zebra giraffe` finds messages holding both). Quote a phrase
    to find its words adjacent (`'"red apples"'`) and end a word with * to match every
    word it starts (`'zebr*'`). The ID column is the conversation's live segment, as in
    `sessions list`.
    """
    text = " ".join(query)
    hits: list[dict[str, Any]] = []
    found: dict[str, tuple[str | None, str]] = {}
    if _store_exists():
        with opened_store(read_only=True) as db:
            hits = db.search_messages(text, limit=limit, source=source)
            found = _titles_and_tips(db, {h["conversation_id"] for h in hits})
    for hit in hits:
        hit["title"], hit["tip_id"] = found.get(hit["conversation_id"], (None, hit["session_id"]))
    echo_listing(
        hits,
        as_json=as_json,
        empty=f"No messages match '{text}'.",
        # ID last, the live segment's, as `sessions list` shows it: what --resume takes.
        headers=("TITLE", "WHEN", "ROLE", "MATCH", "ID"),
        row=lambda h: (
            one_line(h["title"] or "(untitled)", 24),
            when(h["created_at"]),
            h["role"],
            one_line(h["snippet"], 80),
            h["tip_id"],
        ),
    )


def _titles_and_tips(
    db: SessionDB, conversation_ids: set[str]
) -> dict[str, tuple[str | None, str]]:
    """Each conversation's title (its root's) and live segment id."""
    found = {}
    for cid in conversation_ids:
        root = db.get_session(cid)
        found[cid] = (root["title"] if root else None, db.resolve_tip(cid))
    return found


# -- export -----------------------------------------------------------------------------


@sessions.command("export")
@click.argument("target", metavar="[ID | OUTPUT]", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "md", "markdown"]),
    default="jsonl",
    show_default=True,
    help="JSON lines, or Markdown for reading.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to this file (mode 0600) instead of stdout.",
)
@click.option(
    "--session-id",
    metavar="ID",
    help="Hermes Agent's export of one session: a JSON line of the session and its "
    "messages, written to OUTPUT ('-': stdout).",
)
@click.option(
    "--redact",
    is_flag=True,
    help="Mask secrets (Hermes Agent's flag: hermes masks them in every export).",
)
@click.option(
    "-y", "--yes", is_flag=True, help="Ask nothing (Hermes Agent's flag: export never asks)."
)
def export_cmd(
    target: str | None,
    fmt: str,
    output: Path | None,
    session_id: str | None,
    redact: bool,
    yes: bool,
) -> None:
    """Export a whole conversation (ID), streamed, so any size exports in constant memory.

    As Hermes Agent 0.19 does: `--session-id ID OUTPUT` exports that session, and
    `OUTPUT` alone every session, as JSON lines ('-' writes to stdout).
    """
    if session_id is None and target is None:
        raise click.UsageError(
            "Name what to export: a conversation id or title, `--session-id ID -`, or `-` "
            "(or a file) for every session."
        )
    if session_id is None and target != "-" and _is_conversation(str(target)) is False:
        if not _looks_like_a_file(str(target)):
            raise HermesError(
                f"No conversation with the id or title {target!r}; run `hermes sessions list` "
                "to see them (to export every session, give a file such as all.jsonl, or -)."
            )
    elif session_id is None and target != "-":
        _export_conversation(str(target), fmt, output)
        return
    _export_as_hermes_agent(session_id, output or (Path(target) if target else None), fmt)


def _export_conversation(ref: str, fmt: str, output: Path | None) -> None:
    with opened_store(read_only=True) as db:
        tip = resolve_conversation(db, ref)
        chunks = _scrubbed(db.export_conversation(tip, "markdown" if fmt == "md" else fmt))
        if output is None:
            _write_stream(chunks, sys.stdout)
            return
        _write_file(chunks, output)
    click.echo(f"Exported the conversation to {output}.", err=True)


def _is_conversation(ref: str) -> bool | None:
    """Whether ``ref`` names a conversation; None when there is no store to look in."""
    if not store_location(config=load_config()).exists:
        return None
    with opened_store(read_only=True) as db:
        try:
            resolve_conversation(db, ref)
        except HermesError:
            return False
    return True


def _looks_like_a_file(text: str) -> bool:
    return "/" in text or "." in Path(text).name


def _export_as_hermes_agent(session_id: str | None, out: Path | None, fmt: str) -> None:
    """0.19's JSONL export: one line per session (its row and ``messages``)."""
    from hermes.compat.session_db import SessionDB as HermesAgentSessionDB

    if fmt != "jsonl":
        raise click.UsageError(
            "--session-id and the export of every session write JSON lines; for Markdown, "
            "export one conversation: `hermes sessions export ID --format md`."
        )
    if out is None:
        raise click.UsageError("Give an output file, or - for stdout: `--session-id ID -`.")
    with opened_store(read_only=True, kind=HermesAgentSessionDB) as db:
        assert isinstance(db, HermesAgentSessionDB)
        if session_id is not None:
            resolved = db.resolve_session_id(session_id)
            if resolved is None:
                raise HermesError(
                    f"No session {session_id!r}; run `hermes sessions list` to see them."
                )
            found = db.export_session(resolved)
            records = [found] if found else []
        else:
            records = db.export_all()
        lines = [_scrub_line(json.dumps(r, ensure_ascii=False, default=str)) for r in records]
    chunks = (line + "\n" for line in lines)
    if str(out) == "-":
        _write_stream(chunks, sys.stdout)
        return
    _write_file(chunks, out)
    click.echo(f"Exported {plural(len(lines), 'session')} to {out}.", err=True)


def _scrub_line(line: str) -> str:
    register_secrets(load_config())
    return redact(line)


def _scrubbed(chunks: Iterable[str]) -> Iterator[str]:
    """``chunks`` without the secrets this host knows, for a store written before they
    were scrubbed at the source (or by another host)."""
    register_secrets(load_config())
    return map(redact, chunks)


def _write_file(chunks: Iterable[str], path: Path) -> None:
    """Write to a hidden temporary file, then rename: never a half-written export."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as exc:
        raise HermesError(
            f"Cannot write {path}: {exc.strerror}; choose another file with -o."
        ) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for chunk in chunks:
                handle.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# -- lineage ----------------------------------------------------------------------------


@sessions.command("lineage")
@click.argument("ref", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the chain as a JSON tree.")
def lineage_cmd(ref: str, as_json: bool) -> None:
    """The segments of a conversation, numbered: messages, dates and why each ended.

    Each original message is counted in the segment it was written in, so the counts
    add up to the conversation's (undone messages are counted apart).
    """
    with opened_store(read_only=True) as db:
        chain = db.get_segments(resolve_conversation(db, ref))
        counts = db.segment_message_counts(chain[0]["id"])
    if as_json:
        click.echo(json.dumps(_lineage_tree(chain, counts), indent=2, ensure_ascii=False))
        return
    root = chain[0]
    total = sum(counts.get(s["id"], (0, 0))[0] for s in chain)
    undone = sum(counts.get(s["id"], (0, 0))[1] for s in chain)
    title = visible(root["title"] or "(untitled)")
    click.echo(
        f"{title} — conversation {root['conversation_id']} ({root['source']}): "
        f"{plural(total, 'message')}{_undone_note(undone)}, {plural(len(chain), 'segment')}"
    )
    click.echo(" → ".join(str(s["segment_index"]) for s in chain))
    body = [_segment_row(s, counts) for s in chain]
    echo_table(("#", "SEGMENT", "MESSAGES", "FROM – TO", "STATE"), body)


def _segment_row(segment: dict[str, Any], counts: dict[str, tuple[int, int]]) -> tuple[Any, ...]:
    ended = stamp(segment["ended_at"]) if segment["ended_at"] else "now"
    span = f"{stamp(segment['started_at'])} – {ended}"
    kept = _kept_count(counts, segment["id"])
    return (segment["segment_index"], segment["id"], kept, span, _state(segment))


def _kept_count(counts: dict[str, tuple[int, int]], segment_id: str) -> str:
    kept, undone = counts.get(segment_id, (0, 0))
    return f"{kept}{_undone_note(undone)}"


def _undone_note(undone: int) -> str:
    return f" (+{undone} undone)" if undone else ""


# What the JSON lineage shows of each segment: where it sits, then what it is.
_SEGMENT_KEYS = (
    *("id", "parent_session_id", "lineage", "segment_index"),
    *("title", "model", "started_at", "ended_at", "end_reason"),
)


def _lineage_tree(
    chain: list[dict[str, Any]], counts: dict[str, tuple[int, int]]
) -> dict[str, Any]:
    """The conversation as a tree: each segment holds its compression child."""
    root = chain[0]
    nodes = {}
    for segment in chain:
        kept, undone = counts.get(segment["id"], (0, 0))
        node = {k: segment[k] for k in _SEGMENT_KEYS}
        nodes[segment["id"]] = node | {"messages": kept, "undone": undone, "children": []}
    for segment in chain[1:]:
        parent = nodes.get(segment["parent_session_id"])
        if parent is not None:
            parent["children"].append(nodes[segment["id"]])
    return {
        "conversation_id": root["conversation_id"],
        "title": root["title"],
        "source": root["source"],
        "messages": sum(n["messages"] for n in nodes.values()),
        "undone": sum(n["undone"] for n in nodes.values()),
        "segments": len(chain),
        "root": nodes[root["id"]],
    }


def _state(segment: dict[str, Any]) -> str:
    if segment["ended_at"] is None:
        return "live (tip)"
    return f"ended: {segment['end_reason'] or 'no reason'}"


# -- rename, delete, prune --------------------------------------------------------------


@sessions.command("rename")
@click.argument("ref", metavar="ID")
@click.argument("title", nargs=-1, required=True)
def rename_cmd(ref: str, title: tuple[str, ...]) -> None:
    """Give a conversation a new title (later segments become 'TITLE #N')."""
    text = " ".join(title).strip()
    if not text:
        raise click.UsageError("The title cannot be empty.")
    with opened_store(read_only=False) as db:
        root = rename_conversation(db, ref, text)
    click.echo(f"Renamed conversation {root} to '{text}'.")


@sessions.command("delete")
@click.argument("ref", metavar="ID")
@click.option(
    "-y", "--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal)."
)
@click.option("--dry-run", is_flag=True, help="Only say what would be deleted.")
def delete_cmd(ref: str, yes: bool, dry_run: bool) -> None:
    """Delete a whole conversation, every segment and message (asks first)."""
    with opened_store(read_only=dry_run) as db:
        chain = db.get_segments(resolve_conversation(db, ref))
        root = chain[0]
        if dry_run:
            click.echo(
                f"Would delete conversation '{root['title'] or '(untitled)'}' "
                f"({root['conversation_id']}, {plural(len(chain), 'segment')}); nothing was changed."
            )
            return
        confirm_or_refuse(
            f"Delete conversation '{root['title'] or '(untitled)'}' ({root['conversation_id']}, "
            f"{plural(len(chain), 'segment')})? This cannot be undone",
            yes=yes,
            action=f"deleting conversation {root['conversation_id']}",
        )
        removed = db.delete_conversation(root["id"])
    click.echo(
        f"Deleted conversation {root['conversation_id']} ({plural(removed, 'message row')})."
    )


@sessions.command("prune")
@click.option(
    "--older-than",
    "age",
    type=Duration(),
    required=True,
    metavar="DURATION",
    help="Delete conversations idle this long: 90d, 12h, 30m, 2w (a plain number is days).",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be deleted.")
@click.option(
    "-y", "--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal)."
)
def prune_cmd(age: float, dry_run: bool, yes: bool) -> None:
    """Delete every conversation with no activity for DURATION (asks first)."""
    idle = describe_duration(age)
    with opened_store(read_only=dry_run) as db:
        cutoff = time.time() - age
        stale = [r for r in db.list_conversations(limit=1_000_000) if r["last_active_at"] < cutoff]
        for row in stale:
            click.echo(
                f"{row['conversation_id']}  {one_line(row['title'] or '(untitled)', 40)}"
                f"  last active {when(row['last_active_at'])}"
            )
        if not stale:
            click.echo(f"Nothing to delete: no conversation has been idle for more than {idle}.")
            return
        if dry_run:
            click.echo(
                f"Would delete {plural(len(stale), 'conversation')} idle for more than {idle}."
            )
            return
        confirm_or_refuse(
            f"Delete these {plural(len(stale), 'conversation')}? This cannot be undone",
            yes=yes,
            action=f"deleting {plural(len(stale), 'conversation')}",
        )
        count = db.prune_conversations(age / 86400)
    click.echo(f"Deleted {plural(count, 'conversation')} idle for more than {idle}.")
