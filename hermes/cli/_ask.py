"""Asking before a command destroys something, and reading how long ago "old" is.

A destructive command asks on a terminal; without one (a script, a pipe, cron) it
refuses unless ``--yes`` was given, because a piped ``n`` or an empty stdin must never
count as consent, nor silence as refusal that looks like success.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

import click

from hermes.errors import HermesError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "": 86400}


def confirm_or_refuse(question: str, *, yes: bool, action: str) -> None:
    """Go on if ``yes`` or the person says yes on a terminal; else stop (exit 1)."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise HermesError(
            f"Not {action}: there is no terminal to ask on; add --yes to confirm "
            "(see what it would do first with --dry-run)."
        )
    click.confirm(question, abort=True)


def parse_duration(text: str) -> float:
    """Seconds in '90d', '12h', '30m', '2w', '45s'; a plain number counts days."""
    match = _DURATION.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ValueError(text)
    return float(match.group(1)) * _SECONDS[match.group(2).lower()]


def describe_duration(seconds: float) -> str:
    """'90 days', '12 hours', '30 minutes': the largest unit that divides it cleanly."""
    for unit, size in (("week", 7 * 86400), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and (seconds / size).is_integer():
            count = int(seconds / size)
            return f"{count} {unit}" if count == 1 else f"{count} {unit}s"
    return f"{seconds:g} seconds"


# click's ParamType is generic in recent releases only; pyproject admits click 8.1, where
# subscripting it would fail at import, so only the type checker sees the parameters.
if TYPE_CHECKING:
    _FloatType = click.ParamType[float, str | float]
else:
    _FloatType = click.ParamType


class Duration(_FloatType):
    """A click option type for ``parse_duration``: the value is in seconds."""

    name = "DURATION"

    def convert(
        self, value: str | float, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            return parse_duration(str(value))
        except ValueError:
            self.fail(
                f"'{value}' is not a duration; use e.g. 90d, 12h, 30m, 2w, or a number of days.",
                param,
                ctx,
            )
