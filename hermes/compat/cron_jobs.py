"""Hermes Agent 0.19's ``cron/jobs.json`` brought into the store's scheduled jobs.

Each job keeps its id (one that could not name its output folder, such as ``../x``, gets
a new one), name, prompt, skills, model, toolsets, schedule, workdir and
whether it is paused (a workdir hermes refuses, ``cron.workdir``, is dropped with a
warning: the job's runs then work in a folder of their own); a delivery to a chat (``telegram:123``, or ``origin`` with the chat it was
made in) keeps its chat, one naming only a platform (``telegram``: its home channel)
keeps it (the home channel is the one 0.19's ``.env`` names, or ``/sethome`` sets), and
one to a platform hermes does not serve becomes ``local`` (the log says so). Running it
again adds nothing twice.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes.compat import toolsets
from hermes.cron import CronStore, ScheduleError, TargetError, check_target, files, parse
from hermes.cron.shape import schedule_text
from hermes.cron.targets import PLATFORMS
from hermes.cron.workdir import WorkdirError, check_workdir
from hermes.state.backend import Backend

log = logging.getLogger(__name__)


def jobs_file(home: Path) -> Path:
    return home / "cron" / "jobs.json"


def read_jobs(path: Path) -> list[dict[str, Any]]:
    """The jobs of a jobs.json (``{"jobs": [...]}`` or a bare list); [] when absent."""
    if not path.is_file():
        return []
    data = json.loads(path.read_text(encoding="utf-8-sig"), strict=False)
    jobs = data.get("jobs", []) if isinstance(data, dict) else data
    return [job for job in jobs if isinstance(job, dict)] if isinstance(jobs, list) else []


def import_jobs(
    path: Path,
    backend: Backend,
    on_change: Callable[[CronStore], None] | None = None,
    *,
    hermes_home: Path | None = None,
) -> int:
    """Add the jobs of ``path`` the store does not hold yet; how many were added.
    Workdirs are checked against ``hermes_home`` (default: the home ``path`` is in)."""
    store = CronStore(backend, on_change=on_change)
    home = hermes_home or path.parent.parent
    held = {job["id"] for job in store.jobs()}
    added = 0
    for job in read_jobs(path):
        if str(job.get("id")) in held:
            continue
        try:
            add_job(store, job, home)
        except (ScheduleError, TargetError) as exc:
            log.warning("skipped Hermes Agent job %s (%s): %s", job.get("id"), job.get("name"), exc)
            continue
        added += 1
    return added


def add_job(store: CronStore, job: dict[str, Any], home: Path, *, any_id: bool = False) -> None:
    """One 0.19 job record into the store, under its id (a workdir hermes refuses is
    dropped, said in the log); ScheduleError/TargetError when hermes cannot take it.
    An id that names no output folder (``../x``) gets a new one, unless ``any_id``
    (0.19's ``save_jobs`` stores it as given: every use of it as a path refuses it)."""
    _add(store, job, _workdir(job, home, store.backend), any_id=any_id)


def _workdir(job: dict[str, Any], home: Path, backend: Backend) -> str | None:
    try:
        return check_workdir(job.get("workdir"), hermes_home=home, store=backend)
    except WorkdirError as exc:
        log.warning(
            "Hermes Agent job %s (%s) keeps no workdir here (%s); its runs work in a folder "
            "of their own.",
            job.get("id"),
            job.get("name"),
            exc,
        )
        return None


def _add(store: CronStore, job: dict[str, Any], workdir: str | None, *, any_id: bool) -> None:
    now = time.time()
    schedule = parse(schedule_text(job.get("schedule")), now=now)
    skills = job.get("skills") or ([job["skill"]] if job.get("skill") else [])
    prompt = str(job.get("prompt") or "")
    # 0.19 names a nameless job (an old or hand-edited record) by its prompt, its first
    # skill, else its id.
    label = prompt or (str(skills[0]) if skills else "") or str(job.get("id") or "")
    times, completed = repeat_count(job.get("repeat"))
    made = store.create_job(
        name=str(job.get("name") or "").strip() or label[:50].strip() or "cron job",
        schedule=schedule,
        prompt=prompt,
        deliver=_target(job),
        skills=[str(s) for s in skills],
        model=job.get("model") or None,
        toolsets=_toolsets(job.get("enabled_toolsets") or []),
        workdir=workdir,
        origin=job["origin"] if isinstance(job.get("origin"), dict) else None,
        context_from=_context_from(job.get("context_from")),
        repeat_times=times,
        completed=completed,
        # A one-shot whose time passed while nothing ran it is due now (run once late).
        now=now if schedule.run_at is None or schedule.run_at >= now else schedule.run_at,
        job_id=str(job["id"]) if any_id and job.get("id") else _kept_id(job),
    )
    later: dict[str, Any] = {}
    if times is None and made["repeat_times"] is not None:
        later["repeat_times"] = None  # a one-shot 0.19 lets run as often as it is due
    if job.get("enabled") is False or job.get("state") in ("paused", "completed"):
        later.update(enabled=0, next_run_at=None)
    if later:
        store.update_job(made["id"], **later)


def repeat_count(value: Any) -> tuple[int | None, int | None]:
    """0.19's ``repeat`` (``{"times": n or None, "completed": n}``) as the job's
    ``repeat_times`` (None: no limit) and ``completed`` (None: no record, no count)."""
    if not isinstance(value, dict):
        return None, None
    times, completed = _count(value.get("times")), _count(value.get("completed"))
    return times or None, completed


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def _context_from(value: Any) -> list[str]:
    """0.19's ``context_from`` (a job id, a list of them, or none) as a list of ids."""
    refs = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [str(ref).strip() for ref in refs if str(ref).strip()]


def _kept_id(job: dict[str, Any]) -> str | None:
    """The job's 0.19 id, unless it could not name its output folder (``../x``, a path):
    then the job comes over under an id of its own."""
    if not job.get("id"):
        return None
    try:
        return files.check_job_id(str(job["id"]))
    except ValueError:
        log.warning("Hermes Agent job %r (%s) gets a new id here.", job["id"], job.get("name"))
        return None


def _toolsets(names: list[Any]) -> list[str]:
    """0.19's toolset names as the tools hermes has (a job runs with those); names for
    every tool become none (no limit), and names of tools hermes lacks stay as they are
    (they offer nothing, as in 0.19 without those tools)."""
    names = [str(name) for name in names]
    if not names or any(n in ("all", "*", "coding") or n.startswith("hermes-") for n in names):
        return []
    return toolsets.chosen(names, None, None) or names


def _target(job: dict[str, Any]) -> str:
    deliver = str(job.get("deliver") or "local")
    if deliver == "origin":
        origin = job.get("origin") or {}
        if origin.get("platform") and origin.get("chat_id"):
            deliver = f"{origin['platform']}:{origin['chat_id']}"
        else:
            deliver = "local"
    deliver = deliver.split(",")[0]
    if ":" not in deliver and deliver != "local" and deliver not in PLATFORMS:
        log.warning(
            "job %s delivered to %s's home channel; it is stored only (local) here",
            job.get("id"),
            deliver,
        )
        deliver = "local"
    try:  # a platform alone stays: its home channel, 0.19's TELEGRAM_HOME_CHANNEL in .env
        return check_target(deliver)
    except TargetError:
        return "local"
