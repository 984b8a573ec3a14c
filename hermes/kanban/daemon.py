"""The dispatcher in the foreground (0.19's ``run_daemon``, behind ``hermes kanban daemon``
there): a dispatcher tick on the active board every ``interval`` seconds until SIGINT or
SIGTERM (or the caller's ``stop_event``). hermes's own dispatcher ticks when a caller asks
(hermes-webui's Dispatch button calls ``dispatch_once``); this loop is for a board nobody
dispatches by hand. A tick that fails is logged in one line and the loop goes on: one bad
tick must not leave the board undispatched."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from hermes.kanban.db import connect_closing
from hermes.kanban.paths import get_current_board
from hermes.kanban.records import DispatchResult
from hermes.kanban.tasks import DEFAULT_FAILURE_LIMIT

log = logging.getLogger(__name__)

Tick = Callable[..., DispatchResult]  # dispatch_once(conn, max_spawn=, failure_limit=)


@contextlib.contextmanager
def _stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` while inside (on the main thread only: Python lets
    no other set a handler), and the handlers found are put back on leaving."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    found = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in found:
        signal.signal(sig, lambda _signum, _frame: stop.set())
    try:
        yield
    finally:
        for sig, handler in found.items():
            signal.signal(sig, handler)


def run_daemon(
    tick: Tick,
    *,
    interval: float = 60.0,
    max_spawn: int | None = None,
    failure_limit: int = DEFAULT_FAILURE_LIMIT,
    stop_event: threading.Event | None = None,
    on_tick: Callable[[DispatchResult], Any] | None = None,
) -> None:
    """Call ``tick`` on the active board every ``interval`` seconds until stopped;
    ``on_tick`` gets each tick's result."""
    stop = stop_event if stop_event is not None else threading.Event()
    with _stopped_by_signals(stop):
        print(  # once it can be stopped so
            f"hermes: the Kanban dispatcher runs on board {get_current_board()!r} every "
            f"{interval:g}s until stopped (Ctrl-C or SIGTERM).",
            file=sys.stderr,
            flush=True,
        )
        while not stop.is_set():
            try:
                with connect_closing() as conn:
                    result = tick(conn, max_spawn=max_spawn, failure_limit=failure_limit)
                if on_tick is not None:
                    on_tick(result)
            except Exception as exc:  # noqa: BLE001  one bad tick must not stop the loop
                log.error("A Kanban dispatcher tick failed (%s); the next one runs as usual.", exc)
            stop.wait(timeout=interval)
    print("hermes: the Kanban dispatcher stopped.", file=sys.stderr, flush=True)
