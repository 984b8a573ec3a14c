"""Hermes Agent 0.19's ``cron.executions``: the history of job runs, from the store's runs.

Each of hermes's runs (``hermes cron runs``) as 0.19's execution row: ``id``, ``job_id``,
``source``, ``process_id``/``pid`` (the process that ran it), ``status`` (``claimed``,
``running``, ``completed``, ``failed``, ``unknown``), ISO ``claimed_at``, ``started_at``,
``finished_at`` and ``error``, newest first. The writers record a run a caller makes
itself into the store, where the gateways' scheduler never takes it, and keep
``cron/jobs.json`` in step; 0.19's ``executions.db`` is not written (the store is the ledger).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cron import _store
from hermes.cron import files
from hermes.state import lease

__all__ = [
    "create_execution",
    "finish_execution",
    "latest_execution",
    "latest_executions",
    "list_executions",
    "mark_execution_running",
    "recover_interrupted_executions",
]

_STATUS = {
    "due": "claimed",
    "claimed": "claimed",
    "running": "running",
    "started": "running",
    "completed": "completed",
    "failed": "failed",
    "skipped": "failed",
    "unknown": "unknown",
}
_SOURCE = "execution:"  # a caller's run: its holder's agent part names its source


def _iso(stamp: float | None) -> str | None:
    return None if stamp is None else datetime.fromtimestamp(stamp, UTC).isoformat()


def _execution(run: dict[str, Any]) -> dict[str, Any]:
    holder = run["holder"] or ""
    _, _, agent = holder.partition(":agent=")
    pid = holder.split(":pid=", 1)[1].split(":", 1)[0] if ":pid=" in holder else ""
    return {
        "id": run["id"],
        "job_id": run["job_id"],
        "source": agent[len(_SOURCE) :] if agent.startswith(_SOURCE) else "scheduler",
        "process_id": holder or None,
        "pid": int(pid) if pid.isdigit() else None,
        "process_started_at": None,
        "status": _STATUS.get(run["status"], "unknown"),
        "claimed_at": _iso(run["due_at"]),
        "started_at": _iso(run["due_at"]) if run["status"] != "due" else None,
        "finished_at": _iso(run["finished_at"]),
        "error": run["error"]
        or ("missed while no gateway ran" if run["status"] == "skipped" else None),
        "session_id": run["session_id"],
    }


def list_executions(
    *, job_id: str | None = None, limit: int = 50, before_claimed_at: str | None = None
) -> list[dict[str, Any]]:
    with _store.cron_store(read_only=True) as store:
        if store is None:
            return []
        rows = [_execution(r) for r in store.runs(job_id, limit=max(1, min(int(limit), 500)))]
    if before_claimed_at is not None:
        rows = [r for r in rows if (r["claimed_at"] or "") < before_claimed_at]
    return rows


def latest_execution(job_id: str) -> dict[str, Any] | None:
    rows = list_executions(job_id=job_id, limit=1)
    return rows[0] if rows else None


def latest_executions(job_ids: list[str]) -> dict[str, dict[str, Any]]:
    found = {}
    for job_id in dict.fromkeys(job_ids):
        latest = latest_execution(job_id) if job_id else None
        if latest is not None:
            found[job_id] = latest
    return found


def create_execution(job_id: str, *, source: str) -> dict[str, Any]:
    """Record a run this process is about to make of ``job_id`` (``claimed``)."""
    holder = lease.make_holder(f"{_SOURCE}{source}")
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        return _execution(store.claim_execution(str(job_id), holder))


def mark_execution_running(execution_id: str) -> dict[str, Any] | None:
    """The claimed run started (once); None: no claimed run has that id."""
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        run = store.start_execution(execution_id)
    return None if run is None else _execution(run)


def finish_execution(
    execution_id: str, *, success: bool, error: str | None = None
) -> dict[str, Any] | None:
    """The run ended (once: None when it had already, or there is none). It counts as a
    run of its job, so 0.19's ``mark_job_run`` after it records nothing more."""
    detail = None if success else (str(error) if error else "unknown failure")
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        run = store.finish_execution(execution_id, detail)
    if run is None:
        return None
    files.note_gateway_run(_store.home(), run["job_id"], run["id"])
    return _execution(run)


def recover_interrupted_executions() -> int:
    """Runs whose process ended before it finished them are ``unknown`` (none is run
    again); how many."""
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        return store.recover_executions()
