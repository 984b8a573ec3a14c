"""SessionDB: the one public face of the state store.

It picks a backend from the location (a path is SQLite, a ``postgresql://`` URL is
PostgreSQL) and implements every operation once, on top of the backend seam, as one
transaction each. The gateway's part (routes, its queue and heartbeats, turn locks) is
``db.gateway``, a ``GatewayStore`` (``state/gateway/store.py``) on the same backend.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, Self, TypeVar

from hermes.state import blobs, export, history, lease, recall, rotation, segments, stopped, undo
from hermes.state.backend import Backend, MessageRow, Row, SearchScope, Tx
from hermes.state.context.message import SAID_COLUMNS
from hermes.state.errors import MessageNotFoundError, ReadOnlyStoreError, SessionNotFoundError
from hermes.state.gateway import routes
from hermes.state.gateway.store import GatewayStore
from hermes.state.search import query_terms, snippet
from hermes.state.usage import TokenUsage
from hermes.state.usage import record as record_usage

T = TypeVar("T")

MESSAGE_COLUMNS = (
    "id, session_id, message_uid, role, content, tool_calls, tool_call_id, tool_name,"
    " reasoning, created_at, token_count, compacted, origin_id, undone, content_parts"
)


@dataclass(frozen=True)
class Appended:
    """Where a write landed: the segment (maybe the tip, not the one addressed)."""

    session_id: str
    message_ids: tuple[int | None, ...]
    stored: int  # rows written; duplicates of an existing message_uid are not

    @property
    def message_id(self) -> int | None:
        return self.message_ids[0] if self.message_ids else None


def _open_backend(
    db_path: str | Path | None, url: str | None, read_only: bool, synchronous: str | None
) -> Backend:
    """The backend of the store ``hermes.state.location`` decides on: ``url``, else
    ``db_path`` (which may be a postgresql:// URL too), else the configured one."""
    from hermes.config import ensure_home, load_config
    from hermes.state.location import store_location

    given = url or db_path or None
    config = None if given is not None else load_config()
    location = store_location(db_path, url=url, config=config)
    if location.url is not None:
        from hermes.state.postgres.backend import PostgresBackend

        return PostgresBackend(location.url, read_only=read_only)
    from hermes.state.sqlite.backend import SQLiteBackend

    assert location.path is not None
    if given is None and not read_only:
        ensure_home()  # $HERMES_HOME, private, for the default file
    if synchronous is None:
        synchronous = _configured_synchronous(config)
    return SQLiteBackend(location.path, read_only=read_only, synchronous=synchronous)


def is_hermes_agent_store(path: Path) -> bool:
    """``path`` is a SQLite file holding a Hermes Agent store (read without writing)."""
    from hermes.state.sqlite.backend import is_hermes_agent_store as holds_one

    return holds_one(path)


def _configured_synchronous(config: Any) -> str:
    """``state.synchronous`` from config; a broken config file must not stop the store."""
    from hermes.config import load_config
    from hermes.errors import ConfigError

    try:
        return str((config or load_config()).get("state.synchronous"))
    except ConfigError:
        return "full"


class SessionDB:
    """Durable conversations: segments, messages, leases, rotation, search, export;
    ``gateway`` holds the gateway's routes, queue and turn locks."""

    def __init__(
        self,
        db_path: str | Path | None = None,
        *,
        read_only: bool = False,
        url: str | None = None,
        synchronous: str | None = None,
    ) -> None:
        self.backend = _open_backend(db_path, url, read_only, synchronous)
        self.read_only = read_only
        self.gateway = GatewayStore(self.backend, read_only=read_only)
        try:
            self.backend.migrate()
        except BaseException:
            self.backend.close()
            raise

    # -- plumbing -------------------------------------------------------------------

    @property
    def _conn(self) -> Any:
        """The raw connection (SQLite: a ``sqlite3.Connection`` usable from any thread)."""
        return self.backend.conn  # type: ignore[attr-defined]

    @property
    def location(self) -> str:
        return self.backend.location

    def _write(self, fn: Callable[[Tx], T]) -> T:
        if self.read_only:
            raise ReadOnlyStoreError(self.location)
        return self.backend.transact(fn, write=True)

    def _read(self, fn: Callable[[Tx], T]) -> T:
        return self.backend.transact(fn, write=False)

    def in_place(self) -> bool:
        """Whether the store is still the one the next process will open: False once
        its SQLite file was deleted or replaced (its writes then raise)."""
        return self.backend.in_place()

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- segments -------------------------------------------------------------------

    # Keyword-only, one a line: the columns a caller may set (append_message's alike).
    def create_session(
        self,
        session_id: str | None = None,
        *,
        source: str,
        user_id: str | None = None,
        session_key: str | None = None,
        title: str | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        cwd: str | None = None,
    ) -> str:
        """Start a new conversation whose root segment is ``session_id``; ``cwd`` is the
        working directory it started in (``sessions list --workspace``)."""
        now = time.time()
        sid = session_id or segments.new_session_id(now)
        values = {
            "id": sid,
            "conversation_id": sid,
            "lineage": "root",
            "segment_index": 1,
            "source": source,
            "user_id": user_id,
            "session_key": session_key,
            "title": title,
            "model": model,
            "system_prompt": system_prompt,
            "cwd": cwd,
            "started_at": now,
            "last_active_at": now,
        }
        self._write(lambda tx: segments.insert(tx, values))
        return sid

    def branch_session(
        self,
        from_session_id: str,
        *,
        at_message_id: int | None = None,
        source: str | None = None,
        then: Sequence[Mapping[str, Any]] = (),
    ) -> str:
        """A new conversation that starts with a copy of another's standing history.

        With ``at_message_id`` the copy stops after that message (an original's id or the
        id of its carried copy in a later segment): the branch point of an edited history.
        ``then`` are messages the branch holds after the copy, in the same transaction
        (the edited part of a history). Undone messages (an /undo, a deleted response)
        stay behind: the branch starts with the history as it stands.
        """
        standing = [m for m in self.get_conversation_messages(from_session_id) if not m["undone"]]
        origin = self.get_session(from_session_id)
        assert origin is not None
        if at_message_id is not None:
            standing = standing[: self._branch_point(from_session_id, standing, at_message_id)]
        now = time.time()
        sid = segments.new_session_id(now)

        def run(tx: Tx) -> None:
            segments.insert(
                tx,
                {
                    "id": sid,
                    "conversation_id": sid,
                    "parent_session_id": origin["id"],
                    "lineage": "branch",
                    "segment_index": 1,
                    "source": source or origin["source"],
                    "user_id": origin["user_id"],
                    "title": origin["title"],
                    "model": origin["model"],
                    "started_at": now,
                    "last_active_at": now,
                },
            )
            rows = [
                segments.message_row(sid, _as_message(m), now, message_uid=None) for m in standing
            ]
            rows += [segments.message_row(sid, m, now) for m in then]
            ids = segments.add_messages(tx, sid, rows, now)
            history.record(tx, sid, source or origin["source"], ids, rows)

        self._write(run)
        return sid

    def _branch_point(self, session_id: str, messages: list[Row], message_id: int) -> int:
        """How many of ``messages`` to keep so they end with ``message_id``."""
        row = self._read(
            lambda tx: tx.one(
                "SELECT COALESCE(origin_id, id) AS origin FROM messages WHERE id = ?",
                (message_id,),
            )
        )
        origin = int(row["origin"]) if row else message_id
        for index, message in enumerate(messages):
            if message["id"] in (message_id, origin):
                return index + 1
        raise MessageNotFoundError(session_id, message_id)

    def get_session(self, session_id: str) -> Row | None:
        return self._read(lambda tx: segments.get(tx, session_id))

    def end_session(self, session_id: str, end_reason: str) -> None:
        now = time.time()

        def run(tx: Tx) -> None:
            segments.require(tx, session_id)
            tx.run(
                "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
                (now, end_reason, session_id),
            )

        self._write(run)

    def reopen_session(self, session_id: str) -> None:
        """Clear a segment's end so it takes messages again (an explicit resume; 0.19's
        way to re-end a session). Refused for a segment that is not its conversation's tip."""
        self._write(lambda tx: segments.reopen(tx, session_id))

    def set_title(self, session_id: str, title: str | None) -> None:
        def run(tx: Tx) -> None:
            segments.require(tx, session_id)
            tx.run("UPDATE sessions SET title = ? WHERE id = ?", (title, session_id))

        self._write(run)

    def set_model(self, session_id: str, model: str | None) -> None:
        self._set(session_id, "model", model)

    def set_system_prompt(self, session_id: str, system_prompt: str) -> None:
        self._set(session_id, "system_prompt", system_prompt)

    def _set(self, session_id: str, column: str, value: Any) -> None:
        def run(tx: Tx) -> None:
            segments.require(tx, session_id)
            tx.run(f"UPDATE sessions SET {column} = ? WHERE id = ?", (value, session_id))

        self._write(run)

    def add_token_usage(
        self,
        session_id: str,
        input_tokens: int | TokenUsage,
        output_tokens: int = 0,
    ) -> None:
        """Add model calls' figures to the segment: a ``TokenUsage``, or input and output
        tokens alone."""
        usage = (
            input_tokens
            if isinstance(input_tokens, TokenUsage)
            else TokenUsage.of((input_tokens, output_tokens))
        )

        now = time.time()

        def run(tx: Tx) -> None:
            segments.require(tx, session_id)
            if usage:
                record_usage(tx, session_id, usage, now)

        self._write(run)

    def resolve_tip(self, session_id: str) -> str:
        """The live segment of the conversation holding ``session_id``."""
        return self._read(lambda tx: str(segments.tip(tx, session_id)["id"]))

    def find_tip(self, session_id: str) -> Row | None:
        """The live segment (its row) of the conversation holding ``session_id``; None
        if no conversation holds it. One read, where get_session + resolve_tip are two."""

        def run(tx: Tx) -> Row | None:
            try:
                return segments.tip(tx, session_id)
            except SessionNotFoundError:
                return None

        return self._read(run)

    def find_tip_stamped(self, session_id: str) -> tuple[Row, SegmentStamp] | None:
        """``find_tip`` and the tip's ``segment_stamp`` in one read transaction: what a
        turn reads before it loads its history (one transaction where there were two)."""

        def run(tx: Tx) -> tuple[Row, SegmentStamp] | None:
            try:
                row = segments.tip(tx, session_id)
            except SessionNotFoundError:
                return None
            return row, _segment_stamp(tx, str(row["id"]))

        return self._read(run)

    def get_lineage(self, session_id: str) -> list[str]:
        """Segment ids from the root to the tip."""
        return [row["id"] for row in self.get_segments(session_id)]

    def get_segments(self, session_id: str) -> list[Row]:
        return self._read(lambda tx: segments.lineage(tx, session_id))

    # -- messages -------------------------------------------------------------------

    def append_message(
        self,
        session_id: str,
        role: str,
        content: Any = None,
        *,
        tool_calls: Any = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        reasoning: str | None = None,
        message_uid: str | None = None,
        token_count: int | None = None,
    ) -> Appended:
        message = {
            "role": role,
            "content": content,
            "tool_calls": tool_calls,
            "tool_call_id": tool_call_id,
            "tool_name": tool_name,
            "reasoning": reasoning,
            "message_uid": message_uid,
            "token_count": token_count,
        }
        return self.append_messages(session_id, [message])

    def append_messages(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        token_usage: TokenUsage | tuple[int, int] | None = None,
    ) -> Appended:
        """Write a batch in one transaction, each ``message_uid`` at most once.

        Returns where it landed: a segment ended by compression forwards to the tip.
        ``token_usage`` (a ``TokenUsage``, or input and output tokens) is added to that
        segment in the same transaction.
        """
        now = time.time()
        usage = TokenUsage.of(token_usage)

        def run(tx: Tx) -> Appended:
            segment = segments.writable(tx, session_id)
            target = segment["id"]
            rows = [segments.message_row(target, m, now) for m in messages]
            # A uid made here (random, ordered by time) cannot be stored yet: only the
            # caller's own uids are looked up (the UNIQUE index still guards them all).
            given = [
                r.message_uid for r, m in zip(rows, messages, strict=True) if m.get("message_uid")
            ]
            known = segments.existing_uids(tx, given)
            fresh: list[MessageRow] = []
            seen: set[str] = set()
            ids: list[int | None] = []  # per row: its index in fresh, None if known
            for row in rows:
                if row.message_uid in known or row.message_uid in seen:
                    ids.append(None)
                    continue
                seen.add(row.message_uid)
                fresh.append(row)
                ids.append(len(fresh) - 1)
            new_ids = segments.add_messages(tx, target, fresh, now) if fresh else []
            history.record(tx, segment["conversation_id"], segment["source"], new_ids, fresh)
            if usage:
                record_usage(tx, target, usage, now)
            return Appended(
                session_id=target,
                message_ids=tuple(None if i is None else new_ids[i] for i in ids),
                stored=len(fresh),
            )

        return self._write(run)

    def get_messages(self, session_id: str, *, include_undone: bool = False) -> list[Row]:
        """The segment's rows in order (its compacted context first, after a rotation)."""
        sql = f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?"
        if not include_undone:
            sql += " AND undone = 0"

        def run(tx: Tx) -> list[Row]:
            segments.require(tx, session_id)
            return [_decode(r) for r in _inlined(tx, tx.all(sql + " ORDER BY id", (session_id,)))]

        return self._read(run)

    def get_conversation_messages(self, session_id: str) -> list[Row]:
        """Every original message of the conversation, once each, oldest first."""
        return list(self.iter_conversation_messages(session_id))

    def iter_conversation_messages(
        self, session_id: str, *, include_summaries: bool = False, page: int = 1000
    ) -> Iterator[Row]:
        """Stream the logical conversation in pages (constant memory for huge ones)."""
        chain = self.get_segments(session_id)
        for segment in chain:
            after = 0
            while True:
                rows = self._read(
                    partial(_page_of, session_id=segment["id"], after=after, page=page)
                )
                for row in rows:
                    if not row["compacted"] or include_summaries and row["origin_id"] is None:
                        yield _decode(row)
                if len(rows) < page:
                    break
                after = rows[-1]["id"]

    def segment_stamp(self, session_id: str) -> SegmentStamp:
        """A segment's newest row id, row count and undone rows: changes whenever anyone
        writes to it or undoes part of it (an /undo or a deleted response elsewhere).

        Three indexed reads, not a scan: the count is the segment's ``message_count``,
        which every insert raises in its own transaction (under the row's lock, so on
        PostgreSQL too it moves with each commit, whatever order ids were drawn in)."""
        return self._read(lambda tx: _segment_stamp(tx, session_id))

    def last_message_id(self, session_id: str) -> int:
        """The compression watermark: the id of the segment's newest row (0 if none)."""
        row = self._read(
            lambda tx: tx.one(
                "SELECT COALESCE(MAX(id), 0) AS last FROM messages WHERE session_id = ?",
                (session_id,),
            )
        )
        return int(row["last"]) if row else 0

    def find_message(self, message_uid: str) -> Row | None:
        """The stored message with that ``message_uid`` (its segment in ``session_id``),
        or None: one indexed read, for ids handed out as the message's public name."""
        rows = self._read(
            lambda tx: _inlined(
                tx,
                tx.all(
                    f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE message_uid = ?", (message_uid,)
                ),
            )
        )
        return _decode(rows[0]) if rows else None

    def mark_undone(self, session_id: str, message_ids: Sequence[int]) -> int:
        """Mark messages of ``session_id``'s conversation undone, with every copy a
        rotation made of them: never reloaded on resume, still in the history. A summary
        of the tip's context that read one of them is retired with them (``undo``): the
        agent makes that context anew before its next model call."""
        return self._write(lambda tx: undo.mark(tx, session_id, message_ids))

    def trim_stopped_answer(
        self, conversation_id: str, *, after_message_id: int, kept: str
    ) -> bool:
        """Trim the conversation's stopped (partial) answer, its latest message, to
        ``kept``, the start of it a client sent back after message ``after_message_id``:
        the answer as stored stays in the history, undone, and ``kept`` follows it
        (``stopped``). False, changing nothing, when ``kept`` is not such a start."""
        return self._write(lambda tx: stopped.trim(tx, conversation_id, after_message_id, kept))

    def undo_reaches_summary(self, session_id: str, message_ids: Sequence[int]) -> bool:
        """Whether undoing these messages would retire a summary of the tip's context:
        one that read them (an undo that must then make a new context, or change nothing)."""

        def run(tx: Tx) -> bool:
            tip = segments.tip(tx, session_id)
            return bool(undo.summaries_reaching(tx, tip["id"], undo.origins_of(tx, message_ids)))

        return self._read(run) if message_ids else False

    def any_undone(self, message_uids: Sequence[str]) -> bool:
        """Whether a message with one of these uids (an original, a copy a rotation made,
        a summary) is marked undone: taken back since whoever holds them read them."""
        return self._read(lambda tx: undo.any_undone(tx, message_uids)) if message_uids else False

    def context_needs_rebuild(self, session_id: str) -> bool:
        """The segment's context lost a summary to an undo: it must be made again from
        the rows that remain before a model sees it."""
        return self._read(lambda tx: undo.holds_retired_summary(tx, session_id))

    def find_history(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        source: str = "api_server",
    ) -> history.HistoryMatch | None:
        """The stored conversation a client's history (``role``/``content`` dicts, oldest
        first) continues: where its longest stored prefix ends (``history``); None if
        no conversation the HTTP API started (from ``source``: ``api`` for an API
        principal) for the caller ``user_id`` (None: a caller that names none) holds
        even its first message."""
        prefixes = history.prefix_digests(messages)
        if not prefixes:
            return None
        return self._read(lambda tx: history.find(tx, prefixes, user_id, source))

    # -- conversations --------------------------------------------------------------

    def list_conversations(
        self,
        *,
        limit: int = 50,
        source: str | None = None,
        include_abandoned: bool = True,
        exclude_sources: Sequence[str] = (),
        workspace: str | None = None,
        user_id: str | None = None,
    ) -> list[Row]:
        """One entry per conversation, newest activity first (``source`` only, or none of
        ``exclude_sources``; with ``workspace``, an absolute directory, only those started
        in it or below it; with ``user_id``, only that user's).

        ``message_count`` counts the original messages that stand (``undone_count`` the
        undone ones, apart); ``last_role`` is the role of the conversation's newest
        standing row other than a compaction summary, so 'user' means its last message
        was never answered. Without
        ``include_abandoned``, a conversation that holds nothing but one unanswered
        first message (a failed first turn) is left out.
        """
        counted = (
            "(SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id"
            "   WHERE s.conversation_id = t.conversation_id AND m.compacted = 0"
            "   AND m.undone = {flag})"
        )
        sql = (
            "SELECT * FROM (SELECT t.conversation_id, t.id AS tip_id, r.title,"
            " t.title AS tip_title, t.source, t.model, r.started_at, t.last_active_at,"
            " t.ended_at, t.end_reason, t.segment_index AS segments,"
            f" {counted.format(flag=0)} AS message_count,"
            f" {counted.format(flag=1)} AS undone_count,"
            # A compaction summary (a compacted row that copies no message) is stored as
            # 'user' but asks nothing: it is not the conversation's last message.
            " (SELECT m.role FROM messages m WHERE m.session_id = t.id AND m.undone = 0"
            "   AND NOT (m.compacted = 1 AND m.origin_id IS NULL)"
            "   ORDER BY m.id DESC LIMIT 1) AS last_role"
            " FROM sessions t JOIN sessions r ON r.conversation_id = t.conversation_id"
            " AND r.segment_index = 1"
            " WHERE t.segment_index = (SELECT MAX(segment_index) FROM sessions x"
            "   WHERE x.conversation_id = t.conversation_id)"
        )
        params: list[Any] = []
        if source:
            sql += " AND t.source = ?"
            params.append(source)
        if exclude_sources:
            sql += f" AND t.source NOT IN ({', '.join('?' for _ in exclude_sources)})"
            params.extend(exclude_sources)
        if workspace:
            below = workspace.rstrip("/") + "/"
            sql += " AND (r.cwd = ? OR substr(r.cwd, 1, ?) = ?)"
            params.extend((workspace, len(below), below))
        if user_id is not None:
            sql += " AND r.user_id = ?"
            params.append(user_id)
        sql += ") AS c"
        if not include_abandoned:
            sql += (
                " WHERE NOT (c.segments = 1 AND c.message_count = 1 AND c.undone_count = 0"
                " AND c.last_role = 'user')"
            )
        sql += " ORDER BY c.last_active_at DESC LIMIT ?"
        params.append(limit)
        return self._read(lambda tx: tx.all(sql, params))

    def segment_message_counts(self, session_id: str) -> dict[str, tuple[int, int]]:
        """Per segment of the conversation: (standing, undone) original messages.

        Each original is counted in the segment it was written to, never again for the
        copies a rotation makes, so the standing counts add up to the conversation's.
        """

        def run(tx: Tx) -> dict[str, tuple[int, int]]:
            conversation = segments.require(tx, session_id)["conversation_id"]
            rows = tx.all(
                "SELECT m.session_id, m.undone, COUNT(*) AS n FROM messages m"
                " JOIN sessions s ON s.id = m.session_id"
                " WHERE s.conversation_id = ? AND m.compacted = 0"
                " GROUP BY m.session_id, m.undone",
                (conversation,),
            )
            counts: dict[str, list[int]] = {}
            for row in rows:
                counts.setdefault(row["session_id"], [0, 0])[1 if row["undone"] else 0] = int(
                    row["n"]
                )
            return {sid: (kept, undone) for sid, (kept, undone) in counts.items()}

        return self._read(run)

    def find_conversation_by_title(self, title: str) -> str | None:
        """The tip of the newest conversation titled ``title`` (root title)."""
        row = self._read(
            lambda tx: tx.one(
                "SELECT id FROM sessions WHERE title = ? AND lineage != 'compression'"
                " ORDER BY started_at DESC LIMIT 1",
                (title,),
            )
        )
        return self.resolve_tip(row["id"]) if row else None

    def delete_conversation(self, session_id: str) -> int:
        """Delete a whole conversation (every segment); returns the messages removed."""

        def run(tx: Tx) -> int:
            conversation = segments.require(tx, session_id)["conversation_id"]
            ids = [
                r["id"]
                for r in tx.all(
                    "SELECT id FROM sessions WHERE conversation_id = ?", (conversation,)
                )
            ]
            removed = 0
            held: set[str] = set()  # the blobs its messages refer to
            history.forget(tx, conversation)
            for sid in ids:
                rows = tx.all(
                    "SELECT id, content, compacted, content_parts FROM messages WHERE session_id = ?",
                    (sid,),
                )
                tx.unindex_messages(rows)
                held |= blobs.references_in(rows)
                removed += tx.run("DELETE FROM messages WHERE session_id = ?", (sid,))
                tx.run("DELETE FROM compression_locks WHERE session_id = ?", (sid,))
                tx.run("DELETE FROM segment_coverage WHERE session_id = ?", (sid,))
                tx.run("DELETE FROM session_model_usage WHERE session_id = ?", (sid,))
                routes.forget_segment(tx, sid)
            tx.run(
                "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN"
                f" ({', '.join('?' for _ in ids)}) AND conversation_id != ?",
                (*ids, conversation),
            )
            for sid in reversed(ids):
                tx.run("DELETE FROM sessions WHERE id = ?", (sid,))
            blobs.forget_unreferenced(tx, held)  # another conversation may share one
            return removed

        return self._write(run)

    def prune_conversations(self, older_than_days: float) -> int:
        """Delete conversations with no activity for ``older_than_days``; returns how many."""
        cutoff = time.time() - older_than_days * 86400
        stale = [
            c["conversation_id"]
            for c in self._read(
                lambda tx: tx.all(
                    "SELECT conversation_id FROM sessions GROUP BY conversation_id"
                    " HAVING MAX(last_active_at) < ?",
                    (cutoff,),
                )
            )
        ]
        for conversation_id in stale:
            self.delete_conversation(conversation_id)
        return len(stale)

    # -- search and export ----------------------------------------------------------

    def search_messages(
        self,
        query: str,
        *,
        limit: int = 20,
        source: str | None = None,
        conversation_id: str | None = None,
        user_id: str | None = None,
    ) -> list[Row]:
        """Full-text search over every original message of every segment, but those the
        user took back (undone rows stay stored, out of every answer: invariant 16).

        The query's words must all match; ``"a phrase"`` matches adjacent words and
        ``word*`` any word starting so. ``source``, ``conversation_id`` and ``user_id``
        narrow it to the conversations that have them.
        """
        terms = query_terms(query)
        if not terms:
            return []
        hits = self._read(
            lambda tx: tx.search(
                terms,
                limit=max(1, int(limit)),
                scope=SearchScope(source, conversation_id, user_id),
            )
        )
        return [
            {
                "message_id": h.message_id,
                "session_id": h.session_id,
                "conversation_id": h.conversation_id,
                "role": h.role,
                "snippet": snippet(h.content, terms),
                "created_at": h.created_at,
            }
            for h in hits
        ]

    def recall_messages(
        self,
        session_id: str,
        text: str,
        *,
        rows: int = 8,
        scan: int = 200,
        skip_tool: str | None = None,
    ) -> recall.Matches:
        """The standing original messages of ``session_id``'s whole conversation (every
        segment) that contain ``text`` (case-insensitive), oldest first: the first
        ``rows`` whole (a matching tool call followed by its results), the ids of up to
        ``scan``; not ``skip_tool``'s calls and results. Never another conversation's."""

        def run(tx: Tx) -> recall.Matches:
            found = recall.matching(tx, session_id, text, rows=rows, scan=scan, skip_tool=skip_tool)
            decoded = [_decode(r) for r in _inlined(tx, found.rows)]
            return recall.Matches(rows=decoded, ids=found.ids, capped=found.capped)

        return self._read(run)

    def recall_message(self, session_id: str, message_id: int) -> Row | None:
        """Stored message ``message_id`` (a compacted copy's original in its place) if it
        belongs to ``session_id``'s conversation, else None; an undone one is marked."""

        def run(tx: Tx) -> Row | None:
            row = recall.one(tx, session_id, int(message_id))
            return None if row is None else _decode(_inlined(tx, [row])[0])

        return self._read(run)

    def export_conversation(self, session_id: str, fmt: str = "jsonl") -> Iterator[str]:
        """Stream the whole logical conversation as ``jsonl`` or ``markdown`` text chunks."""
        return export.render(self, session_id, fmt)

    # -- the compression lease ------------------------------------------------------

    def try_acquire_compression_lock(
        self, session_id: str, holder: str, ttl_seconds: float = lease.DEFAULT_TTL
    ) -> bool:
        return self._write(
            lambda tx: lease.acquire(tx, session_id, holder, ttl_seconds, tx.clock())
        )

    def refresh_compression_lock(
        self, session_id: str, holder: str, ttl_seconds: float = lease.DEFAULT_TTL
    ) -> bool:
        return self._write(
            lambda tx: lease.refresh(tx, session_id, holder, ttl_seconds, tx.clock())
        )

    def release_compression_lock(self, session_id: str, holder: str) -> bool:
        return self._write(lambda tx: lease.release(tx, session_id, holder))

    def get_compression_lock_holder(self, session_id: str) -> str | None:
        """The live holder, or None when the lease is free, expired or reclaimable."""
        return self._read(lambda tx: lease.holder_of(tx, session_id, tx.clock()))

    def publish_compression_child(
        self,
        parent_session_id: str,
        *,
        holder: str,
        messages: Sequence[Mapping[str, Any]],
        watermark: int | None = None,
        child_session_id: str | None = None,
        seen_uids: Collection[str] | None = None,
        covered_uids: Collection[str] | None = None,
        stub_covered_uids: Collection[str] = (),
        undo_ids: Sequence[int] = (),
    ) -> str:
        """Rotate: end the parent and open its child with ``messages`` (invariant 2).

        ``covered_uids`` are the messages the summary model read: every other row of the
        parent as stored now is carried into the child after ``messages`` (invariant 14),
        and the coverage is recorded. ``stub_covered_uids`` (among them) were read as
        their stub, not whole: covered only if ``recall`` returns them verbatim (an
        original tool output of the conversation), else carried over too. Without it
        (older callers), parent rows above
        ``watermark``, or original rows whose uid is not in ``seen_uids``, are carried.
        A child whose context a provider would refuse is not published
        (``InvalidContextError``, invariant 15).

        ``undo_ids`` are marked undone first, in the same transaction (``mark_undone``): an
        undo whose rows a summary read lands together with the context made without
        them, or not at all (invariant 16).
        """
        now = time.time()

        def run(tx: Tx) -> str:
            if undo_ids:
                undo.mark(tx, parent_session_id, undo_ids)
            return rotation.publish(
                tx,
                parent_session_id,
                holder=holder,
                messages=messages,
                watermark=watermark,
                child_id=child_session_id,
                now=now,
                seen_uids=seen_uids,
                covered_uids=covered_uids,
                stub_covered_uids=stub_covered_uids,
            )

        return self._write(run)

    # -- health ---------------------------------------------------------------------

    def invariant_violations(self) -> list[str]:
        """Sentences describing any broken store invariant (empty when healthy)."""
        return self._read(_violations)

    def coverage_violations(self) -> list[str]:
        """Rows of rotated parents that their child neither copies nor covered in its
        summary (invariant 14), rows a summary covered by their stub that ``recall``
        cannot return verbatim, and anchors a summary showed that its child no longer
        shows, one sentence each (empty when every row is accounted for)."""

        def read(tx: Tx) -> tuple[list[Any], list[Any], list[tuple[str, str, str]]]:
            return (
                tx.all(_UNCOVERED_ROWS),
                tx.all(_UNRECALLABLE_STUBS),
                rotation.dropped_anchors(tx),
            )

        uncovered, unrecallable, dropped = self._read(read)
        return (
            [
                f"message {r['id']} of session {r['parent']} is neither in its compression child"
                f" {r['child']} nor in the summary that child holds"
                for r in uncovered
            ]
            + [
                f"message {r['origin_id']} is covered by its stub in the summary of session"
                f" {r['child']}, but recall cannot return it verbatim"
                for r in unrecallable
            ]
            + [
                f"the anchor {anchor!r} shown in the summary of session {parent} is shown"
                f" nowhere in its compression child {child}"
                for parent, child, anchor in dropped
            ]
        )


_UNCOVERED_ROWS = (
    "SELECT c.parent_session_id AS parent, c.id AS child, m.id FROM sessions c"
    " JOIN messages m ON m.session_id = c.parent_session_id"
    " WHERE c.lineage = 'compression' AND m.undone = 0"
    " AND NOT EXISTS (SELECT 1 FROM messages x WHERE x.session_id = c.id"
    "   AND COALESCE(x.origin_id, x.id) = COALESCE(m.origin_id, m.id))"
    " AND NOT EXISTS (SELECT 1 FROM segment_coverage k WHERE k.session_id = c.id"
    "   AND k.origin_id = COALESCE(m.origin_id, m.id))"
    " ORDER BY m.id"
)

# Coverage by stub (invariant 14): the row must be what ``recall`` returns verbatim, an
# original tool output of the child's conversation with its text (unless taken back
# since: an undo retires the summaries that covered it).
_UNRECALLABLE_STUBS = (
    "SELECT k.session_id AS child, k.origin_id FROM segment_coverage k"
    " JOIN sessions c ON c.id = k.session_id"
    " WHERE k.by_stub = 1 AND NOT EXISTS (SELECT 1 FROM messages m"
    "   JOIN sessions s ON s.id = m.session_id"
    "   WHERE m.id = k.origin_id AND s.conversation_id = c.conversation_id"
    "   AND (m.undone = 1 OR (m.role = 'tool' AND m.origin_id IS NULL AND m.content IS NOT NULL)))"
    " ORDER BY k.session_id, k.origin_id"
)


def _violations(tx: Tx) -> list[str]:
    problems = []
    for row in tx.all(
        "SELECT conversation_id, COUNT(*) AS n FROM sessions WHERE ended_at IS NULL"
        " GROUP BY conversation_id HAVING COUNT(*) > 1"
    ):
        problems.append(f"conversation {row['conversation_id']} has {row['n']} live tips")
    for row in tx.all(
        "SELECT parent_session_id, COUNT(*) AS n FROM sessions WHERE lineage = 'compression'"
        " GROUP BY parent_session_id HAVING COUNT(*) > 1"
    ):
        problems.append(f"session {row['parent_session_id']} has {row['n']} compression children")
    for row in tx.all(
        # By id, not clock: hosts' clocks disagree. A real orphan write got an id
        # above the child's first row.
        "SELECT s.id, COUNT(*) AS n FROM sessions s"
        " JOIN sessions c ON c.parent_session_id = s.id AND c.lineage = 'compression'"
        " JOIN messages m ON m.session_id = s.id"
        " WHERE s.end_reason = 'compression' AND m.compacted = 0"
        " AND m.id > (SELECT MIN(x.id) FROM messages x WHERE x.session_id = c.id)"
        " GROUP BY s.id"
    ):
        problems.append(
            f"session {row['id']} was ended by compression but has {row['n']} later messages"
        )
    return problems


def _page_of(tx: Tx, *, session_id: str, after: int, page: int) -> list[Row]:
    """Up to ``page`` rows of a segment after the row ``after``, in order."""
    rows = tx.all(
        f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND id > ?"
        " ORDER BY id LIMIT ?",
        (session_id, after, page),
    )
    return _inlined(tx, rows)


def _inlined(tx: Tx, rows: list[Row]) -> list[Row]:
    """Rows with the inline data their parts refer to put back (``blobs``)."""
    blobs.inline(tx, rows)
    return rows


def _decode(row: Row) -> Row:
    """A message row for callers, decoded in place (it is a fresh dict from the backend)."""
    if row["tool_calls"]:
        try:
            row["tool_calls"] = json.loads(row["tool_calls"])
        except (TypeError, ValueError):
            pass
    if row.pop("content_parts", 0) and row["content"]:
        try:
            row["content"] = json.loads(row["content"])
        except (TypeError, ValueError):
            pass
    row["compacted"] = row["compacted"] == 1
    row["undone"] = row["undone"] == 1
    return row


def _as_message(row: Mapping[str, Any]) -> Row:
    return {k: row.get(k) for k in (*SAID_COLUMNS, "token_count")}


class SegmentStamp(NamedTuple):
    """What a segment's history looked like when read: any write or undo changes it, so
    the agent's cached history is valid while the store's stamp equals its own."""

    newest_id: int
    rows: int
    undone: int


def _segment_stamp(tx: Tx, session_id: str) -> SegmentStamp:
    """``SessionDB.segment_stamp`` inside a transaction."""
    row = tx.one(
        "SELECT s.message_count AS n,"
        " (SELECT COALESCE(MAX(id), 0) FROM messages WHERE session_id = s.id) AS last,"
        " (SELECT COUNT(*) FROM messages WHERE session_id = s.id AND undone = 1)"
        " AS undone FROM sessions s WHERE s.id = ?",
        (session_id,),
    )
    if row is None:
        return SegmentStamp(0, 0, 0)
    return SegmentStamp(int(row["last"]), int(row["n"]), int(row["undone"]))
