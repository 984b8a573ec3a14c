"""Large inline data of content parts, stored once by its sha256.

An image a client sends inline (``data:image/png;base64,...`` in an ``image_url`` part,
a Responses ``input_image``) would otherwise sit in its message's content, and every
rotation would copy it again into the child's compacted copies. Instead a message's
parts keep a reference (``hermes-blob:sha256:<hex>``) in place of any ``data:`` value
longer than ``INLINE_LIMIT``, and the value itself is a row of ``blobs`` (its sha256,
media type, size and the data URL exactly as sent), written in the message's
transaction and shared by every message, copy and conversation that holds the same
data.

Readers of the store's messages never see a reference: every read that decodes
content puts the data back (``inline``), so the model gets exactly what the client sent.
Text parts are never touched (they are what search indexes). A conversation's delete
takes the blobs nobody else refers to with it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

from hermes.state.backend import MessageRow, Row, Tx

INLINE_LIMIT = 4096  # characters of a data URL kept in its message as it is
PREFIX = "hermes-blob:sha256:"
_CHUNK = 500  # references per IN (...) list


def stash(tx: Tx, rows: Sequence[MessageRow], now: float) -> list[MessageRow]:
    """``rows`` as they are stored: large inline data of their parts moved to ``blobs``."""
    stored = []
    for row in rows:
        if not row.content_parts or not row.content or len(row.content) <= INLINE_LIMIT:
            stored.append(row)
            continue
        parts = _parts(row.content)
        found: dict[str, str] = {}
        if parts is None or not _swap(parts, partial(_reference, found=found)):
            stored.append(row)
            continue
        for sha, data in found.items():
            _save(tx, sha, data, now)
        stored.append(dataclasses.replace(row, content=json.dumps(parts, ensure_ascii=False)))
    return stored


def inline(tx: Tx, rows: Sequence[Row]) -> None:
    """Put the data back into the raw ``content`` of rows read from ``messages``."""
    held = [r for r in rows if r.get("content_parts") and PREFIX in (r.get("content") or "")]
    if not held:
        return
    decoded = [(row, _parts(row["content"])) for row in held]
    wanted = {value[len(PREFIX) :] for _, parts in decoded for value in _references(parts)}
    data = _load(tx, sorted(wanted))
    for row, parts in decoded:
        if parts is not None and _swap(parts, lambda value: _data(value, data)):
            row["content"] = json.dumps(parts, ensure_ascii=False)


def references_in(rows: Sequence[Row]) -> set[str]:
    """The sha256s the raw ``content`` of ``rows`` refers to."""
    return {
        value[len(PREFIX) :]
        for row in rows
        if row.get("content_parts") and PREFIX in (row.get("content") or "")
        for value in _references(_parts(row["content"]))
    }


def forget_unreferenced(tx: Tx, shas: set[str]) -> None:
    """Delete the blobs among ``shas`` that no stored message refers to any more."""
    for sha in sorted(shas):
        tx.run(
            "DELETE FROM blobs WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM messages"
            " WHERE content_parts = 1 AND content LIKE ?)",
            (sha, f"%{PREFIX}{sha}%"),
        )


# -- parts ---------------------------------------------------------------------------


def _parts(content: str | None) -> Any:
    try:
        parts = json.loads(content or "")
    except ValueError:
        return None
    return parts if isinstance(parts, list) else None


def _swap(node: Any, change: Any) -> bool:
    """Replace, in place, every string value ``change`` maps to another one, in the
    parts' structure but never a text part's words; True if any was replaced."""
    changed = False
    items: Iterator[tuple[Any, Any]]
    if isinstance(node, dict):
        items = ((k, v) for k, v in node.items() if k != "text")
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return False
    for key, value in list(items):
        if isinstance(value, str):
            new = change(value)
            if new is not value:
                node[key] = new
                changed = True
        elif _swap(value, change):
            changed = True
    return changed


def _references(parts: Any) -> list[str]:
    found: list[str] = []

    def note(value: str) -> str:
        if value.startswith(PREFIX):
            found.append(value)
        return value

    _swap(parts, note)
    return found


def _reference(value: str, found: dict[str, str]) -> str:
    if len(value) <= INLINE_LIMIT or not value.startswith("data:"):
        return value
    sha = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    found[sha] = value
    return PREFIX + sha


def _data(value: str, data: dict[str, str]) -> str:
    if not value.startswith(PREFIX):
        return value
    return data.get(value[len(PREFIX) :], value)


# -- the table -----------------------------------------------------------------------


def _save(tx: Tx, sha: str, data: str, now: float) -> None:
    media = data[5:].split(",", 1)[0].split(";", 1)[0] or "application/octet-stream"
    tx.run(
        "INSERT INTO blobs (sha256, media_type, size, data, created_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (sha256) DO NOTHING",
        (sha, media, len(data), data, now),
    )


def _load(tx: Tx, shas: list[str]) -> dict[str, str]:
    data: dict[str, str] = {}
    for start in range(0, len(shas), _CHUNK):
        chunk = shas[start : start + _CHUNK]
        marks = ", ".join("?" for _ in chunk)
        for row in tx.all(f"SELECT sha256, data FROM blobs WHERE sha256 IN ({marks})", chunk):
            data[row["sha256"]] = row["data"]
    return data
