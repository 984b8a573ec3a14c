"""Hermes Agent's `cron` package, as a facade over hermes (see facades/README.md).

As 0.19's package, it gives the job calls of ``cron.jobs``, ``JOBS_FILE`` and
``cron.scheduler.tick`` under ``cron`` itself.
"""

from cron.jobs import (
    JOBS_FILE,
    create_job,
    get_job,
    list_jobs,
    pause_job,
    remove_job,
    resume_job,
    trigger_job,
    update_job,
)
from cron.scheduler import tick

__all__ = [
    "JOBS_FILE",
    "create_job",
    "get_job",
    "list_jobs",
    "pause_job",
    "remove_job",
    "resume_job",
    "tick",
    "trigger_job",
    "update_job",
]
