"""Hermes Agent 0.19's ``cron.executions``: the history of job runs, from the store's runs.

Each of hermes's runs (``hermes cron runs``) as 0.19's execution row: ``id``, ``job_id``,
``status`` (``claimed``, ``running``, ``completed``, ``failed``), ISO ``claimed_at``,
``started_at``, ``finished_at`` and ``error``, newest first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cron import _store

__all__ = ["latest_execution", "latest_executions", "list_executions"]

_STATUS = {
    "due": "claimed",
    "running": "running",
    "completed": "completed",
    "failed": "failed",
    "skipped": "failed",
}


def _iso(stamp: float | None) -> str | None:
    return None if stamp is None else datetime.fromtimestamp(stamp, UTC).isoformat()


def _execution(run: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": run["id"],
        "job_id": run["job_id"],
        "source": "scheduler",
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
