"""Bounded patience: retry an attempt with full-jitter backoff until a deadline.

Both backends wait out the same things this way (another process's lock, a conflict
between writers, a server restarting): the attempt is retried while its error is
transient, each wait a random share of a doubling delay (full jitter, so that waiting
processes spread out instead of retrying in step), never past the deadline; when the
deadline has passed, the caller's ``give_up`` turns the last error into the one raised.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
E = TypeVar("E", bound=Exception)


@dataclass(frozen=True)
class Backoff:
    """The delay before the first retry and the most it grows to (seconds)."""

    first: float
    most: float


def retry_until(
    deadline: float,
    attempt: Callable[[], T],
    *,
    transient: type[E],
    give_up: Callable[[E], BaseException],
    backoff: Backoff,
    is_transient: Callable[[E], bool] = lambda _: True,
) -> T:
    """``attempt()``, retried while it raises a ``transient`` error that
    ``is_transient`` accepts, until ``deadline`` (``time.monotonic()``); then
    ``give_up(error)`` is raised. Any other error propagates at once."""
    delay = backoff.first
    while True:
        try:
            return attempt()
        except transient as exc:
            if not is_transient(exc):
                raise
            left = deadline - time.monotonic()
            if left <= 0:
                raise give_up(exc) from exc
            time.sleep(min(random.uniform(0, delay), left))
            delay = min(delay * 2, backoff.most)
