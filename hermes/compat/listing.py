"""Hermes Agent's read queries over the hermes store: search with filters, session lists.

Each function reads through the store's own read transactions. Segments are rows of
``sessions``; a conversation's root is its first segment (``segment_index`` 1, whose id
names the conversation but for an imported in-place compaction) and its live segment
the one with the highest ``segment_index``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes.compat import rows as shapes
from hermes.state import SessionDB, segments
from hermes.state.backend import Row, Tx

_PREVIEW = (
    "COALESCE((SELECT SUBSTR(m.content, 1, 63) FROM messages m WHERE m.session_id = {0}.id"
    " AND m.role = 'user' AND m.content IS NOT NULL AND m.compacted = 0"
    " ORDER BY m.id LIMIT 1), '') AS preview_raw"
)
_TIP = (
    "t.conversation_id = r.conversation_id AND t.segment_index = (SELECT MAX(x.segment_index)"
    " FROM sessions x WHERE x.conversation_id = r.conversation_id)"
)


def session_filters(
    alias: str, source: str | None, exclude: list[str] | None, min_messages: int = 0
) -> tuple[list[str], list[Any]]:
    """WHERE clauses (and their parameters) on ``alias``'s source and message count."""
    where: list[str] = []
    params: list[Any] = []
    if source:
        where.append(f"{alias}.source = ?")
        params.append(source)
    if exclude:
        where.append(f"{alias}.source NOT IN ({', '.join('?' for _ in exclude)})")
        params.extend(exclude)
    if min_messages > 0:
        where.append(f"{alias}.message_count >= ?")
        params.append(min_messages)
    return where, params


def where(clauses: list[str]) -> str:
    return f" WHERE {' AND '.join(clauses)}" if clauses else ""


# -- search ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchFilter:
    sources: list[str] | None = None
    exclude_sources: list[str] | None = None
    roles: list[str] | None = None
    include_undone: bool = False
    conversation_id: str | None = None
    user_id: str | None = None

    def admits(self, hit: dict[str, Any]) -> bool:
        return (
            (not self.sources or hit["source"] in self.sources)
            and (not self.exclude_sources or hit["source"] not in self.exclude_sources)
            and (not self.roles or hit["role"] in self.roles)
            and (self.include_undone or not hit["undone"])
        )


# The segment holding what Hermes Agent archived when it compacted a session in place
# (hermes.compat.importer): its rows were that session's, so hits name that session.
ARCHIVE_SUFFIX = "~archive"


def known_session_id(session_id: str) -> str:
    """The Hermes Agent session a segment's rows belonged to: an imported archive
    segment's rows were the session's it was split from."""
    return session_id.removesuffix(ARCHIVE_SUFFIX)


def search(
    db: SessionDB,
    store_search: Callable[..., list[Row]],
    query: str,
    wanted: SearchFilter,
    *,
    limit: int,
    offset: int,
) -> list[Row]:
    """The store's search, filtered; fetches more hits until the page is full or the
    index has no more, so ``limit`` and ``offset`` count filtered hits.

    On top of the store's rules, as Hermes Agent 0.19 searches: ``a OR b`` finds either,
    a CJK query without spaces is matched as the literal text it is (``100%完成``), and
    the tool calls and tool names of messages are searched too (the index holds text)."""
    need = max(0, int(offset)) + max(1, int(limit))
    fetch = need
    while True:
        hits, exhausted = _hits(db, store_search, query, wanted, fetch)
        kept = [h for h in _with_sessions(db, hits) if wanted.admits(h)]
        if len(kept) >= need or exhausted:
            break
        fetch *= 4
    page = kept[offset : offset + max(1, int(limit))]
    for hit in page:
        hit["context"] = _context(db, hit)
        hit["session_id"] = known_session_id(hit["session_id"])
    return page


def _hits(
    db: SessionDB,
    store_search: Callable[..., list[Row]],
    query: str,
    wanted: SearchFilter,
    fetch: int,
) -> tuple[list[Row], bool]:
    """Up to ``fetch`` hits per alternative of the query, newest first, each once; and
    whether every source ran dry."""
    found: dict[int, Row] = {}
    exhausted = True
    for part in _alternatives(query):
        hits = store_search(
            part, limit=fetch, conversation_id=wanted.conversation_id, user_id=wanted.user_id
        )
        exhausted = exhausted and len(hits) < fetch
        literal = _literal_cjk(part)
        for hit in [*hits, *_tool_field_hits(db, part, wanted, fetch)]:
            if literal and not _holds_literally(db, hit, literal):
                continue
            found.setdefault(hit["message_id"], hit)
    ordered = sorted(found.values(), key=lambda h: (h["created_at"], h["message_id"]), reverse=True)
    return ordered, exhausted


def _alternatives(query: str) -> list[str]:
    """The parts of ``a OR b`` (a bare OR between terms), or the query itself."""
    parts = [p.strip() for p in _OR.split(query or "")]
    parts = [p for p in parts if p and p.upper() != "OR"]
    return parts or [query]


_OR = re.compile(r"\s+OR\s+")


def _literal_cjk(part: str) -> str | None:
    """A CJK query without spaces or quotes is matched as literal text, as 0.19 does."""
    text = part.strip()
    if not shapes.contains_cjk(text) or any(c.isspace() or c == '"' for c in text):
        return None
    return text


def _holds_literally(db: SessionDB, hit: Row, text: str) -> bool:
    row = db._read(
        lambda tx: tx.one(
            "SELECT content, tool_name FROM messages WHERE id = ?", (hit["message_id"],)
        )
    )
    haystack = f"{(row or {}).get('content') or ''} {(row or {}).get('tool_name') or ''}"
    return text.lower() in haystack.lower()


def _tool_field_hits(db: SessionDB, part: str, wanted: SearchFilter, fetch: int) -> list[Row]:
    """Original messages whose tool calls (names, arguments) or tool name hold every
    word of ``part``, newest first, as search hits."""
    words = [w.strip('"*') for w in part.split()]
    words = [w for w in words if w]
    if not words:
        return []
    field = "LOWER(COALESCE(m.tool_calls, '') || ' ' || COALESCE(m.tool_name, ''))"
    clauses = ["m.compacted = 0", "(m.tool_calls IS NOT NULL OR m.tool_name IS NOT NULL)"]
    clauses += [f"{field} LIKE ? ESCAPE '\\'" for _ in words]
    params: list[Any] = [f"%{shapes.like_prefix(w.lower())[:-1]}%" for w in words]
    if wanted.conversation_id:
        clauses.append("s.conversation_id = ?")
        params.append(wanted.conversation_id)
    if wanted.user_id:  # one user's search never shows another's messages
        clauses.append("s.user_id = ?")
        params.append(wanted.user_id)
    sql = (
        "SELECT m.id, m.session_id, s.conversation_id, m.role, m.tool_calls, m.tool_name,"
        " m.created_at FROM messages m JOIN sessions s ON s.id = m.session_id"
        + where(clauses)
        + " ORDER BY m.id DESC LIMIT ?"
    )
    rows = db._read(lambda tx: tx.all(sql, [*params, int(fetch)]))
    return [
        {
            "message_id": r["id"],
            "session_id": r["session_id"],
            "conversation_id": r["conversation_id"],
            "role": r["role"],
            "snippet": " ".join(x for x in (r["tool_name"], r["tool_calls"]) if x)[:160],
            "created_at": r["created_at"],
        }
        for r in rows
    ]


def _with_sessions(db: SessionDB, hits: list[Row]) -> list[Row]:
    """Hits with their message's and segment's fields in Hermes Agent's names."""
    if not hits:
        return []
    ids = [h["message_id"] for h in hits]
    marks = ", ".join("?" for _ in ids)
    found = db._read(
        lambda tx: tx.all(
            "SELECT m.id, m.undone, s.source, s.model, s.started_at FROM messages m"
            f" JOIN sessions s ON s.id = m.session_id WHERE m.id IN ({marks})",
            ids,
        )
    )
    extra = {r["id"]: r for r in found}
    return [
        {
            **h,
            "id": h["message_id"],
            "timestamp": h["created_at"],
            "source": extra[h["message_id"]]["source"],
            "model": extra[h["message_id"]]["model"],
            "session_started": extra[h["message_id"]]["started_at"],
            "undone": bool(extra[h["message_id"]]["undone"]),
        }
        for h in hits
        if h["message_id"] in extra
    ]


def _context(db: SessionDB, hit: dict[str, Any]) -> list[dict[str, str]]:
    """The hit with the message before and after it in its segment (text, 200 chars)."""
    sid, mid = hit["session_id"], hit["message_id"]

    def run(tx: Tx) -> list[int]:
        before = tx.one(
            "SELECT id FROM messages WHERE session_id = ? AND id < ? ORDER BY id DESC LIMIT 1",
            (sid, mid),
        )
        after = tx.one(
            "SELECT id FROM messages WHERE session_id = ? AND id > ? ORDER BY id LIMIT 1",
            (sid, mid),
        )
        return [r["id"] for r in (before, {"id": mid}, after) if r]

    wanted = set(db._read(run))
    rows = [r for r in db.get_messages(sid, include_undone=True) if r["id"] in wanted]
    return [{"role": r["role"], "content": shapes.preview(r["content"])} for r in rows]


# -- session lists --------------------------------------------------------------------


def sessions(db: SessionDB, source: str | None, limit: int, offset: int) -> list[Row]:
    """Every segment, most recently active first, with ``last_active``."""
    clauses, params = session_filters("s", source, None)
    sql = (
        "SELECT s.id FROM sessions s"
        + where(clauses)
        + " ORDER BY s.last_active_at DESC, s.started_at DESC, s.id DESC LIMIT ? OFFSET ?"
    )
    found = _with_segments(db, sql, [*params, int(limit), int(offset)])
    return [_with_last_active(segment) for _, segment in found]


def _with_segments(db: SessionDB, sql: str, params: list[Any]) -> list[tuple[Row, Row]]:
    """Each row ``sql`` finds with the segment its ``id`` names, in one read transaction;
    a segment deleted meanwhile (on a store that reads no snapshot) is left out."""

    def run(tx: Tx) -> list[tuple[Row, Row]]:
        pairs = ((r, segments.get(tx, r["id"])) for r in tx.all(sql, params))
        return [(r, segment) for r, segment in pairs if segment is not None]

    return db._read(run)


def _with_last_active(row: dict[str, Any]) -> dict[str, Any]:
    row["last_active"] = row["last_active_at"]
    return row


@dataclass(frozen=True)
class RichQuery:
    source: str | None = None
    exclude_sources: list[str] | None = None
    limit: int = 20
    offset: int = 0
    include_children: bool = False
    min_message_count: int = 0
    project: bool = True
    by_last_active: bool = False


def rich(db: SessionDB, q: RichQuery) -> list[Row]:
    """Hermes Agent's ``list_sessions_rich``: roots projected to their live segments."""
    clauses, params = session_filters("r", q.source, q.exclude_sources, q.min_message_count)
    if not q.include_children:
        clauses.append("r.lineage != 'compression'")
    project = q.project and not q.include_children
    shown = "t" if project else "r"
    join = f" JOIN sessions t ON {_TIP}" if project else ""
    order = f"{shown}.last_active_at" if q.by_last_active else "r.started_at"
    sql = (
        f"SELECT r.id AS root_id, r.conversation_id, r.started_at AS root_started, {shown}.id,"
        f" {_PREVIEW.format(shown)} FROM sessions r{join}"
        + where(clauses)
        + f" ORDER BY {order} DESC, r.id DESC LIMIT ? OFFSET ?"
    )
    found = _with_segments(db, sql, [*params, int(q.limit), int(q.offset)])
    return [_rich_row(r, segment, project) for r, segment in found]


def _rich_row(found: Row, segment: Row, projected: bool) -> Row:
    row = _with_last_active(segment)
    raw = (found["preview_raw"] or "").replace("\n", " ").replace("\r", " ").strip()
    row["preview"] = raw[:60] + ("..." if len(raw) > 60 else "")
    if projected and found["id"] != found["root_id"]:
        row["started_at"] = found["root_started"]
    if projected and found["id"] != found["conversation_id"]:
        row["_lineage_root_id"] = found["conversation_id"]
    return row


def prunable(
    db: SessionDB, cutoff: float | None, source: str | None
) -> list[tuple[str, list[str]]]:
    """(conversation id, its segment ids) of conversations whose live segment has ended
    and started before ``cutoff`` (None: any age), rooted in ``source``."""
    clauses = ["t.ended_at IS NOT NULL", "r.lineage != 'compression'"]
    params: list[Any] = []
    if cutoff is not None:
        clauses.append("t.started_at < ?")
        params.append(cutoff)
    if source:
        clauses.append("r.source = ?")
        params.append(source)
    sql = (
        f"SELECT r.conversation_id FROM sessions r JOIN sessions t ON {_TIP}"
        + where(clauses)
        + " AND r.segment_index = 1"
    )

    def run(tx: Tx) -> list[tuple[str, list[str]]]:
        found = []
        for row in tx.all(sql, params):
            ids = tx.all(
                "SELECT id FROM sessions WHERE conversation_id = ? ORDER BY segment_index",
                (row["conversation_id"],),
            )
            found.append((row["conversation_id"], [r["id"] for r in ids]))
        return found

    return db._read(run)
