"""When a job is due: a cron expression, ``every 2h``, a one-shot ISO time or ``in 30m``.

A schedule is parsed once, when a job is made or edited; a relative one-shot (``30m``,
``in 30m``) is stored as the absolute time it names, so a restart never moves it.
Cron expressions are read by ``croniter`` in the job's time zone (the machine's when it
has none), so 09:00 stays 09:00 across daylight-saving changes.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from datetime import datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hermes.errors import HermesError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(
    r"^(\d+)\s*(s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours"
    r"|d|day|days)$"
)
_CRON_FIELD = re.compile(r"^[\d*\-,/A-Za-z?LW#]+$")
HELP = "use a cron expression ('0 9 * * *'), 'every 30m', a time ('2026-02-03T14:00') or 'in 30m'"


class ScheduleError(HermesError):
    """A schedule hermes cannot read; the message says which forms it takes."""


@dataclass(frozen=True)
class Schedule:
    kind: str  # "cron", "interval" or "once"
    text: str  # what is stored: a relative one-shot becomes its absolute time
    display: str
    seconds: int | None = None  # interval
    run_at: float | None = None  # once

    def next_after(
        self, after: float, *, anchor: float, timezone: str | None = None
    ) -> float | None:
        """The first due time later than ``after``; None when there is none (a one-shot
        that has had its time). An interval counts from ``anchor`` (the job's start)."""
        if self.kind == "once":
            assert self.run_at is not None
            return self.run_at if self.run_at > after else None
        if self.kind == "interval":
            assert self.seconds
            steps = max(0, math.floor((after - anchor) / self.seconds)) + 1
            return anchor + steps * self.seconds
        from croniter import croniter

        start = datetime.fromtimestamp(after, zone(timezone))
        return float(croniter(self.text, start).get_next(float))


def zone(name: str | None) -> tzinfo | None:
    """The named IANA zone; None (the machine's local zone) when no name is given."""
    if not name:
        return datetime.now().astimezone().tzinfo
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(
            f"Unknown time zone {name!r}: use an IANA name such as 'Europe/Berlin' or 'UTC'."
        ) from exc


def parse_duration(text: str) -> int:
    """Seconds in ``30m``, ``2h``, ``1d``, ``10s``; ScheduleError otherwise."""
    match = _DURATION.match(text.strip().lower())
    if not match or int(match[1]) == 0:
        raise ScheduleError(
            f"Invalid duration {text!r}: use a number and a unit, as '30m', '2h' or '1d'."
        )
    return int(match[1]) * _UNITS[match[2][0]]


def parse(text: str, *, timezone: str | None = None, now: float | None = None) -> Schedule:
    """Read a schedule as ``hermes cron create --schedule`` takes it."""
    given = (text or "").strip()
    lower = given.lower()
    now = time.time() if now is None else now
    if lower.startswith("every "):
        seconds = parse_duration(given[6:])
        return Schedule(
            "interval", f"every {given[6:].strip()}", f"every {_short(seconds)}", seconds=seconds
        )
    if _looks_like_cron(given):
        return _cron(given, timezone)
    if re.match(r"^\d{4}-\d{2}-\d{2}", given):
        return _at(given, timezone)
    relative = given[3:] if lower.startswith("in ") else given
    try:
        seconds = parse_duration(relative)
    except ScheduleError:
        raise ScheduleError(f"Invalid schedule {given!r}: {HELP}.") from None
    run_at = now + seconds
    iso = datetime.fromtimestamp(run_at, zone(timezone)).isoformat(timespec="seconds")
    return Schedule("once", iso, f"once in {relative.strip()}", run_at=run_at)


def _looks_like_cron(text: str) -> bool:
    parts = text.split()
    return len(parts) in (5, 6) and all(_CRON_FIELD.match(p) for p in parts)


def _cron(text: str, timezone: str | None) -> Schedule:
    from croniter import croniter

    zone(timezone)  # an unknown zone is its own sentence
    if not croniter.is_valid(text):
        raise ScheduleError(f"Invalid cron expression {text!r}: {HELP}.")
    return Schedule("cron", " ".join(text.split()), text)


def _at(text: str, timezone: str | None) -> Schedule:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ScheduleError(f"Invalid time {text!r}: {HELP}.") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone(timezone))
    return Schedule(
        "once",
        moment.isoformat(timespec="seconds"),
        f"once at {moment.strftime('%Y-%m-%d %H:%M')}",
        run_at=moment.timestamp(),
    )


def _short(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
