"""Scheduled jobs: their schedules, the runs every gateway claims under a lease, and the
delivery outbox (docs/design.md, invariant "Scheduled work happens once")."""

from hermes.cron.schedule import Schedule, ScheduleError, parse
from hermes.cron.store import CronStore
from hermes.cron.targets import TargetError, check_target

__all__ = ["CronStore", "Schedule", "ScheduleError", "TargetError", "check_target", "parse"]
