"""The store's scheduled jobs as Hermes Agent 0.19 keeps them on disk, for its readers.

``$HERMES_HOME/cron/jobs.json`` (``{"jobs": [...], "updated_at": ...}``, each job in 0.19's
shape with ``last_status``/``last_error`` of its latest run) and one
``cron/output/<job id>/<time>.md`` per finished run (0.19's run document), its
execution ledger ``cron/executions.db`` (hermes.cron.ledger), and 0.19's
ticker files ``cron/ticker_heartbeat`` / ``cron/ticker_last_success`` (the epoch of the
scheduler's latest tick, and of its latest tick that did not fail). Dashboards
such as hermesd and hermes-webui read these; nothing in hermes does: the store stays the
truth, and these are rewritten after each change to a job (``CronStore(on_change=...)``),
atomically and under a lock so the last writer wrote the newest state. A write that
fails is one warning line; the job change it follows stands.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from hermes.cron import ledger
from hermes.cron.shape import as_019
from hermes.cron.store import CronStore

log = logging.getLogger(__name__)

LOCK_SECONDS = 10.0
WRITER = "hermes"  # marks a jobs.json as this copy; Hermes Agent's own is kept aside once
HEARTBEAT_FILE = "ticker_heartbeat"
SUCCESS_FILE = "ticker_last_success"
# The scheduler ticks every second or so; its readers call a heartbeat stale after two
# of 0.19's 60 s ticks, so writing it this often is plenty.
HEARTBEAT_EVERY = 10.0


def cron_dir(home: Path) -> Path:
    return Path(home) / "cron"


def check_job_id(job_id: str) -> str:
    """``job_id`` if it names one folder under cron/output (0.19's guard), else ValueError:
    an absolute path, ``..`` or a separator would write or delete outside it."""
    text = str(job_id or "").strip()
    if text in {"", ".", ".."} or "/" in text or "\\" in text or Path(text).is_absolute():
        raise ValueError(
            f"Invalid cron job id for output path: {job_id!r}; a job id is one name with "
            "no slashes and no '..'."
        )
    return text


def output_dir(home: Path, job_id: str) -> Path:
    return cron_dir(home) / "output" / check_job_id(job_id)


def writer(home: Path) -> Callable[[CronStore], None]:
    """The ``on_change`` that keeps ``home``'s files in step with the store."""
    return lambda store: write_files(home, store)


def write_files(home: Path, store: CronStore) -> None:
    """Rewrite jobs.json and executions.db, and add the document of each job's latest
    finished run."""
    folder = cron_dir(home)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with FileLock(str(folder / ".jobs.json.lock"), timeout=LOCK_SECONDS):
            latest = [
                (job, next(iter(store.runs(job["id"], limit=1)), None)) for job in store.jobs()
            ]
            records = [job_record(job, run) for job, run in latest]
            payload = {
                "jobs": records,
                "updated_at": datetime.now(UTC).isoformat(),
                "written_by": WRITER,
            }
            _keep_hermes_agents_own(folder / "jobs.json")
            _write_atomic(folder / "jobs.json", json.dumps(payload, indent=2) + "\n")
            for job, run in latest:
                if run is not None and run["status"] in ("completed", "failed"):
                    _write_run_document(home, job, run)
            ledger.write_executions_file(home, store)
    except (OSError, Timeout, ValueError, sqlite3.Error) as exc:
        log.warning(
            "Could not update %s (%s); the store still holds the jobs.", folder / "jobs.json", exc
        )


class TickerFiles:
    """The scheduler's ``on_tick(ok)``: the ticker files, at most every HEARTBEAT_EVERY
    seconds each. A write that fails is skipped (a reader's file, next tick again)."""

    def __init__(self, home: Path) -> None:
        self.folder = cron_dir(home)
        self._written: dict[str, float] = {}

    def __call__(self, ok: bool) -> None:
        for name in (HEARTBEAT_FILE, SUCCESS_FILE) if ok else (HEARTBEAT_FILE,):
            now = time.time()
            if now - self._written.get(name, 0.0) < HEARTBEAT_EVERY:
                continue
            try:
                self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                _write_atomic(self.folder / name, repr(now))
            except OSError as exc:
                log.debug("Could not write %s: %s", self.folder / name, exc)
                continue
            self._written[name] = now


def epoch_age(path: Path) -> float | None:
    """Seconds since the epoch a ticker file holds; None when it is missing or torn."""
    try:
        return max(0.0, time.time() - float(path.read_text(encoding="utf-8").strip()))
    except (OSError, ValueError):
        return None


def job_record(job: dict[str, Any], latest: dict[str, Any] | None) -> dict[str, Any]:
    """0.19's record of a job, with the outcome of its latest run."""
    record = as_019(job)
    finished = latest is not None and latest["status"] in ("completed", "failed")
    record.update(
        provider=None,
        base_url=None,
        script=None,
        no_agent=False,
        last_status=None
        if not finished
        else ("ok" if latest["status"] == "completed" else "error"),  # type: ignore[index]
        last_error=latest["error"] if finished and latest else None,
        last_delivery_error=(latest or {}).get("delivery_error"),
    )
    return record


def run_document(job: dict[str, Any], run: dict[str, Any]) -> str:
    """0.19's document of one run (``## Response``, or ``## Error`` when it failed)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["finished_at"]))
    failed = run["status"] == "failed"
    head = (
        f"# Cron Job: {job['name']}{' (FAILED)' if failed else ''}\n\n"
        f"**Job ID:** {job['id']}\n**Run Time:** {stamp}\n"
        f"**Schedule:** {as_019(job)['schedule_display']}\n\n## Prompt\n\n{job['prompt']}\n\n"
    )
    if failed:
        return head + f"## Error\n\n```\n{run['error']}\n```\n"
    return head + f"## Response\n\n{run['output'] or '(No response generated)'}\n"


def save_output(home: Path, job_id: str, text: str, when: float | None = None) -> Path:
    """Write one run document as ``cron/output/<job id>/<local time>.md``."""
    folder = output_dir(home, job_id)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(when or time.time()))
    path = folder / f"{stamp}.md"
    _write_atomic(path, text)
    return path


def _write_run_document(home: Path, job: dict[str, Any], run: dict[str, Any]) -> None:
    """The run's document under ``cron/output/<job id>/``; none for a job whose id names
    no folder there (one saved through 0.19's ``save_jobs``, as 0.19 stores it)."""
    try:
        check_job_id(job["id"])
    except ValueError:
        log.debug("No run document for job %r: its id names no folder.", job["id"])
        return
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(run["finished_at"]))
    if not (output_dir(home, job["id"]) / f"{stamp}.md").exists():
        save_output(home, job["id"], run_document(job, run), when=run["finished_at"])


def _keep_hermes_agents_own(path: Path) -> None:
    """A jobs.json Hermes Agent wrote (not this copy) moves to ``jobs.json.hermes-agent``
    before the first rewrite: its jobs were imported, and its fields hermes has no use
    for stay readable there."""
    try:
        current = json.loads(path.read_text(encoding="utf-8-sig"), strict=False)
    except (OSError, ValueError):
        return
    if not (isinstance(current, dict) and current.get("written_by") == WRITER):
        kept = path.with_name("jobs.json.hermes-agent")
        if not kept.exists():
            os.replace(path, kept)
            log.info("Kept Hermes Agent's %s as %s.", path, kept)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)  # no fsync: a reader's copy, rewritten at the next change anyway
    os.replace(tmp, path)


# Runs recorded already, one file per job: those ``cron.scheduler.run_job`` saw the
# gateway finish, and those a caller ended with ``cron.executions.finish_execution``, so
# 0.19's ``mark_job_run`` after it (maybe in another process: hermes-webui runs jobs in a
# child) does not record the same run a second time.
GATEWAY_RUNS = ".gateway-runs"


def note_gateway_run(home: Path, job_id: str, run_id: str) -> None:
    """``run_id`` of the job is recorded already (``mark_job_run`` is to skip it)."""
    folder = cron_dir(home) / GATEWAY_RUNS
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        (folder / check_job_id(job_id)).write_text(run_id, encoding="utf-8")
    except (OSError, ValueError):
        pass  # then mark_job_run records the run once more: a count, not a lost run


def take_gateway_run(home: Path, job_id: str) -> str | None:
    """The run ``run_job`` last saw the gateway finish for the job, once; None: none."""
    try:
        path = cron_dir(home) / GATEWAY_RUNS / check_job_id(job_id)
        run_id = path.read_text(encoding="utf-8").strip()
        path.unlink()
    except (OSError, ValueError):
        return None
    return run_id or None
