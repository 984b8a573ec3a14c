"""Small helpers the store tests share: the store's location, rotating a segment, and
reading rows behind the API.

This module imports no pytest, so spawned worker processes can unpickle a StoreSpec
cheaply.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes.state import SessionDB, make_holder

SUMMARY = {"role": "user", "content": "[CONTEXT COMPACTION] earlier turns, summarised"}
LAST = "last"  # watermark: the segment's newest row at the time of the rotation


@dataclass(frozen=True)
class StoreSpec:
    """Where a test store lives; picklable, so a spawned process can open it too."""

    kind: str  # "sqlite" or "postgres"
    path: str | None = None  # SQLite: the database file
    url: str | None = None  # PostgreSQL: a URL whose search_path is the test's schema

    def open(self, **kwargs: Any) -> SessionDB:
        if self.kind == "sqlite":
            return SessionDB(db_path=self.path, **kwargs)
        return SessionDB(url=self.url, **kwargs)

    def raw(self) -> Any:
        """A raw DB-API connection in autocommit mode, for planting rows behind the store."""
        if self.kind == "sqlite":
            return sqlite3.connect(self.path, isolation_level=None, timeout=30)
        import psycopg

        return psycopg.connect(self.url, autocommit=True)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run one statement (``?`` placeholders) on a raw connection; return its rows."""
        conn = self.raw()
        try:
            if self.kind == "postgres":
                sql = sql.replace("?", "%s")
            cursor = conn.execute(sql, tuple(params))
            return list(cursor.fetchall()) if cursor.description else []
        finally:
            conn.close()


def rotate(
    db: SessionDB,
    session_id: str,
    *,
    messages: Sequence[Mapping[str, Any]] | None = None,
    watermark: int | str | None = LAST,
    child_session_id: str | None = None,
) -> str:
    """Rotate ``session_id`` the way the agent does: lease, watermark, publish, release."""
    holder = make_holder()
    assert db.try_acquire_compression_lock(session_id, holder)
    try:
        if watermark == LAST:
            watermark = db.last_message_id(session_id)
        return db.publish_compression_child(
            session_id,
            holder=holder,
            messages=list(messages if messages is not None else [SUMMARY]),
            watermark=watermark,  # type: ignore[arg-type]
            child_session_id=child_session_id,
        )
    finally:
        db.release_compression_lock(session_id, holder)


def chain(db: SessionDB, root: str, segments: int) -> list[str]:
    """Rotate ``root`` until the conversation has ``segments`` segments; return their ids."""
    ids = [root]
    for n in range(segments - 1):
        db.append_message(ids[-1], "user", f"message in segment {n + 1}")
        ids.append(rotate(db, ids[-1]))
    return ids


def contents(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    return [m["content"] for m in messages]


def uids(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    return [m["message_uid"] for m in messages]


def raw_one(db: SessionDB, sql: str, params: Sequence[Any] = ()) -> dict | None:
    """One row read through the store's own connection (either backend)."""
    return db._read(lambda tx: tx.one(sql, params))


def raw_all(db: SessionDB, sql: str, params: Sequence[Any] = ()) -> list[dict]:
    return db._read(lambda tx: tx.all(sql, params))


def snapshot(db: SessionDB, conversation_id: str) -> dict[str, Any]:
    """Everything a failed operation must leave unchanged in one conversation."""
    segments = raw_all(
        db,
        "SELECT id, parent_session_id, lineage, ended_at, end_reason, title, message_count"
        " FROM sessions WHERE conversation_id = ? ORDER BY segment_index",
        (conversation_id,),
    )
    messages = raw_all(
        db,
        "SELECT m.id, m.session_id, m.message_uid, m.content, m.compacted FROM messages m"
        " JOIN sessions s ON s.id = m.session_id WHERE s.conversation_id = ? ORDER BY m.id",
        (conversation_id,),
    )
    routes = raw_all(db, "SELECT session_key, session_id FROM gateway_routes ORDER BY session_key")
    return {"segments": segments, "messages": messages, "routes": routes}


def assert_no_orphan_writes(db: SessionDB, session_id: str) -> None:
    """Invariant 3 by message id: no original lands in a segment after its rotation.

    Ids follow commit order, so every original of a parent must be older than the
    first row of its compression child.
    """
    segments = db.get_segments(session_id)
    for parent, child in zip(segments, segments[1:], strict=False):
        child_rows = db.get_messages(child["id"], include_undone=True)
        if not child_rows:
            continue
        first = min(m["id"] for m in child_rows)
        late = [
            m["message_uid"]
            for m in db.get_messages(parent["id"], include_undone=True)
            if not m["compacted"] and m["id"] > first
        ]
        assert not late, f"{late} landed in {parent['id']} after it was rotated"


def tool_call(call_id: str) -> dict:
    """An assistant message asking for one terminal call."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
        ],
    }


def tool_result(call_id: str, text: str) -> dict:
    """The terminal's result for ``call_id``."""
    return {"role": "tool", "content": text, "tool_call_id": call_id, "tool_name": "terminal"}
