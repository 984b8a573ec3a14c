"""Export of a whole logical conversation, streamed chunk by chunk.

Messages come from ``SessionDB.iter_conversation_messages`` in pages, so a huge
conversation exports in constant memory. A compaction summary shows as a
"compressed here" marker, never as a message of its own. The store is read through
``ConversationReader``, the two reads an export needs, so this module imports nothing
of ``store.py``, which offers it as ``SessionDB.export_conversation``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, Protocol

from hermes.state.backend import Row
from hermes.state.context.message import SAID_COLUMNS
from hermes.state.segments import PARTIAL_UID_SUFFIX

FORMATS = ("jsonl", "markdown")
_ALIASES = {"md": "markdown", "json": "jsonl", "jsonl": "jsonl", "markdown": "markdown"}


class ConversationReader(Protocol):
    """What an export reads of the store (``SessionDB`` is one)."""

    def get_segments(self, session_id: str) -> list[Row]: ...

    def iter_conversation_messages(
        self, session_id: str, *, include_summaries: bool = False, page: int = 1000
    ) -> Iterator[Row]: ...


def normalise_format(fmt: str) -> str:
    try:
        return _ALIASES[fmt.lower()]
    except KeyError:
        raise ValueError(f"Unknown export format '{fmt}'; use jsonl or md.") from None


def render(db: ConversationReader, session_id: str, fmt: str) -> Iterator[str]:
    fmt = normalise_format(fmt)
    chain = db.get_segments(session_id)  # raises SessionNotFoundError before streaming
    return _markdown(db, chain) if fmt == "markdown" else _jsonl(db, chain)


def _items(db: ConversationReader, chain: list[Row]) -> Iterator[tuple[str, dict[str, Any]]]:
    segment_of = {s["id"]: s for s in chain}
    current = None
    for message in db.iter_conversation_messages(chain[0]["id"], include_summaries=True):
        segment = segment_of.get(message["session_id"])
        if segment is not None and segment["id"] != current:
            if current is not None:
                yield "marker", segment
            current = segment["id"]
        if message["compacted"]:
            yield "summary", message
        else:
            yield "message", message


def _jsonl(db: ConversationReader, chain: list[Row]) -> Iterator[str]:
    root = chain[0]
    yield _line(
        {
            "type": "conversation",
            "id": root["id"],
            "title": root["title"],
            "source": root["source"],
            "segments": [s["id"] for s in chain],
        }
    )
    for kind, item in _items(db, chain):
        if kind == "marker":
            yield _line(
                {
                    "type": "compaction",
                    "segment": item["id"],
                    "segment_index": item["segment_index"],
                }
            )
        elif kind == "summary":
            yield _line(
                {"type": "summary", "session_id": item["session_id"], "content": item["content"]}
            )
        else:
            yield _line(
                {
                    "type": "message",
                    **{
                        k: item[k]
                        for k in (
                            "session_id",
                            "message_uid",
                            *SAID_COLUMNS,
                            "created_at",
                            "undone",
                        )
                    },
                }
            )


def _readable(content: Any) -> str:
    """A message's content for people: its text, each other part said for what it is
    (an inline image by its type and size, not its bytes)."""
    if not isinstance(content, list):
        return str(content)
    lines = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            lines.append(str(part.get("text", "")))
        elif kind == "image_url":
            url = str((part.get("image_url") or {}).get("url", ""))
            if url.startswith("data:"):
                media = url[5:].split(";", 1)[0] or "image"
                lines.append(f"[image: {media}, {len(url) * 3 // 4 // 1024} KB inline]")
            else:
                lines.append(f"[image: {url}]")
        else:
            lines.append(f"[{kind or 'part'}]")
    return "\n".join(lines)


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def _markdown(db: ConversationReader, chain: list[Row]) -> Iterator[str]:
    root = chain[0]
    yield f"# {root['title'] or root['id']}\n\n"
    yield f"_Conversation {root['id']} · {root['source']} · {len(chain)} segment(s)_\n\n"
    for kind, item in _items(db, chain):
        if kind == "marker":
            yield f"---\n\n_— compressed here: segment {item['segment_index']} ({item['id']}) —_\n\n"
        elif kind == "summary":
            continue  # the marker stands for it; the summary is not part of the history
        else:
            stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(item["created_at"]))
            undone = " (undone)" if item["undone"] else ""
            name = f" `{item['tool_name']}`" if item.get("tool_name") else ""
            yield f"### {item['role']}{name} · {stamp}{undone}\n\n"
            if item["content"]:
                yield f"{_readable(item['content'])}\n\n"
            if str(item.get("message_uid") or "").endswith(PARTIAL_UID_SUFFIX):
                yield "_(partial: the client stopped reading here)_\n\n"
            for call in item.get("tool_calls") or []:
                fn = call.get("function", {}) if isinstance(call, dict) else {}
                yield f"- tool call `{fn.get('name')}`: `{fn.get('arguments')}`\n"
            if item.get("tool_calls"):
                yield "\n"
