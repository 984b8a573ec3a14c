"""Segments and their chain: ids, creation, tip resolution and where a write lands.

A conversation's segments form one chain ordered by ``segment_index``; its tip is the
last one. Because every segment stores its ``conversation_id``, any old id reaches its
tip in two indexed lookups, whatever the chain's length (invariant 4). Branches are
new conversations, so resolution never crosses one.
"""

from __future__ import annotations

import json
import os  # os.urandom, as `secrets` uses, without its ~7 ms of imports
import re
import time
from collections.abc import Mapping
from typing import Any

from hermes.state import blobs
from hermes.state.backend import MessageRow, Row, Tx
from hermes.state.errors import SegmentEndedError, SessionNotFoundError
from hermes.state.usage import tool_calls_in

SESSION_COLUMNS = (
    "id, conversation_id, parent_session_id, lineage, segment_index, source, user_id,"
    " session_key, title, model, system_prompt, started_at, last_active_at, ended_at,"
    " end_reason, message_count, input_tokens, output_tokens"
)
COMPRESSION = "compression"
_TITLE_NUMBER = re.compile(r"\s+#\d+$")


def new_session_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d_%H%M%S", time.localtime(now or time.time()))
    return f"{stamp}_{os.urandom(3).hex()}"


# The uid suffix of an answer cut off when its stream was stopped (what was sent so far).
PARTIAL_UID_SUFFIX = ":partial"


def new_message_uid() -> str:
    """A unique id that sorts by time (like UUIDv7), so consecutive messages land on
    neighbouring pages of the uid index instead of random ones: fewer pages per commit."""
    return f"{time.time_ns() // 1000:014x}{os.urandom(9).hex()}"


def numbered_title(title: str | None, segment_index: int) -> str | None:
    """'<title> #N' for the N-th segment of a conversation titled <title>."""
    if not title:
        return None
    return f"{_TITLE_NUMBER.sub('', title)} #{segment_index}"


def branch_marker(parent_id: str) -> str:
    """Hermes Agent 0.19's mark of a branch in ``sessions.model_config``. Tools that count
    conversations by 0.19's rule (a row with a parent is a new chat only when so marked;
    a compression child's parent ended with ``end_reason = 'compression'``) then count a
    branch as the new conversation it is, and a compression segment as none."""
    return json.dumps({"_branched_from": parent_id})


def get(tx: Tx, session_id: str) -> Row | None:
    return tx.one(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,))


def require(tx: Tx, session_id: str) -> Row:
    row = get(tx, session_id)
    if row is None:
        raise SessionNotFoundError(session_id)
    return row


def tip_of_conversation(tx: Tx, conversation_id: str) -> Row:
    row = tx.one(
        f"SELECT {SESSION_COLUMNS} FROM sessions WHERE conversation_id = ?"
        " ORDER BY segment_index DESC LIMIT 1",
        (conversation_id,),
    )
    assert row is not None, "a conversation always has its root segment"
    return row


def tip(tx: Tx, session_id: str) -> Row:
    """The tip of the conversation holding ``session_id``."""
    row = require(tx, session_id)
    if row["ended_at"] is None:
        return row
    return tip_of_conversation(tx, row["conversation_id"])


def lineage(tx: Tx, session_id: str) -> list[Row]:
    row = require(tx, session_id)
    return tx.all(
        f"SELECT {SESSION_COLUMNS} FROM sessions WHERE conversation_id = ? ORDER BY segment_index",
        (row["conversation_id"],),
    )


def writable(tx: Tx, session_id: str) -> Row:
    """The segment a write addressed to ``session_id`` lands in, locked for this transaction
    (``id``, ``conversation_id``, ``source``, ``ended_at``, ``end_reason``).

    A segment ended by compression forwards to its conversation's tip (invariant 3); a
    segment ended for any other reason refuses. Re-checked after locking, because on
    PostgreSQL another host may rotate between the read and the lock.
    """
    tx.lock_session(session_id)
    row = _write_target(tx, session_id)
    for _ in range(100):
        if row["ended_at"] is None:
            return row
        if row["end_reason"] != COMPRESSION:
            raise SegmentEndedError(row["id"], row["end_reason"])
        candidate = tip_of_conversation(tx, row["conversation_id"])
        if candidate["id"] == row["id"]:
            raise SegmentEndedError(row["id"], row["end_reason"])
        tx.lock_session(candidate["id"])
        row = _write_target(tx, candidate["id"])
    raise SegmentEndedError(session_id, "rotating too fast to follow")


def reopen(tx: Tx, session_id: str) -> None:
    """Take back a segment's end so it takes messages again. Only a conversation's tip
    can be reopened: a segment whose conversation went on in a later one is refused (a
    conversation has one live segment, its last)."""
    row = require(tx, session_id)
    later = tx.one(
        "SELECT id FROM sessions WHERE conversation_id = ? AND segment_index > ?",
        (row["conversation_id"], row["segment_index"]),
    )
    if later is not None:
        raise ValueError(
            f"Session {session_id} cannot be reopened: its conversation goes on in"
            f" {later['id']}; resume that one instead."
        )
    tx.run("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", (session_id,))


def _write_target(tx: Tx, session_id: str) -> Row:
    """What a write needs of a segment: not its title or system prompt, read on every
    append otherwise."""
    row = tx.one(
        "SELECT id, conversation_id, source, ended_at, end_reason FROM sessions WHERE id = ?",
        (session_id,),
    )
    if row is None:
        raise SessionNotFoundError(session_id)
    return row


def insert(tx: Tx, values: Mapping[str, Any]) -> None:
    if values.get("lineage") == "branch" and values.get("parent_session_id"):
        values = {**values, "model_config": branch_marker(values["parent_session_id"])}
    columns = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    tx.run(f"INSERT INTO sessions ({columns}) VALUES ({marks})", tuple(values.values()))


def message_row(
    session_id: str, message: Mapping[str, Any], now: float, **extra: Any
) -> MessageRow:
    """Turn an OpenAI-style message dict into a row for ``session_id``."""
    tool_calls = message.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, str):
        tool_calls = json.dumps(tool_calls, ensure_ascii=False)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)  # multi-part content
        extra.setdefault("content_parts", 1)
    return MessageRow(
        session_id=session_id,
        message_uid=extra.pop("message_uid", None)
        or message.get("message_uid")
        or new_message_uid(),
        role=message.get("role") or "user",
        content=content,
        tool_calls=tool_calls,
        tool_call_id=message.get("tool_call_id"),
        tool_name=message.get("tool_name") or message.get("name"),
        reasoning=message.get("reasoning"),
        created_at=message.get("created_at") or now,
        token_count=message.get("token_count"),
        finish_reason=message.get("finish_reason"),
        reasoning_content=_text(message.get("reasoning_content")),
        reasoning_details=_json_text(message.get("reasoning_details")),
        codex_reasoning_items=_json_text(message.get("codex_reasoning_items")),
        codex_message_items=_json_text(message.get("codex_message_items")),
        platform_message_id=_text(message.get("platform_message_id"), numbers=True),
        observed=1 if message.get("observed") else 0,
        effect_disposition=_text(message.get("effect_disposition")),
        api_content=_text(message.get("api_content")),
        **extra,
    )


def _text(value: Any, *, numbers: bool = False) -> str | None:
    """A text field from a caller's message: text as it is (a platform's numeric id as
    text); anything else is not kept (a client's message may carry any value)."""
    if isinstance(value, str):
        return value
    if numbers and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _json_text(value: Any) -> str | None:
    """A structured provider field as stored: JSON text, None when empty (as 0.19)."""
    if not value:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def existing_uids(tx: Tx, uids: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(uids), 500):
        chunk = uids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        found.update(
            r["message_uid"]
            for r in tx.all(
                f"SELECT message_uid FROM messages WHERE message_uid IN ({marks})", chunk
            )
        )
    return found


def add_messages(tx: Tx, session_id: str, rows: list[MessageRow], now: float) -> list[int]:
    ids = tx.insert_messages(blobs.stash(tx, rows, now))  # large inline data stored once
    # Hermes Agent's tool_call_count: the calls this segment's own messages made.
    calls = sum(tool_calls_in(r.tool_calls) for r in rows if r.tool_calls and not r.compacted)
    tx.run(
        "UPDATE sessions SET message_count = message_count + ?, last_active_at = ?,"
        " tool_call_count = tool_call_count + ? WHERE id = ?",
        (len(rows), now, calls, session_id),
    )
    return ids
