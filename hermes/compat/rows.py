"""Hermes Agent's shapes for hermes rows: titles, message rows, OpenAI-format messages."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from typing import Any

MAX_TITLE_LENGTH = 100  # Hermes Agent's limit
_CONTROL = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)


def sanitize_title(title: str | None) -> str | None:
    """Hermes Agent's title rules: no control characters, one space between words,
    empty is no title; longer than 100 characters is refused."""
    if not title:
        return None
    cleaned = re.sub(r"\s+", " ", _CONTROL.sub("", title)).strip()
    if not cleaned:
        return None
    if len(cleaned) > MAX_TITLE_LENGTH:
        raise ValueError(f"Title too long ({len(cleaned)} chars, max {MAX_TITLE_LENGTH})")
    return cleaned


_NUMBERED = re.compile(r"^(.*?) #(\d+)$")
_CJK = re.compile(
    "[\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]"
)
# Recalled-memory blocks a provider may echo back into an answer (0.19 strips them
# when it replays a conversation).
_MEMORY_BLOCK = re.compile(r"<\s*memory-context\s*>[\s\S]*?</\s*memory-context\s*>", re.I)
_MEMORY_NOTE = re.compile(
    r"\[System note:\s*The following is recalled memory context,\s*NOT new user input\."
    r"\s*Treat as (?:informational background data|authoritative reference data[^\]]*)\.\]\s*",
    re.I,
)
_MEMORY_TAG = re.compile(r"</?\s*memory-context\s*>", re.I)


def contains_cjk(text: str) -> bool:
    """Whether ``text`` holds Chinese, Japanese or Korean characters."""
    return bool(_CJK.search(text or ""))


def title_base(title: str) -> str:
    """A title without its ``#N`` lineage number."""
    match = _NUMBERED.match(title)
    return match.group(1) if match else title


def next_title(base: str, taken: list[str]) -> str:
    """The next title of ``base``'s lineage given the titles in use."""
    if not taken:
        return base
    numbers = [int(m.group(2)) for t in taken if (m := _NUMBERED.match(t))]
    return f"{base} #{max([1, *numbers]) + 1}"


def without_memory_context(text: str) -> str:
    """``text`` without recalled-memory blocks, notes and stray tags."""
    text = _MEMORY_BLOCK.sub("", text)
    return _MEMORY_TAG.sub("", _MEMORY_NOTE.sub("", text))


def like_prefix(text: str) -> str:
    """A LIKE pattern matching ``text`` literally at the start (escape character ``\\``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def message_row(row: dict[str, Any]) -> dict[str, Any]:
    """A store message row with Hermes Agent's column names added (``timestamp``, ``active``)."""
    row["timestamp"] = row["created_at"]
    row["active"] = 0 if row["undone"] else 1
    return row


# 0.19's message columns the store's own reads leave out (hermes's turns do not use them).
PROVIDER_COLUMNS = (
    "finish_reason, reasoning_content, reasoning_details, codex_reasoning_items,"
    " codex_message_items, platform_message_id, observed, effect_disposition, api_content"
)
_STRUCTURED = ("reasoning_details", "codex_reasoning_items", "codex_message_items")


def as_conversation(row: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-format message from a decoded store row, with the fields 0.19 replays:
    ``api_content`` verbatim, platform ids as ``message_id``, and an assistant's
    finish reason and reasoning fields (structured ones decoded)."""
    content = row["content"]
    if row["role"] in ("user", "assistant") and isinstance(content, str):
        content = without_memory_context(content).strip()
    message: dict[str, Any] = {"role": row["role"], "content": content}
    if row.get("api_content"):
        message["api_content"] = row["api_content"]
    for key in ("tool_calls", "tool_call_id", "tool_name", "effect_disposition"):
        if row.get(key):
            message[key] = row[key]
    if row.get("platform_message_id"):
        message["message_id"] = row["platform_message_id"]
    if row.get("observed"):
        message["observed"] = True
    if row["role"] == "assistant":
        for key in ("finish_reason", "reasoning"):
            if row.get(key):
                message[key] = row[key]
        if row.get("reasoning_content") is not None:
            message["reasoning_content"] = row["reasoning_content"]
        for key in _STRUCTURED:
            if row.get(key):
                message[key] = _decoded(row[key])
    if row.get("created_at"):
        message["timestamp"] = row["created_at"]
    return message


def _decoded(text: str) -> Any:
    """A stored JSON field; None where it is not JSON (as 0.19 falls back)."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def preview(content: Any, width: int = 200) -> str:
    """Plain text of a message's content for search context (text parts of a list)."""
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return " ".join(p for p in parts if p)[:width] or "[multimodal content]"
    return (content or "")[:width] if isinstance(content, str) else ""


class RowConnection:
    """The store's SQLite connection, handing out ``sqlite3.Row`` rows as Hermes Agent's
    ``db._conn`` does (index and column-name access), without changing the row factory
    the store itself reads with. Statements run under the store's connection lock."""

    def __init__(self, conn: sqlite3.Connection, lock: Any) -> None:
        self._raw = conn
        self._lock = lock

    def cursor(self) -> sqlite3.Cursor:
        cursor = self._raw.cursor()
        cursor.row_factory = sqlite3.Row
        return cursor

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        with self._lock:
            return self.cursor().execute(sql, params)

    def executemany(self, sql: str, params: Any) -> sqlite3.Cursor:
        with self._lock:
            return self.cursor().executemany(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class TransactionConnection(RowConnection):
    """The connection of a store transaction in progress, for ``_execute_write``'s
    function: ``sqlite3.Row`` rows, and no commit or rollback of its own (the store
    commits after the function, or rolls back when it raises)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn, contextlib.nullcontext())

    def commit(self) -> None:
        """The transaction commits when the function returns."""

    def rollback(self) -> None:
        raise RuntimeError("To roll back an _execute_write, raise from its function.")


def transaction_connection(tx: Any) -> Any:
    """What ``_execute_write`` hands its function: a SQLite transaction's connection
    (``TransactionConnection``), or PostgreSQL's transaction itself (``execute`` with
    ``?`` placeholders, dict rows)."""
    conn = getattr(tx, "conn", None)
    return TransactionConnection(conn) if isinstance(conn, sqlite3.Connection) else tx
