"""A stopped answer the client kept less of than it was sent.

When a client stops a stream, hermes stores as much of the answer as it sent, marked
partial (its uid ends with ``PARTIAL_UID_SUFFIX``). A client may show, and send back,
less than that (it drops the words it had not drawn yet). When its next history ends
with a shorter start of that answer, the stored answer is trimmed to what the client
kept, so the history is the conversation's own and the turn continues it instead of
branching. Nothing is deleted: the answer as sent stays in the history, undone (as an
edit leaves what it replaced), and the kept part is a new row after it, still partial.
"""

from __future__ import annotations

import time

from hermes.state import history, segments
from hermes.state.backend import Row, Tx
from hermes.state.segments import PARTIAL_UID_SUFFIX


def trim(tx: Tx, conversation_id: str, after_message_id: int, kept: str) -> bool:
    """Trim the conversation's stopped answer to ``kept`` (the client's text, stripped)
    when that answer is its latest message, follows message ``after_message_id`` (where
    the client's history matched), sits in the tip and starts with ``kept``; whether it
    did."""
    tip = segments.writable(tx, conversation_id)
    answer = tx.one(
        "SELECT m.id, m.session_id, m.role, m.content, m.content_parts, m.tool_calls,"
        " m.message_uid FROM messages m JOIN sessions s ON s.id = m.session_id"
        " WHERE s.conversation_id = ? AND m.compacted = 0 AND m.undone = 0"
        " ORDER BY m.id DESC LIMIT 1",
        (conversation_id,),
    )
    if not _trimmable(answer, tip["id"], kept):
        return False
    assert answer is not None
    before = tx.one(
        "SELECT MAX(message_id) AS id FROM history_digests"
        " WHERE conversation_id = ? AND message_id < ?",
        (conversation_id, answer["id"]),
    )
    if before is None or before["id"] != after_message_id:
        return False  # the client's history does not end right before this answer
    tx.run("UPDATE messages SET undone = 1, active = 0 WHERE id = ?", (answer["id"],))
    now = time.time()
    uid = segments.new_message_uid() + PARTIAL_UID_SUFFIX
    row = segments.message_row(
        tip["id"], {"role": "assistant", "content": kept}, now, message_uid=uid
    )
    segments.add_messages(tx, tip["id"], [row], now)
    history.recompute(tx, conversation_id, tip["source"], answer["id"])
    return True


def _trimmable(answer: Row | None, tip_id: str, kept: str) -> bool:
    if answer is None or not kept or answer["session_id"] != tip_id:
        return False
    if answer["role"] != "assistant" or answer["tool_calls"] or answer["content_parts"]:
        return False
    if not str(answer["message_uid"]).endswith(PARTIAL_UID_SUFFIX):
        return False
    sent = (answer["content"] or "").strip()
    return sent != kept and sent.startswith(kept)
