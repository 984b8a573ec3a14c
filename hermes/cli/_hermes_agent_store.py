"""A Hermes Agent state.db where hermes keeps its store: upgrade it, or read it as it is.

On a terminal a command asks once whether to upgrade the file in place (a backup is
kept beside it; ``hermes.compat.upgrade``). Said no, or with nobody to ask (a script,
a pipe, cron, the gateway), hermes never changes the file unasked: a reading command
(`sessions list/show/search/export`) reads it as it is, read-only, with one line on
stderr naming the upgrade command; a command that writes is refused in one sentence.
`hermes import hermes-agent --yes` upgrades it without a terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from hermes.cli._progress import progress_display
from hermes.compat import upgrade
from hermes.errors import HermesError
from hermes.state import SessionDB
from hermes.state.diagnose import UPGRADE_COMMAND


@contextmanager
def upgraded_or_read_only(path: Path, *, read_only: bool) -> Iterator[SessionDB | None]:
    """None when the store was upgraded (open it as usual); else a read-only view."""
    if _agreed(path):
        run_upgrade(path)
        yield None
        return
    if not read_only:
        raise HermesError(
            f"Not changed: {path} is a Hermes Agent 0.19 store, which hermes only reads "
            f"until it is upgraded; run `{UPGRADE_COMMAND}` to upgrade it in place (a backup "
            "is kept beside it)."
        )
    with upgrade.read_only_view(path) as db:
        click.echo(
            f"Reading the Hermes Agent store {path} as it is, read-only; `{UPGRADE_COMMAND}` "
            "upgrades it in place.",
            err=True,
        )
        yield db


def run_upgrade(path: Path) -> upgrade.UpgradeReport | None:
    """Upgrade with a progress display, then say so in one line on stderr."""
    with progress_display() as show:
        report = upgrade.upgrade_in_place(path, progress=show)
    if report is not None:
        click.echo(report.summary(), err=True)
    return report


def _agreed(path: Path) -> bool:
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    return click.confirm(
        f"{path} is a Hermes Agent 0.19 store. Upgrade it in place for hermes now? The "
        "original is kept beside it as a backup; say no to only read it this time",
        default=True,
        err=True,
    )
