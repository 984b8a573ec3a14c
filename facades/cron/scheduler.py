"""Hermes Agent 0.19's ``cron.scheduler``: running a job now, over the gateways' scheduler.

In hermes every running gateway runs the jobs, each run once under a lease
(hermes.cron.service). ``run_job`` therefore does not run the agent in the caller's
process: it asks for a run now, as ``hermes cron run`` does, waits for a gateway to
finish it and answers 0.19's ``(success, document, final_response, error)``. The gateway
also delivered the answer, so ``_deliver_result`` delivers nothing more. ``tick`` makes
the due runs as a gateway's tick does, and waits for them the same way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from cron import _store
from hermes.config import load_config
from hermes.cron import files
from hermes.cron.targets import HOME_CHANNEL_ENV, PLATFORMS, configured_platforms, home_channel
from hermes.gateway.state_file import read_status

__all__ = [
    "SILENT_MARKER",
    "CronPromptInjectionBlocked",
    "cron_delivery_targets",
    "get_running_job_ids",
    "mark_running_jobs_interrupted",
    "run_job",
    "run_one_job",
    "tick",
]

logger = logging.getLogger(__name__)

SILENT_MARKER = "[SILENT]"
_KNOWN_DELIVERY_PLATFORMS = frozenset({"telegram", "discord", "slack"})
RUN_WAIT_SECONDS = 900.0  # a job's turn may take minutes; 0.19's callers wait as long
_POLL_SECONDS = 0.5


# The jobs whose runs this process waits on (run_job), as 0.19 counts the ones it runs.
_running_job_ids: set[str] = set()
_interrupted: dict[str, str] = {}  # job id -> why its waiting run_job is to stop
_running_lock = threading.Lock()


class CronPromptInjectionBlocked(Exception):
    """0.19 raises it when a job's assembled prompt trips its injection scanner, inside its
    own run. A hermes job runs on a gateway, which answers a refused run as a failed run,
    so no call here raises it; it is defined for callers that catch it."""


def get_running_job_ids() -> frozenset[str]:
    """The ids of the jobs whose runs this process is waiting on (``run_job``,
    ``run_one_job``, ``tick``), from the run's start to its end, as in 0.19."""
    with _running_lock:
        return frozenset(_running_job_ids)


def mark_running_jobs_interrupted(reason: str) -> list[str]:
    """Stop waiting on every run this process waits on: each ``run_job`` waiting returns
    at once as failed with ``reason`` (0.19's gateway calls this as it shuts down and
    kills their tools); the ids marked. The runs go on on their gateway, which records
    how each ends, so nothing is written here."""
    with _running_lock:
        marked = sorted(_running_job_ids)
        _interrupted.update(dict.fromkeys(marked, reason))
    return marked


def cron_delivery_targets() -> list[dict[str, Any]]:
    """The chat platforms a job can deliver to: those this home's ``gateway.platforms``
    enables, in 0.19's shape (``id``, ``name``, ``home_target_set``, ``home_env_var``):
    a home channel is the chat an admin's ``/sethome`` named, kept in ``.env`` under
    0.19's name (``TELEGRAM_HOME_CHANNEL``)."""
    home = _store.home()
    enabled = configured_platforms(load_config(home / "config.yaml"))
    return [
        {
            "id": name,
            "name": name.title(),
            "home_target_set": home_channel(home, name) is not None,
            "home_env_var": HOME_CHANNEL_ENV[name],
        }
        for name in PLATFORMS
        if name in enabled
    ]


def run_one_job(
    job: dict[str, Any], *, adapters: Any = None, loop: Any = None, verbose: bool = False
) -> bool:
    """Run one job end to end (its gateway saves, delivers and records the run); True once
    it was processed, failed or not, False only if processing raised (0.19's contract)."""
    try:
        success, _document, _answer, error = run_job(job)
    except Exception:
        logger.exception("Cron job %s could not be run", job.get("id"))
        return False
    if verbose:
        logger.info("Cron job %s: %s", job.get("id"), "ok" if success else error)
    return True


def tick(
    verbose: bool = True,
    adapters: Any = None,
    loop: Any = None,
    sync: bool = True,
    *,
    can_dispatch: Callable[[], bool] | None = None,
) -> int:
    """Make the run of every due job now, as a gateway's tick does (each once, under the
    home's ``cron.missed``), and wait for a gateway to finish them (``sync=False``: do not
    wait); the number of runs made. 0 when ``can_dispatch`` says no or no gateway runs."""
    if can_dispatch is not None and not can_dispatch():
        return 0
    if not read_status(_store.home()).running:
        if verbose:
            logger.info("No gateway runs on this home: no cron job is run.")
        return 0
    missed = str(load_config(_store.home() / "config.yaml").get("cron.missed") or "run_once")
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        made = [
            run
            for run in store.make_due_runs(time.time(), missed=missed)
            if run["status"] != "skipped"
        ]
        names = {job["id"]: job["name"] for job in store.jobs()}
    if verbose:
        logger.info("%d cron job(s) due", len(made))
    if sync:
        for run in made:
            _track({"id": run["job_id"], "name": names.get(run["job_id"])}, run["id"])
    return len(made)


def run_job(job: dict[str, Any], **_: Any) -> tuple[bool, str, str, str | None]:
    """Run ``job`` now on a gateway of this home and wait for its answer."""
    job_id = str(job.get("id") or "")
    if not read_status(_store.home()).running:
        return _failed(
            job,
            "No gateway is running on this home to run the job: start one "
            "with `hermes gateway run`, then run the job again.",
        )
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        run_id = store.run_now(job_id)
    if run_id is None:
        return _failed(job, f"There is no job {job_id!r} (see `hermes cron list`).")
    return _track(job, run_id)


def _track(job: dict[str, Any], run_id: str) -> tuple[bool, str, str, str | None]:
    """Wait for a gateway to finish the run, the job counted running here meanwhile."""
    job_id = str(job["id"])
    with _running_lock:
        _running_job_ids.add(job_id)
    try:
        return _wait_for_run(job, job_id, run_id)
    finally:
        with _running_lock:
            _running_job_ids.discard(job_id)
            _interrupted.pop(job_id, None)


def _wait_for_run(
    job: dict[str, Any], job_id: str, run_id: str
) -> tuple[bool, str, str, str | None]:
    name = str(job.get("name") or job_id)
    deadline = time.monotonic() + RUN_WAIT_SECONDS
    while time.monotonic() < deadline:
        with _store.cron_store(read_only=True) as store:
            assert store is not None
            run = next((r for r in store.runs(job_id, limit=20) if r["id"] == run_id), None)
            held = store.job(job_id)
        if run is not None and run["status"] in ("completed", "failed") and held is not None:
            files.note_gateway_run(_store.home(), job_id, run_id)
            document = files.run_document(held, run)
            if run["status"] == "failed":
                return False, document, "", run["error"]
            return True, document, run["output"] or "", None
        with _running_lock:
            reason = _interrupted.get(job_id)
        if reason is not None:
            return _failed(job, reason)
        time.sleep(_POLL_SECONDS)
    return _failed(
        job,
        f"The run of job {name!r} did not finish within {RUN_WAIT_SECONDS:.0f} "
        "s; it goes on on the gateway (see `hermes cron runs`).",
    )


def _failed(job: dict[str, Any], error: str) -> tuple[bool, str, str, str | None]:
    document = (
        f"# Cron Job: {job.get('name') or job.get('id')} (FAILED)\n\n"
        f"**Job ID:** {job.get('id')}\n\n## Error\n\n```\n{error}\n```\n"
    )
    return False, document, "", error


def _deliver_result(job: dict[str, Any], content: str, *_: Any, **__: Any) -> str | None:
    """The gateway that ran the job delivered its answer (once, from the outbox)."""
    return None
