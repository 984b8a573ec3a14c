"""A new context without what the user took back (docs/design.md, invariant 16).

When rows that an undo takes back (``/undo``, ``/retry``, a deleted response, a turn a
shutdown gives back) were read by a summary the tip's context holds, that summary's
words still carry them. The conversation then gets a new segment whose context is made
again from the rows that remain (the store is lossless, so this is always possible): the
standing original messages, compressed as any long history is (a new summary of their
middle, or all of them verbatim when they are few); the new summary's anchor index
still lists every anchor the old summaries showed that leads to a standing row
(``still_reachable``), and none that leads only to what was taken back. It is
published through the rotation path, under the compression lease, with the same
coverage check; the rows
being undone are marked in the same transaction, so an undo lands with its new
context or not at all. If the summary model fails, nothing changes and the caller
refuses the undo (or the turn) in one sentence: the old summary never reaches a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes.agent import transcript
from hermes.agent.compression import (
    LeaseKeeper,
    adopt_child,
    coverage,
    describe_failure,
    failed,
    with_uids,
)
from hermes.agent.errors import AgentError
from hermes.agent.summariser import NOTHING_TO_COMPRESS, Summariser
from hermes.agent.window import CompressionOutcome
from hermes.state.context import anchor_index, wellformed
from hermes.state.context.message import Message
from hermes.state.errors import LeaseNotHeldError, NotTipError, StateError

if TYPE_CHECKING:
    from hermes.agent.host import TurnHost


class ContextNotRebuiltError(AgentError):
    """The context could not be made again without the undone rows; nothing changed."""


def rebuild(host: TurnHost, *, undo_ids: Sequence[int] = ()) -> CompressionOutcome:
    """Make the tip's context again from the conversation's standing rows, without
    ``undo_ids`` (marked undone in the same transaction); raises
    ``ContextNotRebuiltError`` (one sentence) when nothing could change."""
    db, tip = host.binding.bound()
    holder, ttl = host.lease.holder, host.lease.ttl
    outcome = CompressionOutcome()
    try:
        if not db.try_acquire_compression_lock(tip, holder, ttl):
            other = db.get_compression_lock_holder(tip)
            raise ContextNotRebuiltError(
                f"Another process is compressing this conversation ({other}); nothing was "
                "changed, try again when it has finished."
            )
        try:
            _rebuild_under_lease(host, tip, undo_ids, outcome)
        finally:
            try:
                db.release_compression_lock(tip, holder)
            except StateError:  # the TTL frees it
                pass
    except (LeaseNotHeldError, NotTipError) as exc:
        raise ContextNotRebuiltError(f"{exc} Nothing was changed; try again.") from exc
    return outcome


def _rebuild_under_lease(
    host: TurnHost, tip: str, undo_ids: Sequence[int], outcome: CompressionOutcome
) -> None:
    db = host.binding.bound()[0]
    segment = db.get_session(tip)
    if segment is None or segment["ended_at"] is not None:
        raise ContextNotRebuiltError(
            "The conversation moved on while this ran; nothing was changed, try again."
        )
    watermark = db.last_message_id(tip)
    messages = remaining(host, undo_ids)
    compressor, window = host.window.compressor, host.window
    outcome.tokens_before = window.estimate_tokens(messages)
    ask: dict[str, Any] = {"current_tokens": outcome.tokens_before}
    if isinstance(compressor, Summariser):
        ask["carry"] = still_reachable(host, tip, undo_ids)
    with LeaseKeeper(db, tip, host.lease.holder, host.lease.ttl):
        compressed = compressor.compress(messages, **ask)
    covered: set[str] = set()
    by_stub: set[str] = set()
    if failed(compressor, messages, compressed):
        if getattr(compressor, "_last_summary_error", None) != NOTHING_TO_COMPRESS:
            raise ContextNotRebuiltError(
                "What was undone is in the summary of this conversation, and making that "
                f"summary again without it failed ({describe_failure(compressor)}); nothing "
                "was changed, try again later."
            )
        compressed = messages  # few enough to keep verbatim: no summary at all
    else:
        covered, by_stub = coverage(compressor)
    compressed = with_uids(compressed)
    child = db.publish_compression_child(
        tip,
        holder=host.lease.holder,
        messages=compressed,
        watermark=watermark,
        covered_uids=covered,
        stub_covered_uids=by_stub,
        undo_ids=list(undo_ids),
    )
    adopt_child(host, outcome, tip, child, compressed)


def remaining(host: TurnHost, undo_ids: Sequence[int]) -> list[Message]:
    """The conversation's standing original messages but ``undo_ids``, well-formed."""
    db, tip = host.binding.bound()
    dropped = set(undo_ids)
    rows = [
        row
        for row in db.iter_conversation_messages(tip)
        if not row["undone"] and row["id"] not in dropped
    ]
    return list(wellformed.repair(transcript.from_store(rows)).messages)


def still_reachable(host: TurnHost, tip: str, undo_ids: Sequence[int]) -> list[tuple[str, str]]:
    """The anchors the tip's summaries showed the model (retired ones too) that still
    lead to a standing row: the context made again keeps showing them, and no anchor
    of it leads only to what was taken back."""
    db = host.binding.bound()[0]
    dropped = set(undo_ids)
    rows = [
        row
        for row in db.iter_conversation_messages(tip)
        if not row["undone"] and row["id"] not in dropped
    ]
    standing = {int(row["id"]) for row in rows}
    text = "\n".join(f"{row['content'] or ''}\n{row['tool_calls'] or ''}" for row in rows)
    shown = [
        row["content"]
        for row in db.get_messages(tip, include_undone=True)
        if anchor_index.is_summary_message(row)
    ]
    kept: dict[str, str] = {}
    for content in shown:
        for kind, anchor in anchor_index.parse(content):
            masked = anchor_index.MASKED_ANCHOR.fullmatch(anchor)
            if (int(masked.group(1)) in standing) if masked else anchor in text:
                kept.setdefault(anchor, kind)
    return [(kind, anchor) for anchor, kind in kept.items()]


def rebuild_if_stale(host: TurnHost) -> None:
    """Make the context again if an undo elsewhere retired a summary it held (so a
    model never sees it, nor a context missing what it summarised); raises
    ``ContextNotRebuiltError`` when that fails. Call with the turn lock held."""
    if host.binding.context_stale and host.binding.writes_transcript:
        rebuild(host)
