"""Importing a Hermes Agent 0.19 ``state.db`` into the hermes store, verified.

The source is opened read-only (a ``mode=ro`` URI) and only read; a row of a kind
Hermes Agent does not write (a crafted or damaged file) is refused before anything is
written. Every session is
written through the store's own API (``hermes_state.SessionDB``), parents before
children, so the same transactions, routing and exactly-once rules apply:

- a child whose parent ended for compression (Hermes Agent's own test, the parent's
  ``end_reason = 'compression'``) continues the parent's conversation as its next
  segment; any other child starts a branch;
- each message gets the uid ``hermes-agent:<session id>:<message id>``, so a second
  import stores nothing twice;
- a session Hermes Agent compacted in place (rows ``active = 0, compacted = 1``)
  becomes a compression chain, as hermes would have rotated it: a segment
  ``<id>~archive`` holding the archived originals (standing history: searchable,
  exported), ended for compression, then the session's own id holding the live rows
  (the summary and what followed) as the context the model sees. The conversation is
  named by the session's own id too (its ``conversation_id``, where a conversation is
  otherwise named by its first segment), both keep the title the user gave the
  session, and a search hit in the archive names the session's own id
  (hermes.compat.listing), so the user finds the conversation they know. Its summary read
  every archived row, which ``segment_coverage`` records (invariant 14); so does each
  child of a rotation Hermes Agent made itself;
- rewound rows (``active = 0, compacted = 0``: the user took them back) are stored
  and then marked undone: in the history, never in search or the live context.

Afterwards every source message is looked up by its uid and a sha256 over the content
columns of both sides must be equal.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.compat.listing import ARCHIVE_SUFFIX
from hermes.compat.session_db import SessionDB
from hermes.state.diagnose import file_problem
from hermes.state.errors import StateError
from hermes.state.usage import COUNTERS

UID_PREFIX = "hermes-agent"
_NEEDED = {
    "sessions": {"id", "source", "parent_session_id", "end_reason", "started_at", "title"},
    "messages": {"id", "session_id", "role", "content", "timestamp", "active", "compacted"},
}
# The columns both sides must agree on, per message.
_CHECKED = ("role", "content", "tool_calls", "tool_call_id", "tool_name", "reasoning")
_SESSION_FIELDS = ("model", "system_prompt", "user_id", "session_key", "title", "cwd")
# A session's usage and cost figures, kept as the source holds them (on the segment that
# carries the session's id, so a compacted-in-place session counts them once).
_USAGE_FIELDS = (
    *COUNTERS,
    "estimated_cost_usd",
    "actual_cost_usd",
    "cost_status",
    "cost_source",
    "pricing_version",
    "billing_provider",
    "billing_base_url",
    "billing_mode",
)
_MODEL_USAGE_KEY = ("model", "billing_provider", "billing_base_url", "billing_mode", "task")
_MODEL_USAGE_FIGURES = (
    *COUNTERS,
    "estimated_cost_usd",
    "actual_cost_usd",
    "cost_status",
    "cost_source",
    "first_seen",
    "last_seen",
)
# 0.19's provider fields of a message, stored in the columns of the same name.
_PROVIDER_FIELDS = (
    "finish_reason",
    "reasoning_content",
    "reasoning_details",
    "codex_reasoning_items",
    "codex_message_items",
    "platform_message_id",
    "observed",
    "effect_disposition",
    "api_content",
)

Progress = Callable[[str, int, int], None]
Record = dict[str, Any]  # a row of either store, by column name


class NotHermesAgentStoreError(StateError):
    """The file is not a Hermes Agent state.db."""


@dataclass(frozen=True)
class ImportReport:
    """What the source holds and what this run added."""

    sessions: int
    messages: int
    new_sessions: int
    new_messages: int
    checksum: str  # sha256 of every source message's content, equal on the target


def message_uid(session_id: str, message_id: int) -> str:
    return f"{UID_PREFIX}:{session_id}:{message_id}"


def open_source(path: Path) -> sqlite3.Connection:
    """The Hermes Agent store at ``path``, read-only; refuses anything else in a sentence."""
    if not path.exists():
        raise NotHermesAgentStoreError(
            f"There is no file at {path}; give the path of a Hermes Agent state.db."
        )
    problem = file_problem(path)
    if problem is not None:
        raise NotHermesAgentStoreError(f"{path} is not a Hermes Agent state.db: {problem.problem}")
    conn = sqlite3.connect(_read_only_uri(path), uri=True)
    conn.row_factory = sqlite3.Row
    try:
        columns = {
            table: {r["name"] for r in conn.execute(f"PRAGMA table_info({table})")}
            for table in _NEEDED
        }
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise NotHermesAgentStoreError(
            f"{path} is not a readable SQLite database ({exc})."
        ) from exc
    if "conversation_id" in columns["sessions"]:
        conn.close()
        raise NotHermesAgentStoreError(
            f"{path} is a hermes store, not a Hermes Agent one; copy it with `hermes migrate`."
        )
    missing = {t: sorted(need - columns[t]) for t, need in _NEEDED.items() if need - columns[t]}
    if missing:
        conn.close()
        raise NotHermesAgentStoreError(
            f"{path} is not a Hermes Agent state.db (it lacks the sessions and messages "
            "tables Hermes Agent writes); give the path of a Hermes Agent state.db."
        )
    try:
        check_source(conn, path)
    except NotHermesAgentStoreError:
        conn.close()
        raise
    return conn


def _read_only_uri(path: Path) -> str:
    """``mode=ro``; with no write-ahead log beside the file also ``immutable=1``.

    A read-only open of a WAL-mode file still creates ``-wal`` and ``-shm`` files next
    to it; a store with no log holds everything in the file itself, so SQLite may read
    it as immutable and create nothing. A log present (Hermes Agent running, or
    stopped uncleanly) must be read, and then those files exist already.
    """
    uri = f"{path.resolve().as_uri()}?mode=ro"
    if not path.with_name(path.name + "-wal").exists():
        uri += "&immutable=1"
    return uri


# What each column of the source may hold, as Hermes Agent writes it (None: NULL).
_TEXT, _TEXT_OR_NULL = (str,), (str, type(None))
_TIME, _TIME_OR_NULL = (int, float), (int, float, type(None))
_FLAG = (int, type(None))
_SESSION_TYPES = {
    "id": _TEXT,
    "source": _TEXT_OR_NULL,
    "parent_session_id": _TEXT_OR_NULL,
    "started_at": _TIME,
    "ended_at": _TIME_OR_NULL,
    "end_reason": _TEXT_OR_NULL,
    **dict.fromkeys(_SESSION_FIELDS, _TEXT_OR_NULL),
}
_MESSAGE_TYPES = {
    "id": (int,),
    "session_id": _TEXT,
    "role": _TEXT,
    "content": _TEXT_OR_NULL,
    "tool_calls": _TEXT_OR_NULL,
    "tool_call_id": _TEXT_OR_NULL,
    "tool_name": _TEXT_OR_NULL,
    "reasoning": _TEXT_OR_NULL,
    "reasoning_content": _TEXT_OR_NULL,
    "timestamp": _TIME,
    "token_count": _FLAG,
    "active": _FLAG,
    "compacted": _FLAG,
}


def check_source(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse, before anything is written, rows Hermes Agent does not write (a crafted
    or damaged file): each column of the kind it stores, each message in a session."""
    try:
        sessions = _check_rows(conn, "sessions", _SESSION_TYPES)
        _check_rows(conn, "messages", _MESSAGE_TYPES, sessions)
    except sqlite3.DatabaseError as exc:
        raise NotHermesAgentStoreError(
            f"{path} cannot be read as a Hermes Agent state.db ({exc}); nothing was changed."
        ) from exc
    except NotHermesAgentStoreError as exc:
        raise NotHermesAgentStoreError(f"{path} {exc}; nothing was changed.") from None


def _check_rows(
    conn: sqlite3.Connection,
    table: str,
    types: dict[str, tuple[type, ...]],
    sessions: set[str] | None = None,
) -> set[str]:
    present = {r["name"] for r in conn.execute(f"PRAGMA table_info({table})")}
    columns = [c for c in types if c in present]
    ids: set[str] = set()
    for row in conn.execute(f"SELECT {', '.join(columns)} FROM {table}"):
        for column in columns:
            value = row[column]
            if not isinstance(value, types[column]) or isinstance(value, bool):
                raise NotHermesAgentStoreError(
                    f"holds a row Hermes Agent does not write ({table} {str(row['id'])[:40]!r}: "
                    f"{column} is {str(value)[:40]!r})"
                )
        if sessions is not None and row["session_id"] not in sessions:
            raise NotHermesAgentStoreError(
                f"holds message {row['id']} of a session it does not hold "
                f"({str(row['session_id'])[:40]!r})"
            )
        ids.add(row["id"])
    return ids


def sessions_in_order(conn: sqlite3.Connection) -> list[Record]:
    """Every session, each parent before its children, oldest first.

    Walked without recursion: a crafted file may hold a parent chain thousands deep,
    or a loop of parents (whose first session met is then taken as its start).
    """
    rows = [dict(r) for r in conn.execute("SELECT * FROM sessions ORDER BY started_at, id")]
    by_id = {r["id"]: r for r in rows}
    ordered: list[Record] = []
    placed: set[Any] = set()
    for row in rows:
        chain: list[Record] = []
        on_chain: set[Any] = set()
        current: Record | None = row
        while current is not None and current["id"] not in placed:
            if current["id"] in on_chain:
                break
            chain.append(current)
            on_chain.add(current["id"])
            current = by_id.get(current["parent_session_id"] or "")
        for member in reversed(chain):
            placed.add(member["id"])
            ordered.append(member)
    return ordered


def _messages_of(conn: sqlite3.Connection, session_id: str) -> list[Record]:
    """The session's rows in order; an ``active`` of NULL (older Hermes Agent) is live."""
    sql = "SELECT * FROM messages WHERE session_id = ? ORDER BY id"
    rows = [dict(r) for r in conn.execute(sql, (session_id,))]
    for row in rows:
        row["active"] = 1 if row["active"] is None else row["active"]
        row["compacted"] = row["compacted"] or 0
    return rows


def _as_message(session_id: str, row: Record) -> Record:
    return {
        "message_uid": message_uid(session_id, row["id"]),
        "role": row["role"],
        "content": row["content"],
        "tool_calls": row.get("tool_calls"),
        "tool_call_id": row.get("tool_call_id"),
        "tool_name": row.get("tool_name"),
        "reasoning": row.get("reasoning"),
        "created_at": row["timestamp"],
        "token_count": row.get("token_count"),
        **{k: row[k] for k in _PROVIDER_FIELDS if row.get(k) is not None},
    }


def import_store(
    conn: sqlite3.Connection,
    db: SessionDB | None,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Bring every session and message of ``conn`` into ``db``; then verify.

    With ``dry_run`` only count what would be added (``db`` None: an empty store)."""
    if db is None and not dry_run:
        raise TypeError("import_store() needs a store to import into; db=None is for a dry run")
    show = progress or (lambda step, done, total: None)
    sessions = sessions_in_order(conn)
    total = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    if total is None or not isinstance(total, int):
        raise NotHermesAgentStoreError("The Hermes Agent store's messages cannot be counted.")
    new_sessions = new_messages = done = 0
    for row in sessions:
        rows = _messages_of(conn, row["id"])
        if db is None:  # a dry run into an empty store: everything is new
            new_sessions, new_messages = new_sessions + 1, new_messages + len(rows)
        elif dry_run:
            fresh = db.get_session(row["id"]) is None
            new_sessions += fresh
            new_messages += len(rows) if fresh else _count_missing(db, row["id"], rows)
        else:
            new_sessions += db.get_session(row["id"]) is None
            new_messages += _import_session(db, row, rows)
            _keep_usage(db, row, _model_usage_of(conn, row["id"]))
        done += len(rows)
        show("messages", done, total)
    checksum = _source_checksum(conn, sessions)
    if not dry_run and db is not None:
        show("verify", 0, 1)
        verify(db, conn, sessions, total, checksum)
    return ImportReport(len(sessions), total, new_sessions, new_messages, checksum)


def archive_segment_id(session_id: str) -> str:
    """The segment holding the rows Hermes Agent archived when it compacted in place."""
    return f"{session_id}{ARCHIVE_SUFFIX}"


def _archived(row: Record) -> bool:
    """Archived by an in-place compaction: history, not context (not a rewind)."""
    return not row["active"] and bool(row["compacted"])


def _import_session(db: SessionDB, row: Record, rows: list[Record]) -> int:
    """One Hermes Agent session: one segment, or two when it was compacted in place.

    In place, every row live at a compaction is archived and the compacted context
    written after it, so every row up to the newest archived one is older than the
    live context: those (archived, or rewound among them) go to the archive segment.
    """
    parent = row["parent_session_id"]
    if parent and db.get_session(parent) is None:
        parent = None  # a parent pruned from the source: the child starts its own conversation
    boundary = max((r["id"] for r in rows if _archived(r)), default=None)
    if boundary is None:
        return _import_segment(db, row["id"], row, parent, rows)
    history = [r for r in rows if r["id"] <= boundary and not r["active"]]
    context = [r for r in rows if r["id"] > boundary or r["active"]]
    archive = archive_segment_id(row["id"])
    archive_row = {**row, "ended_at": _last_time(row, history), "end_reason": "compression"}
    stored = _import_segment(db, archive, archive_row, parent, history)
    stored += _import_segment(
        db, row["id"], {**row, "started_at": archive_row["ended_at"]}, archive, context
    )
    if row["title"]:
        # The session keeps the title its user gave it (a rotation would number it "#2").
        db.set_title(row["id"], str(row["title"]))
    db._write(lambda tx: _keep_conversation_id(tx, archive, row["id"]))
    return stored


def _keep_conversation_id(tx: Any, archive: str, session_id: str) -> None:
    """A conversation that starts with an archive segment is named by the session's own
    id, the one Hermes Agent and the tools that read it know it by, not the archive's."""
    for table in ("sessions", "history_digests"):
        tx.run(
            f"UPDATE {table} SET conversation_id = ? WHERE conversation_id = ?",
            (session_id, archive),
        )


def _import_segment(
    db: SessionDB, segment_id: str, row: Record, parent: str | None, rows: list[Record]
) -> int:
    fresh = db.get_session(segment_id) is None
    fields = {k: row.get(k) for k in _SESSION_FIELDS if row.get(k) is not None}
    source = row["source"] or "unknown"
    db.create_session(segment_id, str(source), parent_session_id=parent, **fields)
    if parent is not None:
        _record_coverage(db, segment_id)
    stored = 0
    if rows:
        messages = [_as_message(row["id"], r) for r in rows]
        appended = db.append_messages(segment_id, messages)
        stored = appended.stored
        rewound = [
            new_id
            for new_id, r in zip(appended.message_ids, rows, strict=True)
            if new_id is not None and not r["active"] and not r["compacted"]
        ]
        db.mark_undone(appended.session_id, rewound)
    if row["ended_at"] is not None and row["end_reason"]:
        db.end_session(segment_id, str(row["end_reason"]))
    if fresh:
        _keep_times(db, segment_id, row, rows)
    return stored


def _model_usage_of(conn: sqlite3.Connection, session_id: str) -> list[Record]:
    """The session's ``session_model_usage`` rows (none in a store older than the table)."""
    try:
        found = conn.execute(
            "SELECT * FROM session_model_usage WHERE session_id = ?", (session_id,)
        )
        return [dict(r) for r in found]
    except sqlite3.OperationalError:
        return []


def _keep_usage(db: SessionDB, row: Record, per_model: list[Record]) -> None:
    """The session's usage and cost figures and its per-model rows, as the source has
    them, on the segment holding the session's id (a session compacted in place counts
    them once); set, not added, so a second import changes nothing."""
    segment_id = row["id"]
    figures = {k: row[k] for k in _USAGE_FIELDS if row.get(k) is not None}
    if not figures and not per_model:
        return
    assignments = ", ".join(f"{k} = ?" for k in figures)

    def run(tx: Any) -> None:
        if figures:
            tx.run(
                f"UPDATE sessions SET {assignments} WHERE id = ?",
                (*figures.values(), segment_id),
            )
        for usage in per_model:
            _keep_model_usage(tx, segment_id, usage)

    db._write(run)


def _keep_model_usage(tx: Any, segment_id: str, usage: Record) -> None:
    key = {k: usage.get(k) or "" for k in _MODEL_USAGE_KEY}
    key["model"] = key["model"] or "unknown"
    figures = {k: usage[k] for k in _MODEL_USAGE_FIGURES if usage.get(k) is not None}
    columns = ["session_id", *key, *figures]
    updates = ", ".join(f"{k} = excluded.{k}" for k in figures) or "model = excluded.model"
    tx.run(
        f"INSERT INTO session_model_usage ({', '.join(columns)})"
        f" VALUES ({', '.join('?' for _ in columns)})"
        f" ON CONFLICT (session_id, {', '.join(_MODEL_USAGE_KEY)}) DO UPDATE SET {updates}",
        (segment_id, *key.values(), *figures.values()),
    )


def _record_coverage(db: SessionDB, child_id: str) -> None:
    """A compression child Hermes Agent made holds the summary of its parent's rows.

    Invariant 14 asks every row of a rotated parent to be copied into the child or
    covered by its summary; the summary Hermes Agent wrote read them all.
    """
    sql = (
        "INSERT INTO segment_coverage (session_id, origin_id)"
        " SELECT c.id, COALESCE(m.origin_id, m.id) FROM sessions c"
        " JOIN messages m ON m.session_id = c.parent_session_id"
        " WHERE c.id = ? AND c.lineage = 'compression'"
        " ON CONFLICT DO NOTHING"
    )
    db._write(lambda tx: tx.run(sql, (child_id,)))


def _last_time(row: Record, rows: list[Record]) -> float:
    return float(max([row["started_at"], *(r["timestamp"] for r in rows)]))


def _keep_times(db: SessionDB, segment_id: str, row: Record, rows: list[Record]) -> None:
    """The session's own start, last activity and end, not the moment of the import."""
    last = max([row["started_at"], row["ended_at"] or 0, *(r["timestamp"] for r in rows)])
    sql = "UPDATE sessions SET started_at = ?, last_active_at = ?, ended_at = ? WHERE id = ?"
    ended = row["ended_at"] if row["end_reason"] else None
    db._write(lambda tx: tx.run(sql, (row["started_at"], last, ended, segment_id)))


def _count_missing(db: SessionDB, session_id: str, rows: list[Record]) -> int:
    held = _target_rows(db, [message_uid(session_id, r["id"]) for r in rows])
    return len(rows) - len(held)


def _target_rows(db: SessionDB, uids: list[str]) -> dict[str, Record]:
    found: dict[str, Record] = {}
    columns = ", ".join(("message_uid", *_CHECKED))
    for start in range(0, len(uids), 500):
        part = uids[start : start + 500]
        marks = ", ".join("?" for _ in part)
        sql = f"SELECT {columns} FROM messages WHERE message_uid IN ({marks})"
        for r in _read_all(db, sql, part):
            found[r["message_uid"]] = dict(r)
    return found


def _read_all(db: SessionDB, sql: str, params: list[str]) -> list[Record]:
    return db._read(lambda tx: tx.all(sql, params))


def _digest(rows: Iterator[Record]) -> str:
    digest = hashlib.sha256()
    for row in rows:
        line = json.dumps([row.get(c) for c in ("message_uid", *_CHECKED)], ensure_ascii=False)
        digest.update(line.encode() + b"\n")
    return digest.hexdigest()


def _source_rows(conn: sqlite3.Connection, sessions: list[Record]) -> Iterator[Record]:
    for session in sessions:
        for r in _messages_of(conn, session["id"]):
            message = _as_message(session["id"], r)
            yield {k: message[k] for k in ("message_uid", *_CHECKED)}


def _source_checksum(conn: sqlite3.Connection, sessions: list[Record]) -> str:
    return _digest(_source_rows(conn, sessions))


def verify(
    db: SessionDB, conn: sqlite3.Connection, sessions: list[Record], total: int, checksum: str
) -> None:
    """Every session and message is in ``db`` with the same content, or StateError."""
    missing = [s["id"] for s in sessions if db.get_session(s["id"]) is None]
    if missing:
        raise StateError(
            f"The import is incomplete: {len(missing)} sessions are missing "
            f"(first: {missing[0]}); run it again."
        )
    uids = [r["message_uid"] for r in _source_rows(conn, sessions)]
    held = _target_rows(db, uids)
    if len(held) != total:
        raise StateError(
            f"The import is incomplete: {total - len(held)} of {total} messages are missing; "
            "run it again."
        )
    if _digest(held[u] for u in uids) != checksum:
        raise StateError(
            "The imported messages differ from the source (the checksum does not match); "
            "was Hermes Agent still writing to it? Stop it and run the import again."
        )


def describe(report: ImportReport, *, dry_run: bool) -> str:
    verb = "Would import" if dry_run else "Imported"
    if not report.new_sessions and not report.new_messages:
        return (
            f"Nothing to import: all {report.sessions} sessions and {report.messages} "
            "messages are already in the store."
        )
    lines = [
        f"{verb} {report.new_sessions} new sessions and {report.new_messages} new messages"
        f" (the source holds {report.sessions} sessions, {report.messages} messages)."
    ]
    if not dry_run:
        lines.append(f"Verified: every message is in the store, sha256:{report.checksum}.")
    return "\n".join(lines)
