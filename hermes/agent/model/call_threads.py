"""Threads for model calls, kept between calls instead of started for each.

A model call runs in a thread of its own so that ``interrupt()`` hands control back at
once (``client``). Starting a thread costs about a tenth of a millisecond of CPU, a
visible share of a small turn, so a thread whose call is over waits for the next one.

The threads are daemons: a call abandoned by an interrupt never holds up the exit of
the process (``concurrent.futures`` joins its threads at exit, hence not used here). A
busy thread is never handed new work, so an abandoned call delays nobody; at most
``KEEP`` idle threads wait. A forked child forgets the parent's threads (they do not
exist in it).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable

__all__ = ["KEEP", "run_in_thread"]

log = logging.getLogger(__name__)

KEEP = 8  # idle threads kept; more concurrent calls start threads that then end

_idle: list[queue.SimpleQueue[Callable[[], None]]] = []
_lock = threading.Lock()


def run_in_thread(work: Callable[[], None]) -> None:
    """Run ``work`` in a kept idle thread, or in a new one; return at once."""
    with _lock:
        inbox = _idle.pop() if _idle else None
    if inbox is None:
        inbox = queue.SimpleQueue()
        thread = threading.Thread(target=_serve, args=(inbox,), name="hermes-model-call")
        thread.daemon = True
        thread.start()
    inbox.put(work)


def _serve(inbox: queue.SimpleQueue[Callable[[], None]]) -> None:
    while True:
        work = inbox.get()
        try:
            work()
        except BaseException:  # the caller hands its own errors on; this is a bug
            log.exception("a model-call thread's work failed")
        with _lock:
            if len(_idle) >= KEEP:
                return
            _idle.append(inbox)


def _forget_threads() -> None:
    global _lock
    _idle.clear()
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_threads)
