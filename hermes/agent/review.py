"""The background review: a read-only fork that saves memories after some turns.

Every ``agent.review_interval`` user turns the agent starts a fork on a daemon thread:
the same model, the same session id and the same system prompt (so the provider's
prompt cache hits), the conversation so far, and one harness prompt asking it to save
durable facts with the ``memory`` tool. Invariant 8: the fork never writes the
transcript, never compresses or rotates, never moves a gateway route and never closes
its parent's resources; its only tool is ``memory``. It is bounded in iterations and
time, and a failure only logs.

The user may take part of the snapshot back (``/undo``, ``/retry``, a regenerated or
deleted response) while the review runs (invariant 16). So just before each request goes
out, and again when its answer comes (before the answer's tools act), the fork asks the
store whether a message of its snapshot is now marked undone; if one is, the review is
withdrawn: nothing more is sent or saved. An undo in this process also withdraws the
conversation's running reviews at once (``withdraw``), which aborts a request in flight.
What no check can do is call back a request that had left, or was leaving (between the
store's answer and its bytes on the wire), when the undo committed: the promise is that
no request whose check began after the undo committed carries what it took back.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes.state.context.message import Message

if TYPE_CHECKING:
    from hermes.agent.host import ReviewFork, TurnHost

log = logging.getLogger(__name__)

HARNESS_PROMPT = (
    "[Background review] Look back over this conversation. Save, with the memory tool, "
    "durable facts about the user (target 'user') and notes that will help you in later "
    "conversations (target 'memory'). Save only what is new, lasting and useful; skip "
    "what is already in memory. When done, reply with one short line saying what you saved."
)
SKILLS_HINT = (
    " The user lets you keep skills too: when this conversation worked out a reusable "
    "procedure, create a skill with skill_manage, or patch the skill that was used if it "
    "was wrong or missed a step."
)
REVIEW_MAX_ITERATIONS = 6
REVIEW_TIMEOUT = 120.0


@dataclass
class ReviewResult:
    saved: int = 0
    summary: str = ""
    error: str | None = None
    withdrawn: bool = False  # part of its snapshot was taken back: it stopped


class Withdrawn(Exception):
    """Part of the review's snapshot was taken back; it sends nothing more."""


def due(host: TurnHost) -> bool:
    interval, binding = host.settings.review_interval, host.binding
    return (
        interval > 0
        and not host.is_fork
        and binding.session_db is not None
        and binding.user_turns > 0
        and binding.user_turns % interval == 0
    )


class Review(threading.Thread):
    """One background review: its snapshot, the fork that reads it, and the check
    that withdraws it once the user takes part of the snapshot back."""

    def __init__(self, host: TurnHost, messages: list[Message]) -> None:
        super().__init__(name="background-review", daemon=True)
        self.host = host
        self.conversation_id = host.binding.conversation_id
        self.messages = messages
        self.uids = [str(m["message_uid"]) for m in messages if m.get("message_uid")]
        self.withdrawn = threading.Event()
        self.fork: ReviewFork | None = None

    def run(self) -> None:
        with _running_lock:
            _running.setdefault(self.conversation_id, set()).add(self)
        try:
            result = self.review()
        finally:
            with _running_lock:
                running = _running.get(self.conversation_id, set())
                running.discard(self)
                if not running:
                    _running.pop(self.conversation_id, None)
        if result.error:
            log.warning("background review failed: %s", result.error)
        elif result.withdrawn:
            log.info("background review withdrawn: %s", result.summary)
        self.host.emit("review", saved=result.saved, summary=result.summary, error=result.error)

    def review(self) -> ReviewResult:
        return run(self.host, self.messages, self)

    def withdraw(self) -> None:
        """Send nothing more, and abort the request in flight."""
        self.withdrawn.set()
        fork = self.fork
        if fork is not None:
            fork.interrupt()

    def guard(self, stage: str) -> None:
        """The fork's client calls this before each request ("send") and on each answer
        ("answer"): raises ``Withdrawn`` once a message of the snapshot is undone."""
        checked_at = time.time()  # before the store is read: an undo committed by now shows
        db = self.host.binding.session_db
        if self.withdrawn.is_set() or (db is not None and db.any_undone(self.uids)):
            self.withdrawn.set()
            raise Withdrawn("part of the conversation it read was taken back")
        if stage == "send":
            self.host.emit("review_request", checked_at=checked_at, messages=self.messages)


_running: dict[str | None, set[Review]] = {}  # conversation id -> its running reviews
_running_lock = threading.Lock()


def spawn(host: TurnHost, messages: list[Message]) -> Review:
    """Start the review on a daemon thread and return it (callers need not wait)."""
    review = Review(host, [m.copy() for m in messages])
    review.start()
    host.review_threads.append(review)
    return review


def withdraw(conversation_id: str | None) -> None:
    """Withdraw this process's running reviews of the conversation: part of what they
    read is being taken back (their store check catches it too; this is at once)."""
    with _running_lock:
        reviews = list(_running.get(conversation_id, ()))
    for review in reviews:
        review.withdraw()


def make_fork(host: TurnHost) -> ReviewFork:
    """The read-only fork a review runs (the host makes it: ``review_fork``)."""
    return host.review_fork()


def _harness(fork: ReviewFork) -> str:
    return HARNESS_PROMPT + (SKILLS_HINT if "skill_manage" in fork.tool_names() else "")


def run(host: TurnHost, messages: list[Message], review: Review | None = None) -> ReviewResult:
    review = review or Review(host, messages)
    try:
        fork = review.fork = make_fork(host)
        fork.guard_model_calls(review.guard)
        watchdog = threading.Timer(REVIEW_TIMEOUT, fork.interrupt)
        watchdog.daemon = True
        watchdog.start()
        try:
            outcome = fork.run(_harness(fork), conversation_history=messages)
        finally:
            watchdog.cancel()
            fork.client.close()  # the fork's own client, never the parent's
    except Withdrawn as why:
        return ReviewResult(summary=f"withdrawn: {why}", withdrawn=True)
    except Exception as exc:  # a review must never hurt the conversation
        return ReviewResult(error=f"{type(exc).__name__}: {exc}")
    if review.withdrawn.is_set():  # an undo here interrupted its request
        return ReviewResult(
            summary="withdrawn: part of the conversation it read was taken back", withdrawn=True
        )
    saved = sum(
        1
        for m in outcome.messages[len(messages) :]
        if m.get("role") == "tool"
        and m.get("tool_name") == "memory"
        and not str(m.get("content", "")).startswith("Error")
    )
    noun = "memory" if saved == 1 else "memories"
    return ReviewResult(saved=saved, summary=f"saved {saved} {noun}")
