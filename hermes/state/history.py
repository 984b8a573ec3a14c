"""History digests: which stored conversation a stateless client's history continues.

A chat UI that sends the whole history with every request and no session id must land
in the conversation it continues. For that every standing original user or assistant
message with text of a conversation whose source is in ``DIGESTED_SOURCES`` carries a
chain digest in ``history_digests``:

    d_0 = b""    d_n = sha256(d_{n-1} + role + "\\0" + normalised content)   (stored as hex)

so ``d_n`` names the whole sequence of the first n such messages, and a request's
history finds the conversation (and the message) it ends at in one indexed read.

- Digests belong to original messages: a rotation's copies (``compacted``) are never
  digested, so after any number of compressions the full original history still maps
  to its conversation, whose tip the gateway then follows.
- Tool calls and tool results are left out (a client never sees them), as are
  assistant messages that asked for tools and the notes the agent adds for the model
  (``AGENT_NOTES``); what a client is shown is the user's words and the final answers.
  The text the model wrote beside its tool calls is shown too (streamed as it came):
  it is part of the turn's answer, so a final answer is digested as ``shown_answer``
  of the turn's texts, the way the client holds it.
- Content is normalised the same way on both sides: the text of a string, or of the
  text parts of a list, joined by newlines, with the whitespace around it stripped
  (a UI that trims an answer still matches); inner whitespace counts as given.
- Undoing messages (``mark_undone``) recomputes the conversation's chain from the
  first undone one, so the digests always describe the standing history.
- Digests are written in the same transaction as the messages, only for the sources a
  stateless client can continue, so nothing else pays for them on append. A
  conversation from before the digests existed is digested whole at its next append.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes.state.backend import MessageRow, Row, Tx

# What the agent tells the model after an empty answer: stored as a user message, never
# shown to a client, so never digested.
EMPTY_RESPONSE_NOTE = (
    "Error: your last response was empty. Answer the user, or call a tool if you need one."
)
# What is stored for an answer the model left empty (the client was shown nothing): a
# context with an empty assistant message is one providers refuse, a rotation too.
EMPTY_ANSWER_NOTE = "(The model gave no answer.)"
AGENT_NOTES = frozenset({EMPTY_RESPONSE_NOTE, EMPTY_ANSWER_NOTE})

# The conversations a stateless HTTP client can continue: those the HTTP API started
# (for the operator's key, and for API principals: ``api``).
DIGESTED_SOURCES = frozenset({"api_server", "api"})
ROLES = ("user", "assistant")
_ROLE_BYTES = {role: f"{role}\0".encode() for role in ROLES}
_CHUNK = 900  # parameters per IN (...) list: SQLite builds before 3.32 allow 999


@dataclass(frozen=True)
class HistoryMatch:
    """The stored message a request's history ends at (or its longest stored prefix)."""

    conversation_id: str
    message_id: int  # the original message the matched prefix ends with
    matched: int  # how many of the request's history messages the prefix covers
    latest: bool  # that message is the conversation's latest standing one


def normalised(content: Any) -> str:
    """The text a digest covers: a string, or the text parts of a list, stripped."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        texts = [
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        return "\n".join(texts).strip()
    return ""


def link(previous: bytes, role: str, text: str) -> bytes:
    """The digest of a history that is ``previous``'s followed by one message."""
    step = hashlib.sha256(previous + _ROLE_BYTES[role])
    step.update(text.encode("utf-8", "surrogatepass"))
    return step.digest()


def prefix_digests(messages: Sequence[Mapping[str, Any]]) -> list[tuple[bytes, int]]:
    """(digest, messages covered) of every prefix of a client's history that ends with
    a digested message, shortest first; a prefix covers the undigested messages after
    it too, so what is left over always starts with a digested one.

    This runs on every stateless request over its whole history, so ``link`` and
    ``_digestible_text`` are written out in the loop (calls were a third of its time).
    """
    digests, starts = [], []  # starts: the index of each digested message
    previous, sha256 = b"", hashlib.sha256
    before: list[Any] = []  # texts beside tool calls, shown before the next answer
    for index, message in enumerate(messages):
        role = _ROLE_BYTES.get(message.get("role", ""))
        if role is None:
            continue
        content = message.get("content")
        if message.get("tool_calls") and role is _ROLE_BYTES["assistant"]:
            before.append(content or "")
            continue
        if before and role is _ROLE_BYTES["assistant"]:
            content = shown_answer(before, content)
        text = content.strip() if isinstance(content, str) else normalised(content)
        if not text or text in AGENT_NOTES:
            continue
        step = sha256(previous + role)
        step.update(text.encode("utf-8", "surrogatepass"))
        previous = step.digest()
        digests.append(previous)
        starts.append(index)
        before = []
    if not digests:
        return []
    return list(zip(digests, [*starts[1:], len(messages)], strict=True))


def shown_answer(before: Sequence[Any], final: Any) -> str:
    """What a client is shown of a turn's answer: the text the model wrote beside its
    tool calls (``before``, each as streamed), then the final answer."""
    texts = (_raw_text(text) for text in [*before, final])
    return "".join(text for text in texts if text.strip() not in AGENT_NOTES)


def _raw_text(content: Any) -> str:
    return content if isinstance(content, str) else normalised(content)


# -- writing ------------------------------------------------------------------------------


def record(
    tx: Tx, conversation_id: str, source: str | None, ids: Sequence[int], rows: Sequence[MessageRow]
) -> None:
    """Digest newly inserted rows (``ids`` their ids) of a conversation that needs it.

    The caller holds the conversation's tip (``segments.writable``), so the chain it
    extends is the latest. A conversation without digests yet (a new one, or one from
    before migration 7) is digested whole, once.
    """
    if source not in DIGESTED_SOURCES:
        return
    previous = _latest_digest(tx, conversation_id)
    if not previous:
        recompute(tx, conversation_id, source, 0)
        return
    entries = _entries(
        [
            (message_id, row.role, _stored_content(row), row.tool_calls)
            for message_id, row in zip(ids, rows, strict=True)
            if not row.compacted
        ],
        _texts_since_last_digest(tx, conversation_id, min(ids, default=0)),
    )
    if entries:
        _insert(tx, conversation_id, previous, entries)


def recompute(tx: Tx, conversation_id: str, source: str | None, from_id: int) -> None:
    """Rebuild the chain from original message ``from_id`` on (after an undo)."""
    if source not in DIGESTED_SOURCES:
        return
    tx.run(
        "DELETE FROM history_digests WHERE conversation_id = ? AND message_id >= ?",
        (conversation_id, from_id),
    )
    rows = tx.all(
        "SELECT m.id, m.role, m.content, m.content_parts, m.tool_calls FROM messages m"
        " JOIN sessions s ON s.id = m.session_id WHERE s.conversation_id = ?"
        " AND m.id >= ? AND m.compacted = 0 AND m.undone = 0 ORDER BY m.id",
        (conversation_id, from_id),
    )
    entries = _entries(
        [(row["id"], row["role"], _row_content(row), row["tool_calls"]) for row in rows],
        _texts_since_last_digest(tx, conversation_id, from_id),
    )
    if entries:
        _insert(tx, conversation_id, _latest_digest(tx, conversation_id), entries)


def forget(tx: Tx, conversation_id: str) -> None:
    tx.run("DELETE FROM history_digests WHERE conversation_id = ?", (conversation_id,))


def _insert(
    tx: Tx, conversation_id: str, previous: bytes, entries: Sequence[tuple[int, str, str]]
) -> None:
    values = []
    for message_id, role, text in entries:
        previous = link(previous, role, text)
        values.append((message_id, conversation_id, previous.hex()))
    for start in range(0, len(values), _CHUNK // 3):
        chunk = values[start : start + _CHUNK // 3]
        tx.run(
            "INSERT INTO history_digests (message_id, conversation_id, digest) VALUES "
            + ", ".join("(?, ?, ?)" for _ in chunk),
            [value for entry in chunk for value in entry],
        )


def _latest_digest(tx: Tx, conversation_id: str) -> bytes:
    row = tx.one(
        "SELECT digest FROM history_digests WHERE conversation_id = ?"
        " ORDER BY message_id DESC LIMIT 1",
        (conversation_id,),
    )
    return bytes.fromhex(row["digest"]) if row else b""


# -- looking up ---------------------------------------------------------------------------

# The longest of the given prefixes stored: (digest, messages covered) pairs in ``p``;
# among the caller's conversations holding it (a branch shares its origin's prefix) one
# where it is the latest message first, then the newest. A conversation belongs to the
# caller whose ``user_id`` its root carries ('' for none: those of callers without one),
# from the caller's ``source`` (an API principal's or the operator's).
_LONGEST = (
    "WITH p (digest, n) AS (VALUES {pairs})"
    " SELECT * FROM (SELECT h.conversation_id, h.message_id, p.n,"
    "   (SELECT MAX(x.message_id) FROM history_digests x"
    "     WHERE x.conversation_id = h.conversation_id) AS latest"
    "   FROM p JOIN history_digests h ON h.digest = p.digest"
    "   JOIN sessions r ON r.id = h.conversation_id"
    "   WHERE COALESCE(r.user_id, '') = ? AND r.source = ?) AS m"
    " ORDER BY m.n DESC, CASE WHEN m.message_id = m.latest THEN 1 ELSE 0 END DESC,"
    " m.message_id DESC LIMIT 1"
)


def find(
    tx: Tx,
    prefixes: Sequence[tuple[bytes, int]],
    user_id: str | None = None,
    source: str = "api_server",
) -> HistoryMatch | None:
    """The longest stored prefix of a history given by its ``prefix_digests``, among the
    conversations of the caller ``user_id`` (None: of callers that name none) started
    from ``source``.

    Two callers sending the same history hold two conversations: the lookup never
    lands one caller in another's.

    The whole history is looked up first (one indexed row in the usual case, a client
    going on where it left off); only when it is not stored are its shorter prefixes,
    longest first, a few hundred to a query.
    """
    batches = [prefixes[-1:]]
    rest = list(reversed(prefixes[:-1]))
    batches += [rest[i : i + _CHUNK // 2] for i in range(0, len(rest), _CHUNK // 2)]
    for batch in batches:
        if not batch:
            continue
        pairs = ", ".join("(?, ?)" for _ in batch)
        params: list[Any] = [value for digest, n in batch for value in (digest.hex(), n)]
        params += [user_id or "", source]
        row = tx.one(_LONGEST.format(pairs=pairs), params)
        if row is not None:
            return HistoryMatch(
                conversation_id=row["conversation_id"],
                message_id=int(row["message_id"]),
                matched=int(row["n"]),
                latest=row["message_id"] == row["latest"],
            )
    return None


# -- what is digested ---------------------------------------------------------------------


def _entries(
    rows: Sequence[tuple[int, Any, Any, Any]], before: list[Any]
) -> list[tuple[int, str, str]]:
    """(id, role, digested text) of the digested ones of ``rows`` (id, role, content,
    tool calls), in order; ``before`` holds the texts beside tool calls since the last
    digested message, which the next final answer is shown after."""
    entries = []
    for message_id, role, content, tool_calls in rows:
        if role == "assistant" and tool_calls:
            before.append(content or "")
            continue
        shown = shown_answer(before, content) if role == "assistant" else content
        text = _digestible_text(role, shown, tool_calls)
        if text is not None:
            entries.append((message_id, role, text))
            before = []
    return entries


def _texts_since_last_digest(tx: Tx, conversation_id: str, below_id: int) -> list[Any]:
    """The texts beside tool calls stored after the conversation's last digested
    message (and before message ``below_id``): the start of the turn's answer."""
    rows = tx.all(
        "SELECT m.content, m.content_parts, m.tool_calls FROM messages m"
        " JOIN sessions s ON s.id = m.session_id WHERE s.conversation_id = ?"
        " AND m.id > COALESCE((SELECT MAX(h.message_id) FROM history_digests h"
        "   WHERE h.conversation_id = ?), 0)"
        " AND m.id < ? AND m.role = 'assistant'"
        " AND m.compacted = 0 AND m.undone = 0 ORDER BY m.id",
        (conversation_id, conversation_id, below_id),
    )
    return [_row_content(row) for row in rows if row["tool_calls"]]


def _digestible_text(role: Any, content: Any, tool_calls: Any) -> str | None:
    if role not in ROLES or tool_calls:
        return None
    text = normalised(content)
    return text if text and text not in AGENT_NOTES else None


def _stored_content(row: MessageRow) -> Any:
    return _decoded(row.content) if row.content_parts else row.content


def _row_content(row: Row) -> Any:
    return _decoded(row["content"]) if row["content_parts"] else row["content"]


def _decoded(content: str | None) -> Any:
    try:
        return json.loads(content or "")
    except ValueError:
        return content
