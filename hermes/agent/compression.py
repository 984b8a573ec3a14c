"""The compression path (docs/design.md, "The compression path"), step by step.

1. no store, an agent that must not write (a fork), or a turn whose context is a
   caller's own history (``caller_history``) -> compress in memory only;
2. take the lease on the current segment; if taken, return the input untouched;
3. under the lease, re-check the segment is still the tip; if not, return untouched;
4. note the watermark, call the compressor, refreshing the lease meanwhile;
5. on failure or no progress: return untouched (the compressor started its cooldown);
6. rotate in one store transaction, adopt the child, release the lease in ``finally``.

"Untouched" means the very list object passed in, so callers detect a no-op by
``len(returned) == len(input)`` and stop retrying for the turn.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import TYPE_CHECKING, Any

from hermes.agent.window import CompressionOutcome
from hermes.state.context.message import Message
from hermes.state.errors import LeaseNotHeldError, NotTipError, StateError

if TYPE_CHECKING:
    from hermes.agent.host import TurnHost

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Refreshes a held lease on a daemon thread while the summary is written."""

    def __init__(self, db: Any, session_id: str, holder: str, ttl: float) -> None:
        self.db, self.session_id, self.holder, self.ttl = db, session_id, holder, ttl
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
        self.lost = False

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(max(self.ttl / 3, 0.05)):
            try:
                if not self.db.refresh_compression_lock(self.session_id, self.holder, self.ttl):
                    self.lost = True
                    return
            except StateError as exc:  # the publish will re-check the lease anyway
                log.warning("could not refresh the compression lease: %s", exc)


def compress_context(
    host: TurnHost,
    messages: list[Message],
    system_message: str | None,
    *,
    approx_tokens: int | None = None,
    focus_topic: str | None = None,
    whole: bool = False,
    detached: bool = False,
) -> tuple[list[Message], str | None]:
    """Compress ``messages`` (step 1-5 of the compression path in docs/design.md); ``whole`` asks the
    compressor to summarise even a short conversation (``/compress``); ``detached``
    messages are a caller's own history, compressed in memory only."""
    ask = _compress_call(approx_tokens, focus_topic, whole)
    outcome = CompressionOutcome(tokens_before=approx_tokens)
    host.window.note_compression(outcome)
    if not host.binding.writes_transcript or detached:
        if host.is_fork:
            outcome.reason = "a background review never compresses"
            return messages, system_message
        return _in_memory(host, messages, system_message, ask, outcome)

    db, session_id = host.binding.bound()
    holder, ttl = host.lease.holder, host.lease.ttl
    try:
        acquired = db.try_acquire_compression_lock(session_id, holder, ttl)
        if not acquired:
            outcome.holder = db.get_compression_lock_holder(session_id)
    except StateError as exc:
        return _store_failed(host, outcome, exc, messages, system_message)
    if not acquired:
        outcome.reason = f"another process holds the compression lease ({outcome.holder})"
        return messages, system_message
    try:
        return _compress_under_lease(host, messages, system_message, outcome, ask)
    except StateError as exc:  # any store failure: nothing changed, the turn goes on
        return _store_failed(host, outcome, exc, messages, system_message)
    finally:
        try:
            db.release_compression_lock(session_id, holder)
        except StateError as exc:  # the TTL frees it; never hide the real outcome
            log.warning("could not release the compression lease on %s: %s", session_id, exc)


def _store_failed(
    host: TurnHost,
    outcome: CompressionOutcome,
    exc: StateError,
    messages: list[Message],
    system_message: str | None,
) -> tuple[list[Message], str | None]:
    """Step 5 for the store: like a failed summary, nothing changes and a cooldown starts."""
    outcome.reason = f"the compression could not be saved, so nothing changed: {exc}"
    log.warning("compression of %s failed in the store: %s", host.binding.session_id, exc)
    cooldown = getattr(host.window.compressor, "start_cooldown", None)
    if callable(cooldown):
        cooldown(outcome.reason)
    return messages, system_message


def _compress_under_lease(
    host: TurnHost,
    messages: list[Message],
    system_message: str | None,
    outcome: CompressionOutcome,
    ask: dict[str, Any],
) -> tuple[list[Message], str | None]:
    db, session_id = host.binding.bound()
    holder, ttl = host.lease.holder, host.lease.ttl
    compressor = host.window.compressor
    segment = db.get_session(session_id)
    if segment is None or segment["ended_at"] is not None:
        # Only the call that rotates moves the agent: it follows the tip at its
        # next store access.
        outcome.reason = "this session was already rotated by another path"
        return messages, system_message
    watermark = db.last_message_id(session_id)
    with LeaseKeeper(db, session_id, holder, ttl):
        compressed = compressor.compress(messages, **ask)
    if failed(compressor, messages, compressed):
        outcome.reason = describe_failure(compressor)
        return messages, system_message
    compressed = with_uids(compressed)
    covered, by_stub = coverage(compressor)
    try:
        # By name: what the child holds, from which watermark, which uids its summary read.
        child = db.publish_compression_child(
            session_id,
            holder=holder,
            messages=compressed,
            watermark=watermark,
            covered_uids=covered,
            stub_covered_uids=by_stub,
        )
    except (LeaseNotHeldError, NotTipError) as exc:
        outcome.reason = str(exc)
        return messages, system_message
    new_system = adopt_child(host, outcome, session_id, child, compressed)
    return compressed, new_system if new_system is not None else system_message


def with_uids(messages: list[Message]) -> list[Message]:
    """``messages``, each with a uid: every message a child holds gets an identity the
    agent keeps in memory too."""
    return [m if m.get("message_uid") else {**m, "message_uid": uuid.uuid4().hex} for m in messages]


def adopt_child(
    host: TurnHost, outcome: CompressionOutcome, parent: str, child: str, compressed: list[Message]
) -> str | None:
    """Move the agent onto the published ``child`` of ``parent`` and say so (the outcome,
    the ``compressed`` event); the child's system prompt, if it has its own."""
    new_system = host.binding.adopt_segment(child, rotated_from=parent)
    outcome.rotated, outcome.parent_id, outcome.child_id = True, parent, child
    outcome.tokens_after = host.window.estimate_tokens(compressed)
    host.emit(
        "compressed",
        parent=parent,
        child=child,
        tokens_before=outcome.tokens_before,
        tokens_after=outcome.tokens_after,
    )
    return new_system


def coverage(compressor: Any) -> tuple[set[str], set[str]]:
    """The uids the compressor's last summary read, and those among them it read as their
    stub (invariant 14); none for a compressor that does not say (Hermes Agent's shape)."""
    covered = getattr(compressor, "last_covered_uids", None)
    by_stub = getattr(compressor, "last_stub_covered_uids", None)
    if not isinstance(covered, frozenset | set):
        return set(), set()
    if not isinstance(by_stub, frozenset | set):
        return set(covered), set()
    return set(covered), set(by_stub) & set(covered)


def _in_memory(
    host: TurnHost,
    messages: list[Message],
    system_message: str | None,
    ask: dict[str, Any],
    outcome: CompressionOutcome,
) -> tuple[list[Message], str | None]:
    compressor = host.window.compressor
    compressed = compressor.compress(messages, **ask)
    if failed(compressor, messages, compressed):
        outcome.reason = describe_failure(compressor)
        return messages, system_message
    outcome.rotated = False
    outcome.tokens_after = host.window.estimate_tokens(compressed)
    return compressed, system_message


def _compress_call(
    approx_tokens: int | None, focus_topic: str | None, whole: bool
) -> dict[str, Any]:
    """The compressor's keywords; ``whole`` only when wanted, so a compressor of Hermes
    Agent's shape (which has no such keyword) keeps working for automatic compression."""
    ask: dict[str, Any] = {"current_tokens": approx_tokens, "focus_topic": focus_topic}
    if whole:
        ask["whole"] = True
    return ask


def failed(compressor: Any, before: list[Message], after: list[Message]) -> bool:
    """The compressor made no progress: same list, an error, or nothing smaller."""
    return (
        after is before
        or not isinstance(after, list)
        or bool(getattr(compressor, "_last_summary_error", None))
        or getattr(compressor, "_last_compress_aborted", False) is True
        or len(after) >= len(before)
    )


def describe_failure(compressor: Any) -> str:
    error = getattr(compressor, "_last_summary_error", None)
    model = getattr(compressor, "_last_aux_model_failure_model", None)
    if error and model:
        return f"the summary model {model} failed: {error}"
    if error:
        return str(error)
    return "nothing to compress"
