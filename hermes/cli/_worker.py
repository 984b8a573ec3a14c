"""Running a turn in a worker thread, so Ctrl-C stops the turn and not the chat.

The main thread waits for the worker in short slices. SIGINT raises
KeyboardInterrupt in the main thread only, where it becomes ``interrupt()`` (the
agent stops at its next safe point, a stream at once) while the main thread keeps
waiting for the worker to wind down. Questions the worker must ask the person (may
this dangerous command run?) are passed to the main thread and answered there.
"""

from __future__ import annotations

import queue
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

POLL_SECONDS = 0.05


@dataclass
class WorkerOutcome(Generic[T]):
    value: T | None = None
    interrupted: bool = False  # Ctrl-C was pressed while it ran


def run_in_worker(
    work: Callable[[], T],
    *,
    interrupt: Callable[[], None],
    on_interrupt: Callable[[], None] | None = None,
    service: Callable[[bool], None] | None = None,
) -> WorkerOutcome[T]:
    """Run ``work`` in a thread and wait for it; re-raise what it raised.

    ``service(interrupted)`` runs in the main thread between waits (to answer the
    worker's questions); ``on_interrupt`` after each Ctrl-C (to say so on screen).
    """
    box: dict[str, object] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # re-raised in the main thread below
            box["error"] = exc
        finally:
            done.set()

    outcome: WorkerOutcome[T] = WorkerOutcome()
    with sigint_raises():
        threading.Thread(target=run, name="hermes-turn", daemon=True).start()
        while not done.is_set():
            try:
                if service is not None:
                    service(outcome.interrupted)
                done.wait(POLL_SECONDS)
            except KeyboardInterrupt:
                outcome.interrupted = True
                interrupt()
                if on_interrupt is not None:
                    on_interrupt()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    outcome.value = box.get("value")  # type: ignore[assignment]
    return outcome


@contextmanager
def sigint_raises() -> Iterator[None]:
    """While the work runs, SIGINT raises KeyboardInterrupt here, however this process
    was started: a parent may have left SIGINT ignored (a shell without job control, a
    test runner's worker), which exec keeps and Python then honours by installing no
    handler, or blocked, which exec keeps too. Either way ^C would be lost and the turn
    could not be stopped. What was there before is put back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.getsignal(signal.SIGINT)
    if handler is signal.SIG_IGN or handler is signal.SIG_DFL or handler is None:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    masks = hasattr(signal, "pthread_sigmask")  # not on Windows
    blocked = masks and signal.SIGINT in signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if blocked:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        if handler is not signal.getsignal(signal.SIGINT):
            signal.signal(signal.SIGINT, handler if handler is not None else signal.SIG_DFL)


@dataclass
class _Question:
    command: str
    reason: str
    answered: threading.Event = field(default_factory=threading.Event)
    answer: bool = False


class Approvals:
    """Hands the agent's approval questions from the worker thread to the main thread."""

    def __init__(self, ask: Callable[[str, str], bool]) -> None:
        self._ask = ask
        self._questions: queue.Queue[_Question] = queue.Queue()

    def approve(self, command: str, reason: str) -> bool:
        """The agent's ``approve`` callback; blocks the worker until answered."""
        question = _Question(command, reason)
        self._questions.put(question)
        question.answered.wait()
        return question.answer

    def service(self, interrupted: bool) -> None:
        """Answer pending questions (main thread); after Ctrl-C the answer is no."""
        while True:
            try:
                question = self._questions.get_nowait()
            except queue.Empty:
                return
            try:
                question.answer = (
                    False if interrupted else bool(self._ask(question.command, question.reason))
                )
            except EOFError:
                question.answer = False
            finally:  # a Ctrl-C here answers no, then interrupts the turn as usual
                question.answered.set()
