"""A long store operation's progress on stderr: `hermes migrate`, `hermes import`, and
the upgrade of a Hermes Agent store a command asks for (``_hermes_agent_store``).

A bar on a terminal; off one (a pipe, a log), a few lines per step.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click


@contextmanager
def progress_display() -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar on a terminal; else a few lines per step on stderr (a log)."""
    if not sys.stderr.isatty():
        yield ProgressLines()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    bars = Progress(
        TextColumn("{task.description:<18}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )
    tasks: dict[str, TaskID] = {}

    def show(step: str, done: int, total: int) -> None:
        if step not in tasks:
            tasks[step] = bars.add_task(step, total=total)
        bars.update(tasks[step], completed=done, total=total)

    with bars:
        yield show


class ProgressLines:
    """Progress for a log, not a screen: each step's first batch, then a line at most
    every ``every`` seconds, and its last (a 300-batch import is a handful of lines)."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.last: dict[str, float] = {}

    def __call__(self, step: str, done: int, total: int) -> None:
        if step == "verify":
            if not done:
                click.echo("verifying: counting rows and hashing every message", err=True)
            return
        if not done:
            return
        now = time.monotonic()
        if done < total and now - self.last.get(step, -self.every) < self.every:
            return
        self.last[step] = now
        click.echo(f"{step}: {done}/{total}", err=True)
