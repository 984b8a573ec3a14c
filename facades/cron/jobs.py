"""Hermes Agent 0.19's ``cron.jobs``: scheduled jobs, over the store (hermes.cron).

The jobs live in the state store, as ``hermes cron`` keeps them; these calls read and
change them there and answer in 0.19's job shape (``schedule`` as a dict,
``schedule_display``, ``state``, ISO times, ``last_status``). ``cron/jobs.json`` and
``cron/output/`` are kept in step for readers (hermes.cron.files), never read back.
A schedule or delivery hermes cannot take is a ``ValueError`` with hermes's sentence,
as 0.19 raises one. ``HERMES_DIR``, ``CRON_DIR``, ``JOBS_FILE`` and ``OUTPUT_DIR`` are
the home's at import, as in 0.19 (readers reassign them per profile); every call itself
reads the home it runs in.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from hermes_constants import reset_hermes_home_override, set_hermes_home_override

from cron import _store
from hermes.compat import cron_jobs
from hermes.cron import ScheduleError, TargetError, check_target, files, parse
from hermes.cron.schedule import zone
from hermes.cron.shape import origin_target, schedule_019, schedule_text
from hermes.cron.store import CronStore
from hermes.cron.workdir import WorkdirError, check_workdir
from hermes.state import lease

__all__ = [
    "CRON_DIR",
    "HAS_CRONITER",
    "HERMES_DIR",
    "JOBS_FILE",
    "OUTPUT_DIR",
    "TICKER_HEARTBEAT_FILE",
    "TICKER_INTERVAL_SECONDS",
    "TICKER_SUCCESS_FILE",
    "AmbiguousJobReference",
    "ONESHOT_RUN_CLAIM_TTL_SECONDS",
    "advance_next_run",
    "claim_dispatch",
    "claim_job_for_fire",
    "compute_next_run",
    "create_job",
    "ensure_dirs",
    "get_cron_output_dir",
    "get_due_jobs",
    "get_job",
    "get_ticker_heartbeat_age",
    "get_ticker_success_age",
    "heartbeat_run_claim",
    "list_jobs",
    "load_jobs",
    "mark_job_run",
    "parse_duration",
    "parse_schedule",
    "pause_job",
    "referenced_skill_names",
    "record_ticker_heartbeat",
    "remove_job",
    "resolve_job_ref",
    "resume_job",
    "rewrite_skill_refs",
    "save_job_output",
    "save_jobs",
    "trigger_job",
    "update_job",
    "use_cron_store",
]

HERMES_DIR = _store.home()
CRON_DIR = HERMES_DIR / "cron"
JOBS_FILE = CRON_DIR / "jobs.json"
OUTPUT_DIR = CRON_DIR / "output"
TICKER_HEARTBEAT_FILE = CRON_DIR / files.HEARTBEAT_FILE
TICKER_SUCCESS_FILE = CRON_DIR / files.SUCCESS_FILE
TICKER_INTERVAL_SECONDS = 60  # 0.19's; a gateway's scheduler ticks more often
ONESHOT_RUN_CLAIM_TTL_SECONDS = 1800  # 0.19's; hermes's runs are held under leases
HAS_CRONITER = True  # croniter is one of hermes's dependencies (optional in 0.19)


def _records(store: CronStore | None) -> list[dict[str, Any]]:
    if store is None:  # no store yet, or Hermes Agent's: its own jobs.json, if any
        return cron_jobs.read_jobs(cron_jobs.jobs_file(_store.home()))
    return [
        files.job_record(job, next(iter(store.runs(job["id"], limit=1)), None))
        for job in store.jobs()
    ]


def _record(store: CronStore, job: dict[str, Any] | None) -> dict[str, Any] | None:
    if job is None:
        return None
    latest = next(iter(store.runs(job["id"], limit=1)), None)
    return files.job_record(job, latest)


ONESHOT_GRACE_SECONDS = 120  # 0.19's: a one-shot this late still runs


def _hermes_now() -> datetime:
    """Now, zone-aware: 0.19's clock (``hermes_time.now``) in the machine's zone, as 0.19's
    is with no ``timezone`` configured (hermes keeps a zone per job, none for the home).
    Read through the module, so a test can set the clock as it does on 0.19."""
    return datetime.now().astimezone()


_DURATION = re.compile(r"^(\d+)\s*(m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days)$")


def parse_duration(s: str) -> int:
    """``30m``, ``2h``, ``1d`` (and 0.19's other spellings) in minutes; ValueError else."""
    text = s.strip().lower()
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"Invalid duration: '{text}'. Use format like '30m', '2h', or '1d'")
    return int(match.group(1)) * {"m": 1, "h": 60, "d": 1440}[match.group(2)[0]]


def parse_schedule(schedule: str) -> dict[str, Any]:
    """0.19's schedule dict (``kind``, ``minutes``/``expr``/``run_at``, ``display``) of a
    schedule as ``hermes cron create`` reads it; ValueError for one it cannot read."""
    try:
        return schedule_019(parse(schedule))
    except ScheduleError as exc:
        raise ValueError(str(exc)) from exc


def compute_next_run(schedule: dict[str, Any], last_run_at: str | None = None) -> str | None:
    """The next due time (ISO) of a 0.19 schedule dict, counted from ``last_run_at`` (ISO)
    or now; None for a one-shot whose time is past (by more than 0.19's grace)."""
    if not isinstance(schedule, dict) or not schedule.get("kind"):
        return None
    try:
        parsed = parse(schedule_text(schedule))
    except ScheduleError:
        return None
    now = _hermes_now()
    base = now
    if last_run_at:
        try:
            base = datetime.fromisoformat(last_run_at)
        except ValueError:
            base = now
        if base.tzinfo is None:
            base = base.replace(tzinfo=zone(None))
    if parsed.kind == "once":
        assert parsed.run_at is not None
        fresh = parsed.run_at >= now.timestamp() - ONESHOT_GRACE_SECONDS and not last_run_at
        return str(schedule.get("run_at") or parsed.text) if fresh else None  # as given
    if parsed.kind == "interval":
        return (base + timedelta(seconds=parsed.seconds or 0)).isoformat()
    from croniter import croniter

    return croniter(parsed.text, base).get_next(datetime).isoformat()  # type: ignore[no-any-return]


def load_jobs() -> list[dict[str, Any]]:
    """Every job, paused ones too, in 0.19's shape."""
    with _store.cron_store(read_only=True) as store:
        return _records(store)


def list_jobs(include_disabled: bool = False) -> list[dict[str, Any]]:
    jobs = load_jobs()
    if not include_disabled:
        jobs = [job for job in jobs if job["enabled"]]
    for job in jobs:
        job.setdefault("latest_execution", None)
    return jobs


def get_job(job_id: str) -> dict[str, Any] | None:
    return next((job for job in load_jobs() if job["id"] == job_id), None)


class AmbiguousJobReference(LookupError):
    """A job name that more than one job has (``matches``: their records)."""

    def __init__(self, ref: str, matches: list[dict[str, Any]]) -> None:
        self.ref = ref
        self.matches = matches
        ids = ", ".join(job["id"] for job in matches)
        super().__init__(f"Job name {ref!r} is ambiguous ({ids}): use the job id instead.")


def resolve_job_ref(ref: str) -> dict[str, Any] | None:
    """The job whose id is ``ref``, else the one job so named (any case)."""
    jobs = load_jobs()
    exact = [job for job in jobs if job["id"] == ref]
    named = [job for job in jobs if str(job["name"]).lower() == str(ref).lower()]
    if len(named) > 1 and not exact:
        raise AmbiguousJobReference(ref, named)
    found = exact or named
    return found[0] if found else None


def create_job(
    prompt: str | None,
    schedule: str | dict[str, Any],
    name: str | None = None,
    repeat: int | None = None,
    deliver: str | None = None,
    origin: dict[str, Any] | None = None,
    skill: str | None = None,
    skills: list[str] | None = None,
    model: str | None = None,
    provider: str | None = None,
    base_url: str | None = None,
    script: str | None = None,
    context_from: str | list[str] | None = None,
    enabled_toolsets: list[str] | None = None,
    workdir: str | None = None,
    no_agent: bool = False,
    attach_to_session: bool | None = None,
) -> dict[str, Any]:
    """A new job in the store, as ``hermes cron create`` makes one; 0.19's record of it.

    ``script``/``no_agent`` jobs are 0.19's alone: refused. ``repeat``: how many runs
    the job makes (None, 0 or less: as many as its schedule gives; a one-shot's is 1).
    ``context_from`` (a job id or ids): each run is given those jobs' latest answers first.
    """
    if script or no_agent:
        raise ValueError("hermes runs every job as an agent prompt: script jobs are not supported.")
    sources = _job_refs(context_from)
    chosen = list(skills or ([skill] if skill else []))
    text = prompt or ""
    target = deliver or ("origin" if origin else "local")
    if target == "origin":
        target = origin_target(origin) or "local"  # 0.19 keeps a job with no chat local
    try:
        parsed = parse(schedule_text(schedule))
        check_target(target)
        with _store.cron_store(read_only=False) as store:
            assert store is not None
            folder = check_workdir(workdir, hermes_home=_store.home(), store=store.backend)
            made = store.create_job(
                name=name or (text or (chosen[0] if chosen else "cron job"))[:50].strip(),
                schedule=parsed,
                prompt=text,
                deliver=target,
                skills=chosen,
                model=model or None,
                toolsets=[str(t).strip() for t in enabled_toolsets or () if str(t).strip()],
                workdir=folder,
                origin=dict(origin) if origin else None,
                context_from=sources,
                repeat_times=repeat if repeat and repeat > 0 else None,
            )
            record = _record(store, made)
    except (ScheduleError, TargetError, WorkdirError) as exc:
        raise ValueError(str(exc)) from exc
    assert record is not None
    return record


_UPDATABLE = {
    "name": "name",
    "prompt": "prompt",
    "model": "model",
    "deliver": "deliver",
    "skills": "skills",
    "enabled_toolsets": "toolsets",
}


def update_job(job_id: str, updates: dict[str, Any]) -> dict[str, Any] | None:
    """Change a job's name, prompt, schedule, skills, model, delivery (``origin``: the chat
    in its ``origin``), toolsets, workdir (empty: none), ``origin``, ``context_from``,
    ``repeat`` (its ``times`` and ``completed``; none: it keeps no count) or whether it
    runs; None: no such job. ``id`` cannot change."""
    if "id" in (updates or {}):
        raise ValueError("A job's id cannot change.")
    fields: dict[str, Any] = {}
    for key, value in (updates or {}).items():
        if key in _UPDATABLE:
            fields[_UPDATABLE[key]] = value
        elif key == "skill":
            fields["skills"] = [value] if value else []
        elif key == "schedule":
            fields["schedule"] = parse(schedule_text(value)).text
        elif key == "next_run_at":
            fields["next_run_at"] = _epoch(value)
        elif key == "enabled":
            fields["enabled"] = 1 if value else 0
            if not value:
                fields["next_run_at"] = None
        elif key == "context_from":
            fields["context_from"] = _job_refs(value)
        elif key == "origin":
            fields["origin"] = dict(value) if isinstance(value, dict) and value else None
        elif key == "repeat":
            fields["repeat_times"], fields["completed"] = cron_jobs.repeat_count(value)
    try:
        with _store.cron_store(read_only=False) as store:
            assert store is not None
            if fields.get("deliver") == "origin":  # 0.19's: the chat the job was made from
                held = store.job(job_id) or {}
                fields["deliver"] = origin_target(fields.get("origin", held.get("origin")))
            if "deliver" in fields:
                fields["deliver"] = check_target(fields["deliver"])
            if "workdir" in (updates or {}):
                fields["workdir"] = check_workdir(
                    updates["workdir"], hermes_home=_store.home(), store=store.backend
                )
            changed = store.update_job(job_id, **fields) if fields else store.job(job_id)
            return _record(store, changed if changed and changed["id"] == job_id else None)
    except (ScheduleError, TargetError, WorkdirError) as exc:
        raise ValueError(str(exc)) from exc


def _job_refs(value: str | list[str] | None) -> list[str]:
    """0.19's ``context_from`` (a job id or a list of them; blank: none) as a list."""
    refs = [value] if isinstance(value, str) else list(value or ())
    return [str(ref).strip() for ref in refs if str(ref).strip()]


def _epoch(when: str | None) -> float | None:
    """An ISO time (a naive one in the configured zone) as epoch seconds; None for none."""
    if not when:
        return None
    try:
        moment = datetime.fromisoformat(str(when))
    except ValueError as exc:
        raise ValueError(f"next_run_at {when!r} is not an ISO time.") from exc
    return (moment if moment.tzinfo else moment.replace(tzinfo=zone(None))).timestamp()


def _job_id(ref: str) -> str | None:
    """The id of the job ``ref`` names (its id, or its name in any case), as 0.19's job
    calls take either."""
    job = resolve_job_ref(ref)
    return job["id"] if job else None


def pause_job(job_id: str, reason: str | None = None) -> dict[str, Any] | None:
    """Pause the job with this id or name; None: no such job."""
    found = _job_id(job_id)
    if found is None:
        return None
    return update_job(found, {"enabled": False}) if reason is None else _pause(found, reason)


def _pause(job_id: str, reason: str) -> dict[str, Any] | None:
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        changed = store.update_job(job_id, enabled=0, next_run_at=None, paused_reason=reason)
        return _record(store, changed)


def resume_job(job_id: str) -> dict[str, Any] | None:
    """Resume the job with this id or name; None: no such job."""
    found = _job_id(job_id)
    if found is None:
        return None
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        changed = store.update_job(found, enabled=1, paused_reason=None)
        return _record(store, changed)


def trigger_job(job_id: str) -> dict[str, Any] | None:
    """A run now, outside the schedule; the next gateway tick takes it (as ``hermes cron
    run``). ``job_id``: its id or name; None: no such job."""
    found = _job_id(job_id)
    if found is None:
        return None
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        if store.run_now(found) is None:
            return None
        return _record(store, store.job(found))


def remove_job(job_id: str) -> bool:
    """Remove the job with this id or name; False: no such job. A job whose id names no
    folder under cron/output (``../x``, saved as 0.19 saves it) is a ``ValueError`` and
    stays, as in 0.19 (``hermes cron remove`` removes it)."""
    found = _job_id(job_id)
    if found is None:
        return False
    files.check_job_id(found)
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        return store.remove_job(found)


_SAVED_FIELDS = (
    "name",
    "prompt",
    "schedule",
    "skills",
    "model",
    "deliver",
    "enabled",
    "enabled_toolsets",
    "workdir",
    "next_run_at",
    "origin",
    "context_from",
    "repeat",
)


def save_jobs(jobs: list[dict[str, Any]]) -> None:
    """Bring the store to ``jobs`` (0.19's records, as ``load_jobs`` gives them): each
    changed field of a held job is updated, a job not held is added under its id (as 0.19,
    even one that names no output folder, such as ``../x``: every use of an id as a path
    refuses it), a held job not listed is removed. Ids are checked first: a blank one
    changes nothing."""
    for job in jobs:
        if not str(job.get("id") or "").strip():
            raise ValueError("A job in the list has no id: give each job its id.")
    held = {job["id"]: job for job in load_jobs()}
    for job in jobs:
        before = held.get(job["id"])
        if before is None:
            _add_019(job)
            continue
        changes = {k: job[k] for k in _SAVED_FIELDS if k in job and job[k] != before.get(k)}
        if "repeat" not in job and "repeat" in before:
            changes["repeat"] = None  # saved without its count: it keeps none
        if changes:
            update_job(job["id"], changes)
    gone = set(held) - {job["id"] for job in jobs}
    if gone:  # as 0.19 writes the list: no id is used as a path here
        with _store.cron_store(read_only=False) as store:
            assert store is not None
            for job_id in gone:
                store.remove_job(job_id)


def _add_019(job: dict[str, Any]) -> None:
    try:
        with _store.cron_store(read_only=False) as store:
            assert store is not None
            cron_jobs.add_job(store, job, _store.home(), any_id=True)
    except (ScheduleError, TargetError) as exc:
        raise ValueError(str(exc)) from exc


def mark_job_run(
    job_id: str, success: bool, error: str | None = None, delivery_error: str | None = None
) -> None:
    """Record a run of the job its caller made: ``last_status``/``last_error`` and
    ``last_delivery_error`` from it, ``repeat.completed`` one more (not for a one-shot
    ``claim_dispatch`` counted already); a job that made its ``repeat.times`` runs then
    goes, and a one-shot that may run again is ``completed``, as in 0.19. After
    ``run_job`` (in any process) the gateway that ran the job recorded that run already:
    unless the job ran again since, nothing more is recorded."""
    seen = files.take_gateway_run(_store.home(), job_id)
    with _store.cron_store(read_only=True) as store:
        if store is None:
            return  # no store yet (no such job), or Hermes Agent's own, not upgraded yet
        latest = next(iter(store.runs(job_id, limit=1)), None)
        if seen is not None and latest is not None and latest["id"] == seen:
            files.write_files(_store.home(), store)
            return
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        failure = None if success else (error or "The run failed.")
        if store.record_run(job_id, error=failure, delivery_error=delivery_error) is None:
            return
        job = store.job(job_id)
        if job is None:
            return
        if _spent(job["repeat_times"], job["completed"]):
            store.remove_job(job_id)
        elif parse(job["schedule"]).kind == "once":
            store.update_job(job_id, next_run_at=None)  # its time is past: it is completed


def get_due_jobs() -> list[dict[str, Any]]:
    """The enabled jobs whose next run time has come: a gateway's scheduler makes their
    runs (0.19's caller would run them itself and fast-forward stale ones). A due one-shot
    that made its ``repeat.times`` runs (claimed, then lost) is removed instead, as in
    0.19."""
    now = _hermes_now()
    due = [job for job in load_jobs() if job["enabled"] and _is_due(job.get("next_run_at"), now)]
    spent = [job for job in due if job["schedule"].get("kind") == "once" and _spent_019(job)]
    if spent:
        with _store.cron_store(read_only=False) as store:
            assert store is not None
            for job in spent:
                store.remove_job(job["id"])
    return [job for job in due if job not in spent]


def _spent(times: int | None, completed: int | None) -> bool:
    return times is not None and times > 0 and completed is not None and completed >= times


def _spent_019(job: dict[str, Any]) -> bool:
    """A 0.19 record whose ``repeat.times`` runs were all made."""
    repeat = job.get("repeat") or {}
    return _spent(repeat.get("times"), repeat.get("completed"))


def _is_due(next_run_at: str | None, now: datetime) -> bool:
    if not next_run_at:
        return False
    try:
        when = datetime.fromisoformat(next_run_at)
    except ValueError:
        return False
    return (when if when.tzinfo else when.replace(tzinfo=zone(None))) <= now


def advance_next_run(job_id: str) -> bool:
    """Move a recurring job's next run to its next time after now (0.19 calls this before a
    run, so a crash does not fire it again); False for a one-shot, an unknown job or a
    time that does not change."""
    job = get_job(job_id)
    if job is None or job["schedule"].get("kind") not in ("cron", "interval"):
        return False
    after = compute_next_run(job["schedule"], _hermes_now().isoformat())
    if not after or after == job.get("next_run_at"):
        return False
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        return store.update_job(job_id, next_run_at=_epoch(after)) is not None


def claim_dispatch(job_id: str) -> bool:
    """Count a finite one-shot's run before it runs (so a run lost midway is not made
    again); False when its ``repeat.times`` runs were all made: the job is removed. Any
    other job, or an unknown id: True, nothing written (as 0.19)."""
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        return store.claim_dispatch(job_id)


_FIRE_CLAIM_TTL_SECONDS = 300  # 0.19's: a claimed fire stands this long


def claim_job_for_fire(job_id: str, *, claim_ttl_seconds: int = _FIRE_CLAIM_TTL_SECONDS) -> bool:
    """Claim one fire of a job, at most once across processes and hosts on the store: True
    only for the one caller that wins. False for a missing or paused job, or while an
    earlier claim younger than ``claim_ttl_seconds`` stands (a crashed claimer's too, until
    then). A recurring job's next run moves past now, as in 0.19; ``create_execution`` in
    the claiming process, or ``mark_job_run``, records the run as that fire's."""
    holder = lease.make_holder("execution:fire")
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        return store.claim_fire(str(job_id), holder, float(claim_ttl_seconds))


def heartbeat_run_claim(job_id: str, *, expected_owner: str) -> bool:
    """Keep a one-shot's run held while it is alive: its lease, held by ``expected_owner``
    (the holder of a gateway's run, 0.19's claim owner), runs 0.19's claim time more from
    now. False when the job is no one-shot or no run of it is held by that owner (another
    has taken it over), as in 0.19."""
    with _store.cron_store(read_only=True) as store:
        job = None if store is None else store.job(job_id)
        if store is None or job is None or job["id"] != job_id:
            return False
        if parse(job["schedule"]).kind != "once":
            return False
        held = [
            run["id"]
            for run in store.runs(job_id, limit=20)
            if run["status"] == "running" and run["holder"] == expected_owner
        ]
    if not held:
        return False
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        return any(
            store.refresh_run(run_id, expected_owner, ONESHOT_RUN_CLAIM_TTL_SECONDS)
            for run_id in held
        )


def record_ticker_heartbeat(success: bool = False) -> None:
    """A ticker's sign of life in this home's ``cron/ticker_heartbeat`` (and, for a tick
    that did not fail, ``cron/ticker_last_success``), as a gateway's scheduler writes them;
    a write that fails is skipped."""
    files.TickerFiles(_store.home())(success)


def get_ticker_heartbeat_age() -> float | None:
    """Seconds since a gateway's scheduler of this home last ticked; None: unknown."""
    return files.epoch_age(files.cron_dir(_store.home()) / files.HEARTBEAT_FILE)


def get_ticker_success_age() -> float | None:
    """Seconds since its last tick that did not fail; None: unknown."""
    return files.epoch_age(files.cron_dir(_store.home()) / files.SUCCESS_FILE)


def save_job_output(job_id: str, output: str) -> Path:
    """One run document under ``cron/output/<job id>/``. The document of the job's latest
    run (``run_job``'s) goes under that run's time, the name the gateway that ran it gives
    it too: written by both, it is there once. A job id that is not one folder name
    (an absolute path, ``../x``, a separator) is a ``ValueError``, as in 0.19."""
    files.check_job_id(job_id)
    when = None
    with _store.cron_store(read_only=True) as store:
        job = store.job(job_id) if store is not None else None
        latest = next(iter(store.runs(job_id, limit=1)), None) if store is not None else None
    if job is not None and latest is not None and latest["finished_at"]:
        when = latest["finished_at"] if files.run_document(job, latest) == output else None
    return files.save_output(_store.home(), job_id, output, when=when)


@contextmanager
def use_cron_store(home: str | Path) -> Iterator[None]:
    """Every ``cron.jobs`` call inside reads and changes the jobs of ``home`` (this
    context only: other threads and tasks keep theirs)."""
    token = set_hermes_home_override(Path(home).expanduser().resolve())
    try:
        yield
    finally:
        reset_hermes_home_override(token)


def get_cron_output_dir() -> Path:
    """``cron/output`` of the home in effect, where run documents go."""
    return files.cron_dir(_store.home()) / "output"


def ensure_dirs() -> None:
    """Make the home's ``cron/`` and ``cron/output/`` (private to the user)."""
    for folder in (files.cron_dir(_store.home()), get_cron_output_dir()):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)


def referenced_skill_names() -> set[str]:
    """The skills any job names, paused ones too (they still need them when resumed)."""
    try:
        jobs = load_jobs()
    except (OSError, ValueError):
        return set()
    return {str(name) for job in jobs for name in job.get("skills") or () if name}


def rewrite_skill_refs(
    consolidated: dict[str, str] | None = None, pruned: list[str] | None = None
) -> dict[str, Any]:
    """After skills were merged (``consolidated``: old name -> the one it went into) or
    removed (``pruned``), point each job's skills at what is left, in their order, as 0.19
    reports it: ``rewrites`` (per job: ``before``, ``after``, ``mapped``, ``dropped``),
    ``jobs_updated``, ``jobs_scanned``."""
    merged = dict(consolidated or {})
    removed = set(pruned or ()) - set(merged)
    if not merged and not removed:
        return {"rewrites": [], "jobs_updated": 0, "jobs_scanned": 0}
    jobs = load_jobs()
    rewrites = []
    for job in jobs:
        before = [str(name) for name in job.get("skills") or ()]
        after: list[str] = []
        for name in before:
            kept = merged.get(name, None if name in removed else name)
            if kept is not None and kept not in after:
                after.append(kept)
        if after != before:
            update_job(job["id"], {"skills": after})
            rewrites.append(
                {
                    "job_id": job["id"],
                    "job_name": job["name"],
                    "before": before,
                    "after": after,
                    "mapped": {old: merged[old] for old in before if old in merged},
                    "dropped": [old for old in before if old in removed],
                }
            )
    return {"rewrites": rewrites, "jobs_updated": len(rewrites), "jobs_scanned": len(jobs)}
