"""Hermes Agent 0.19's ``cron.executions``: the history of job runs, from the store's runs.

Each of hermes's runs (``hermes cron runs``) as 0.19's execution row: ``id``, ``job_id``,
``source``, ``process_id``/``pid`` (the process that ran it), ``status`` (``claimed``,
``running``, ``completed``, ``failed``, ``unknown``), ISO ``claimed_at``, ``started_at``,
``finished_at`` and ``error``, newest first, kept as 0.19 keeps them (every open run, the
newest ``MAX_TERMINAL_EXECUTIONS`` finished ones). The writers record a run a caller makes
itself into the store, where the gateways' scheduler never takes it; ``cron/jobs.json``
and ``EXECUTIONS_FILE`` (``cron/executions.db``, 0.19's schema) follow the store for
readers that open them (hermes.cron.ledger).
"""

from __future__ import annotations

from typing import Any

from cron import _store
from hermes.cron import files, ledger
from hermes.cron.ledger import MAX_TERMINAL_EXECUTIONS
from hermes.state import lease

__all__ = [
    "EXECUTIONS_FILE",
    "MAX_TERMINAL_EXECUTIONS",
    "create_execution",
    "finish_execution",
    "latest_execution",
    "latest_executions",
    "list_executions",
    "mark_execution_running",
    "recover_interrupted_executions",
]

EXECUTIONS_FILE = _store.home().resolve() / "cron" / ledger.EXECUTIONS_FILE


def list_executions(
    *, job_id: str | None = None, limit: int = 50, before_claimed_at: str | None = None
) -> list[dict[str, Any]]:
    """Newest claim first, from 0.19's ledger (its newest ``MAX_TERMINAL_EXECUTIONS``
    finished runs and every open one), ``limit`` at most 500; ``before_claimed_at``: a
    cursor, the rows claimed earlier."""
    with _store.cron_store(read_only=True) as store:
        if store is None:
            return []
        runs = store.ledger_runs(MAX_TERMINAL_EXECUTIONS)
    rows = ledger.kept([ledger.execution(run) for run in runs])
    if job_id is not None:
        rows = [r for r in rows if r["job_id"] == str(job_id)]
    if before_claimed_at is not None:
        rows = [r for r in rows if (r["claimed_at"] or "") < before_claimed_at]
    return rows[: max(1, min(int(limit), 500))]


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
    holder = lease.make_holder(f"{ledger.SOURCE}{source}")
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        return ledger.execution(store.claim_execution(str(job_id), holder))


def mark_execution_running(execution_id: str) -> dict[str, Any] | None:
    """The claimed run started (once); None: no claimed run has that id."""
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        run = store.start_execution(execution_id)
    return None if run is None else ledger.execution(run)


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
    return ledger.execution(run)


def recover_interrupted_executions() -> int:
    """Runs whose process ended before it finished them are ``unknown`` (none is run
    again); how many."""
    with _store.cron_store(read_only=False) as store:
        assert store is not None
        return store.recover_executions()
