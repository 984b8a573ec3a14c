"""``hermes_state.SessionDB``: Hermes Agent 0.19's SessionDB names over the hermes store.

A subclass of ``hermes.state.SessionDB`` that only adds names, positional orders and
return shapes; each method is one store transaction (or a composition of the store's
own methods), so the lease, tip routing and exactly-once rules apply unchanged. Where
hermes differs on purpose it says so: hermes never compresses in place, a
conversation is a chain of segments, and deleting a session deletes its conversation
(a segment cut out of a chain would leave the rest unreachable).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, TypeVar

from hermes.compat import listing, upkeep, usage
from hermes.compat import rows as shapes
from hermes.state import SessionDB as StoreSessionDB
from hermes.state import lease, segments
from hermes.state.backend import Row, Tx
from hermes.state.errors import SessionNotFoundError, StateError
from hermes.state.usage import TokenUsage

# create_session keywords of Hermes Agent that hermes has no column for (accepted, not kept).
_UNKEPT_SESSION_FIELDS = frozenset(
    {"model_config", "chat_id", "chat_type", "thread_id", "profile_name"}
)
T = TypeVar("T")
_SESSION_FIELDS = frozenset({"model", "system_prompt", "user_id", "session_key", "title", "cwd"})


class SessionDB(StoreSessionDB):
    """The hermes store with Hermes Agent 0.19's SessionDB surface on top."""

    sanitize_title = staticmethod(shapes.sanitize_title)
    _contains_cjk = staticmethod(shapes.contains_cjk)

    @property
    def _conn(self) -> Any:
        """SQLite: the store's connection yielding ``sqlite3.Row`` rows, as in Hermes
        Agent; None once closed (callers test ``db._conn is not None`` for "open")."""
        if getattr(self.backend, "_closed", False):
            return None
        conn = self.backend.conn  # type: ignore[attr-defined]
        shared = getattr(self.backend, "_shared", None)
        if shared is None:  # PostgreSQL: its own connection, as it is
            return conn
        return shapes.RowConnection(conn, shared.lock)

    def _execute_write(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(conn)`` in one write transaction, retried while the database is busy,
        as Hermes Agent's ``_execute_write`` does. ``fn`` must not commit: the
        transaction commits when it returns and rolls back if it raises. A closed store
        refuses (``StateError``: "The state store ... is closed")."""
        return self._write(lambda tx: fn(shapes.transaction_connection(tx)))

    # -- sessions -------------------------------------------------------------------

    def create_session(
        self,
        session_id: str | None = None,
        source: str | None = None,
        *,
        parent_session_id: str | None = None,
        **fields: Any,
    ) -> str:
        """Create a segment; an id that exists already is a no-op keeping its first row.

        With ``parent_session_id``: a compression child of a parent ended for
        compression (the parent's conversation goes on in it), otherwise a branch.
        """
        if source is None:
            raise TypeError("create_session() needs a source (cli, telegram, ...)")
        unknown = set(fields) - _SESSION_FIELDS - _UNKEPT_SESSION_FIELDS
        if unknown:
            raise TypeError(f"create_session() got unexpected keywords: {sorted(unknown)}")
        kept = {k: v for k, v in fields.items() if k in _SESSION_FIELDS}
        if session_id and parent_session_id:
            return self._write(
                lambda tx: _create_child(tx, session_id, parent_session_id, source, kept)
            )
        try:
            return super().create_session(session_id, source=source, **kept)
        except StateError:
            if session_id and self.get_session(session_id) is not None:
                return session_id
            raise

    def get_session(self, session_id: str) -> Row | None:
        """The session's row with every column, 0.19's (usage, cost, ``cwd``) too."""
        return self._read(lambda tx: tx.one("SELECT * FROM sessions WHERE id = ?", (session_id,)))

    def ensure_session(
        self, session_id: str, source: str = "unknown", model: str | None = None, **fields: Any
    ) -> str:
        return self.create_session(session_id, source, model=model, **fields)

    def update_system_prompt(self, session_id: str, system_prompt: str) -> None:
        self.set_system_prompt(session_id, system_prompt)

    def update_session_model(self, session_id: str, model: str) -> None:
        self.set_model(session_id, model)

    # 0.19's signature kept whole: a drop-in takes every keyword its callers pass.
    def update_token_counts(
        self,
        session_id: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        model: str | None = None,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        estimated_cost_usd: float | None = None,
        actual_cost_usd: float | None = None,
        cost_status: str | None = None,
        cost_source: str | None = None,
        pricing_version: str | None = None,
        billing_provider: str | None = None,
        billing_base_url: str | None = None,
        billing_mode: str | None = None,
        api_call_count: int = 0,
        absolute: bool = False,
    ) -> None:
        """Add a call's usage to the session (or with ``absolute`` set its running
        totals), with 0.19's meanings: see ``hermes.compat.usage``."""
        self.ensure_session(session_id, "unknown", model=model)
        update = usage.TokenUpdate(
            TokenUsage(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cache_read_tokens=cache_read_tokens,
                cache_write_tokens=cache_write_tokens,
                reasoning_tokens=reasoning_tokens,
                api_calls=api_call_count,
                model=model,
            ),
            estimated_cost_usd=estimated_cost_usd,
            actual_cost_usd=actual_cost_usd,
            cost_status=cost_status,
            cost_source=cost_source,
            pricing_version=pricing_version,
            billing_provider=billing_provider,
            billing_base_url=billing_base_url,
            billing_mode=billing_mode,
        )
        self._write(lambda tx: usage.apply(tx, session_id, update, absolute=absolute))

    # -- messages -------------------------------------------------------------------

    # 0.19's signature kept whole, positional order included: a drop-in takes every call.
    def append_message(  # type: ignore[override]
        self,
        session_id: str,
        role: str,
        content: Any = None,
        tool_name: str | None = None,
        tool_calls: Any = None,
        tool_call_id: str | None = None,
        token_count: int | None = None,
        finish_reason: str | None = None,
        reasoning: str | None = None,
        reasoning_content: str | None = None,
        reasoning_details: Any = None,
        codex_reasoning_items: Any = None,
        codex_message_items: Any = None,
        platform_message_id: str | None = None,
        observed: bool = False,
        effect_disposition: str | None = None,
        timestamp: Any = None,
        api_content: str | None = None,
        *,
        message_uid: str | None = None,
    ) -> int | None:
        """Store one message (where the store routes it) and return its id; every
        field goes to 0.19's column of that name (structured ones as JSON)."""
        message = {
            "role": role,
            "content": content,
            "tool_calls": tool_calls or None,
            "tool_call_id": tool_call_id,
            "tool_name": tool_name,
            "reasoning": reasoning,
            "message_uid": message_uid,
            "token_count": token_count,
            "finish_reason": finish_reason,
            "reasoning_content": reasoning_content,
            "reasoning_details": reasoning_details,
            "codex_reasoning_items": codex_reasoning_items,
            "codex_message_items": codex_message_items,
            "platform_message_id": platform_message_id,
            "observed": observed,
            "effect_disposition": effect_disposition,
            "api_content": api_content if isinstance(api_content, str) else None,
        }
        if timestamp is not None:
            message["created_at"] = float(getattr(timestamp, "timestamp", lambda: timestamp)())
        return self.append_messages(session_id, [message]).message_id

    def get_messages(
        self,
        session_id: str,
        include_inactive: bool = False,
        limit: int | None = None,
        offset: int = 0,
        *,
        include_undone: bool = False,
    ) -> list[Row]:
        """The segment's rows in order, with Hermes Agent's columns (``timestamp``,
        ``active``, ``finish_reason``, ``reasoning_content``, ...); undone rows (Hermes
        Agent's rewound, inactive ones) only with ``include_inactive``."""
        try:
            found = super().get_messages(
                session_id, include_undone=include_inactive or include_undone
            )
        except SessionNotFoundError:
            return []
        archived = self._archived_in_place(session_id) if include_inactive else []
        end = None if limit is None else offset + max(0, int(limit))
        rows = [*archived, *found][offset:end]
        shaped = [shapes.message_row(r) for r in self._with_provider_fields(rows)]
        for row in shaped:
            if row["session_id"] != session_id:  # archived: 0.19 lists it as the session's
                row["session_id"], row["active"] = session_id, 0
        return shaped

    def _archived_in_place(self, session_id: str) -> list[Row]:
        """The rows Hermes Agent archived when it compacted ``session_id`` in place, which
        hermes keeps in the segment before it (``<id>~archive``, hermes.compat.importer)."""
        archive = self.get_session(session_id + listing.ARCHIVE_SUFFIX)
        if archive is None or archive["conversation_id"] != session_id:
            return []
        return super().get_messages(archive["id"], include_undone=True)

    def get_messages_as_conversation(
        self,
        session_id: str,
        include_ancestors: bool = False,
        include_inactive: bool = False,
        repair_alternation: bool = False,
    ) -> list[Row]:
        """OpenAI-format messages of the segment, or with ``include_ancestors`` of the
        conversation up to it (every original message once). ``repair_alternation`` is
        accepted: hermes validates the context before every model call instead."""
        if not include_ancestors:
            rows = self.get_messages(session_id, include_inactive)
        else:
            rows = list(self._history_up_to(session_id))
            if not include_inactive:
                rows = [r for r in rows if not r["undone"]]
            rows = self._with_provider_fields(rows)
        return [shapes.as_conversation(r) for r in rows]

    def get_messages_around(
        self, session_id: str, around_message_id: int, window: int = 5
    ) -> dict[str, Any]:
        """Up to ``window`` rows of the segment each side of the message
        ``around_message_id`` (undone ones too, as 0.19's), with how many each side were
        found; an empty window when that message is not in the segment."""
        rows = self.get_messages(session_id, include_inactive=True)
        at = next((i for i, r in enumerate(rows) if r["id"] == around_message_id), None)
        if at is None:
            return {"window": [], "messages_before": 0, "messages_after": 0}
        window = max(0, int(window))
        start = max(0, at - window)
        return {
            "window": rows[start : at + window + 1],
            "messages_before": at - start,
            "messages_after": len(rows[at + 1 : at + window + 1]),
        }

    def get_anchored_view(
        self,
        session_id: str,
        around_message_id: int,
        window: int = 5,
        bookend: int = 3,
        keep_roles: tuple[str, ...] | None = ("user", "assistant"),
    ) -> dict[str, Any]:
        """``get_messages_around`` with rows of other roles dropped (the anchor kept),
        plus the segment's first and last ``bookend`` rows with text outside the window
        (``bookend_start``/``bookend_end``); ``keep_roles=None`` keeps every role."""
        around = self.get_messages_around(session_id, around_message_id, window)
        if not around["window"]:
            return {**around, "bookend_start": [], "bookend_end": []}

        def kept(row: Row) -> bool:
            return keep_roles is None or row["role"] in keep_roles

        first, last = around["window"][0]["id"], around["window"][-1]["id"]
        rows = [
            r
            for r in self.get_messages(session_id, include_inactive=True)
            if kept(r) and r["content"] and not first <= r["id"] <= last
        ]
        bookend = max(0, int(bookend))
        return {
            **around,
            "window": [r for r in around["window"] if r["id"] == around_message_id or kept(r)],
            "bookend_start": [r for r in rows if r["id"] < first][:bookend],
            "bookend_end": [r for r in rows if r["id"] > last][-bookend:] if bookend else [],
        }

    def _with_provider_fields(self, rows: list[Row]) -> list[Row]:
        """``rows`` with 0.19's provider columns, which the store's reads leave out."""
        ids = [r["id"] for r in rows]
        found: dict[int, Row] = {}
        for start in range(0, len(ids), 500):
            found.update(
                (r["id"], r)
                for r in self._read(partial(_provider_fields, ids=ids[start : start + 500]))
            )
        return [{**found.get(r["id"], {}), **r} for r in rows]

    def _history_up_to(self, session_id: str) -> Iterable[Row]:
        chain = self.get_lineage(session_id) if self.get_session(session_id) else []
        wanted = set(chain[: chain.index(session_id) + 1]) if chain else set()
        return (
            (r for r in self.iter_conversation_messages(session_id) if r["session_id"] in wanted)
            if wanted
            else ()
        )

    def message_count(self, session_id: str | None = None) -> int:
        sql, params = "SELECT COUNT(*) AS n FROM messages", []
        if session_id:
            sql, params = sql + " WHERE session_id = ?", [session_id]
        return self._count(sql, params)

    def session_count(
        self,
        source: str | None = None,
        *,
        exclude_sources: list[str] | None = None,
        min_message_count: int = 0,
        exclude_children: bool = False,
        **_filters: Any,
    ) -> int:
        """Segments, or with ``exclude_children`` conversations (roots and branches)."""
        where, params = listing.session_filters("s", source, exclude_sources, min_message_count)
        if exclude_children:
            where.append("s.lineage != 'compression'")
        sql = "SELECT COUNT(*) AS n FROM sessions s" + listing.where(where)
        return self._count(sql, params)

    def _count(self, sql: str, params: Sequence[Any]) -> int:
        """The ``n`` of a ``SELECT COUNT(*) AS n`` (which always returns one row)."""
        row = self._read(lambda tx: tx.one(sql, params))
        assert row is not None
        return int(row["n"])

    # -- titles ---------------------------------------------------------------------

    def set_session_title(self, session_id: str, title: str | None) -> bool:
        """Set (or clear) a title; False for an unknown id. A title held by another
        conversation is refused with ValueError; one held by another segment of the
        same conversation moves here."""
        clean = shapes.sanitize_title(title)
        return self._write(lambda tx: _set_title(tx, session_id, clean))

    def set_auto_title_if_empty(self, session_id: str, title: str) -> bool:
        """An automatic title (hermes-webui's), set only while the conversation has none,
        in the same transaction as the check so a rename made meanwhile stands; True when
        set. Refused and kept titles as in ``set_session_title``."""
        clean = shapes.sanitize_title(title)
        return self._write(lambda tx: _set_title(tx, session_id, clean, only_if_empty=True))

    def get_next_title_in_lineage(self, base_title: str) -> str:
        """``base_title`` (without a ``#N``) if no session holds it, else with the next
        free number after the highest ``#N`` in use: "my project #3"."""
        base = shapes.title_base(base_title)
        found = self._read(
            lambda tx: tx.all(
                "SELECT title FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\\'",
                (base, shapes.like_prefix(f"{base} #")),
            )
        )
        return shapes.next_title(base, [r["title"] for r in found])

    def get_session_title(self, session_id: str) -> str | None:
        row = self.get_session(session_id)
        return row["title"] if row else None

    def get_session_by_title(self, title: str) -> Row | None:
        row = self._read(
            lambda tx: tx.one("SELECT id FROM sessions WHERE title = ? LIMIT 1", (title,))
        )
        return self.get_session(row["id"]) if row else None

    def resolve_session_by_title(self, title: str) -> str | None:
        """The live segment of the newest conversation titled ``title`` or ``title #N``."""
        row = self._read(
            lambda tx: tx.one(
                "SELECT id FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\\'"
                " ORDER BY started_at DESC LIMIT 1",
                (title, shapes.like_prefix(f"{title} #")),
            )
        )
        return self.resolve_tip(row["id"]) if row else None

    # -- lookup ---------------------------------------------------------------------

    def resolve_session_id(self, session_id_or_prefix: str) -> str | None:
        """The id itself, or the one id it is a prefix of (None: none or ambiguous)."""
        if not session_id_or_prefix:
            return None
        if self.get_session(session_id_or_prefix):
            return session_id_or_prefix
        found = self._read(
            lambda tx: tx.all(
                "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 2",
                (shapes.like_prefix(session_id_or_prefix),),
            )
        )
        return found[0]["id"] if len(found) == 1 else None

    def get_compression_tip(self, session_id: str) -> str:
        tip = self.find_tip(session_id) if session_id else None
        return tip["id"] if tip else session_id

    def get_compression_lineage(self, session_id: str) -> list[str]:
        return self.get_lineage(session_id) if self.get_session(session_id) else []

    def resolve_resume_session_id(self, session_id: str) -> str:
        """The segment a resume of ``session_id`` goes on in: its conversation's live
        one (a compacted segment starts with its context, so it holds the newest
        messages); branches are conversations of their own and not followed."""
        return self.get_compression_tip(session_id) if session_id else session_id

    def get_conversation_root(self, session_id: str) -> str:
        row = self.get_session(session_id) if session_id else None
        return row["conversation_id"] if row else session_id

    # -- search and listing (see ``listing``) ---------------------------------------

    def search_messages(
        self,
        query: str,
        source_filter: list[str] | None = None,
        exclude_sources: list[str] | None = None,
        role_filter: list[str] | None = None,
        limit: int = 20,
        offset: int = 0,
        sort: str | None = None,
        include_inactive: bool = False,
        *,
        source: str | None = None,
        conversation_id: str | None = None,
        user_id: str | None = None,
    ) -> list[Row]:
        """Full-text hits, newest first, with Hermes Agent's ``source``, ``timestamp``
        and ``context`` (the message before and after) added to the store's fields.
        ``sort`` is accepted; hermes always orders newest first."""
        return listing.search(
            self,
            super().search_messages,
            query,
            listing.SearchFilter(
                sources=source_filter or ([source] if source else None),
                exclude_sources=exclude_sources,
                roles=role_filter,
                include_undone=include_inactive,
                conversation_id=conversation_id,
                user_id=user_id,
            ),
            limit=limit,
            offset=offset,
        )

    def search_sessions(
        self, source: str | None = None, limit: int = 20, offset: int = 0
    ) -> list[Row]:
        return listing.sessions(self, source, limit, offset)

    def list_sessions_rich(
        self,
        source: str | None = None,
        exclude_sources: list[str] | None = None,
        *,
        limit: int = 20,
        offset: int = 0,
        include_children: bool = False,
        min_message_count: int = 0,
        project_compression_tips: bool = True,
        order_by_last_active: bool = False,
        **_filters: Any,
    ) -> list[Row]:
        """One row per conversation (its root projected to its live segment), or every
        segment with ``include_children``; each with ``preview`` and ``last_active``."""
        return listing.rich(
            self,
            # 0.19's keywords gathered by name into one query value.
            listing.RichQuery(
                source=source,
                exclude_sources=exclude_sources,
                limit=limit,
                offset=offset,
                include_children=include_children,
                min_message_count=min_message_count,
                project=project_compression_tips,
                by_last_active=order_by_last_active,
            ),
        )

    # -- export and deletion --------------------------------------------------------

    def export_session(self, session_id: str) -> Row | None:
        session = self.get_session(session_id)
        return {**session, "messages": self.get_messages(session_id)} if session else None

    def export_all(self, source: str | None = None) -> list[Row]:
        return [
            {**s, "messages": self.get_messages(s["id"])}
            for s in self.search_sessions(source=source, limit=1_000_000)
        ]

    def delete_session(self, session_id: str, sessions_dir: Any = None) -> bool:
        """Delete the conversation holding ``session_id`` (all its segments)."""
        if self.get_session(session_id) is None:
            return False
        self.delete_conversation(session_id)
        return True

    def prune_sessions(
        self,
        older_than_days: float | None = 90,
        source: str | None = None,
        sessions_dir: Any = None,
        **_filters: Any,
    ) -> int:
        """Delete ended conversations whose live segment started ``older_than_days``
        ago (and their transcript files in ``sessions_dir``); returns segments deleted."""
        return upkeep.prune(self, older_than_days, source, sessions_dir)

    def vacuum(self) -> int:
        return upkeep.vacuum(self)

    def maybe_auto_prune_and_vacuum(
        self,
        retention_days: int = 90,
        min_interval_hours: int = 24,
        vacuum: bool = True,
        sessions_dir: Any = None,
    ) -> dict[str, Any]:
        return upkeep.auto_prune_and_vacuum(
            self, retention_days, min_interval_hours, vacuum, sessions_dir
        )

    # -- state_meta -----------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A value of Hermes Agent's ``state_meta`` key/value table (None if unset)."""
        return upkeep.get_meta(self, key)

    def set_meta(self, key: str, value: str) -> None:
        upkeep.set_meta(self, key, value)

    # -- the compression lease ------------------------------------------------------

    def try_acquire_compression_lock(
        self, session_id: str, holder: str, ttl_seconds: float = lease.DEFAULT_TTL
    ) -> bool:
        """Take the lease; False for an empty id or holder. An id the store does not know
        yet can be leased, as in Hermes Agent (a compression may start before its
        session's row is written)."""
        if not session_id or not holder:
            return False
        return super().try_acquire_compression_lock(session_id, holder, ttl_seconds)

    def refresh_compression_lock(
        self, session_id: str, holder: str, ttl_seconds: float = lease.DEFAULT_TTL
    ) -> bool:
        if not session_id or not holder:
            return False
        return super().refresh_compression_lock(session_id, holder, ttl_seconds)

    def release_compression_lock(self, session_id: str, holder: str) -> bool:
        return bool(session_id) and super().release_compression_lock(session_id, holder)

    def get_compression_lock_holder(self, session_id: str) -> str | None:
        return super().get_compression_lock_holder(session_id) if session_id else None


def _provider_fields(tx: Tx, ids: list[int]) -> list[Row]:
    marks = ", ".join("?" for _ in ids)
    sql = f"SELECT id, {shapes.PROVIDER_COLUMNS} FROM messages WHERE id IN ({marks})"
    return tx.all(sql, ids)


def _create_child(
    tx: Tx, session_id: str, parent_id: str, source: str, fields: dict[str, Any]
) -> str:
    """Insert ``session_id`` under ``parent_id``: the parent's next segment when the
    parent is its conversation's tip ended for compression, else a new branch."""
    if segments.get(tx, session_id) is not None:
        return session_id
    parent = segments.require(tx, parent_id)
    tip = segments.tip_of_conversation(tx, parent["conversation_id"])
    continues = parent["end_reason"] == segments.COMPRESSION and tip["id"] == parent["id"]
    now = time.time()
    values: dict[str, Any] = {
        "id": session_id,
        "parent_session_id": parent_id,
        "source": source,
        "started_at": now,
        "last_active_at": now,
        **fields,
    }
    if continues:
        index = parent["segment_index"] + 1
        for key in ("user_id", "session_key", "model"):
            values.setdefault(key, parent[key])
        values.setdefault("title", segments.numbered_title(parent["title"], index))
        values |= {
            "conversation_id": parent["conversation_id"],
            "lineage": "compression",
            "segment_index": index,
        }
    else:
        values |= {"conversation_id": session_id, "lineage": "branch", "segment_index": 1}
    segments.insert(tx, values)
    return session_id


def _set_title(tx: Tx, session_id: str, title: str | None, *, only_if_empty: bool = False) -> bool:
    row = segments.get(tx, session_id)
    if row is None:
        return False
    if only_if_empty and tx.one(
        "SELECT 1 FROM sessions WHERE conversation_id = ? AND title IS NOT NULL",
        (row["conversation_id"],),
    ):
        return False
    if title:
        holder = tx.one(
            "SELECT id, conversation_id FROM sessions WHERE title = ? AND id != ?",
            (title, session_id),
        )
        if holder and holder["conversation_id"] != row["conversation_id"]:
            raise ValueError(f"Title '{title}' is already in use by session {holder['id']}")
        if holder:
            tx.run("UPDATE sessions SET title = NULL WHERE id = ?", (holder["id"],))
    tx.run("UPDATE sessions SET title = ? WHERE id = ?", (title, session_id))
    return True
