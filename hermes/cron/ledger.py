"""The store's runs as Hermes Agent 0.19's execution ledger, and its ``cron/executions.db``.

0.19 records each run of a job as a row of ``executions`` in ``$HERMES_HOME/cron/
executions.db`` (claimed, running, then completed/failed/unknown; the newest
``MAX_TERMINAL_EXECUTIONS`` finished rows kept). Its readers (dashboards, watchdogs that
call the scheduler stopped when the newest claim is old) open that file with SQLite.
Hermes's ledger is the store's ``cron_runs``; this room shapes each run as 0.19's row
and rewrites the file from the store after each change, as ``cron/jobs.json`` is
(hermes.cron.files). Nothing in hermes reads the file back.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermes.cron.store import CronStore

EXECUTIONS_FILE = "executions.db"
MAX_TERMINAL_EXECUTIONS = 1000  # 0.19's: finished rows kept, newest first
# Marks the file as this copy (PRAGMA application_id): one 0.19 wrote is kept aside once.
_HERMES_COPY = 0x48524D53

STATUS = {
    "due": "claimed",
    "claimed": "claimed",
    "running": "running",
    "started": "running",
    "completed": "completed",
    "failed": "failed",
    "skipped": "failed",
    "unknown": "unknown",
}
SOURCE = "execution:"  # a caller's run: its holder's agent part names its source

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS executions (
         id TEXT PRIMARY KEY,
         job_id TEXT NOT NULL,
         source TEXT NOT NULL,
         process_id TEXT NOT NULL,
         pid INTEGER NOT NULL,
         process_started_at INTEGER,
         status TEXT NOT NULL CHECK(status IN
           ('claimed','running','completed','failed','unknown')),
         claimed_at TEXT NOT NULL,
         started_at TEXT,
         finished_at TEXT,
         error TEXT
       )""",
    "CREATE INDEX IF NOT EXISTS idx_executions_job_claimed"
    " ON executions(job_id, claimed_at DESC, id DESC)",
    "CREATE INDEX IF NOT EXISTS idx_executions_status_claimed"
    " ON executions(status, claimed_at DESC, id DESC)",
)
_COLUMNS = (
    "id",
    "job_id",
    "source",
    "process_id",
    "pid",
    "process_started_at",
    "status",
    "claimed_at",
    "started_at",
    "finished_at",
    "error",
)


def _iso(stamp: float | None) -> str | None:
    return None if stamp is None else datetime.fromtimestamp(stamp, UTC).isoformat()


def execution(run: dict[str, Any]) -> dict[str, Any]:
    """A store run as 0.19's execution row (and its ``session_id``)."""
    holder = run["holder"] or ""
    _, _, agent = holder.partition(":agent=")
    pid = holder.split(":pid=", 1)[1].split(":", 1)[0] if ":pid=" in holder else ""
    return {
        "id": run["id"],
        "job_id": run["job_id"],
        "source": agent[len(SOURCE) :] if agent.startswith(SOURCE) else "scheduler",
        "process_id": holder or None,
        "pid": int(pid) if pid.isdigit() else None,
        "process_started_at": None,
        "status": STATUS.get(run["status"], "unknown"),
        "claimed_at": _iso(run["due_at"]),
        "started_at": _iso(run["due_at"]) if run["status"] != "due" else None,
        "finished_at": _iso(run["finished_at"]),
        "error": run["error"]
        or ("missed while no gateway ran" if run["status"] == "skipped" else None),
        "session_id": run["session_id"],
    }


def kept(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """0.19's ledger of these execution rows: every open one, and the newest
    ``MAX_TERMINAL_EXECUTIONS`` finished ones, newest claim first."""
    rows = sorted(rows, key=lambda r: (r["claimed_at"] or "", r["id"]), reverse=True)
    finished = [r for r in rows if r["status"] in ("completed", "failed", "unknown")]
    dropped = {r["id"] for r in finished[MAX_TERMINAL_EXECUTIONS:]}
    return [r for r in rows if r["id"] not in dropped]


def write_executions_file(home: Path, store: CronStore) -> None:
    """Rewrite ``cron/executions.db`` from the store's runs, in one SQLite transaction
    (a reader sees the old rows or the new ones). Raises OSError or sqlite3.Error."""
    path = Path(home) / "cron" / EXECUTIONS_FILE
    rows = kept([execution(run) for run in store.ledger_runs(MAX_TERMINAL_EXECUTIONS)])
    _keep_hermes_agents_own(path)
    conn = sqlite3.connect(path, timeout=5)
    try:
        conn.execute("PRAGMA journal_mode=WAL")  # as 0.19's: readers never wait for it
        with conn:
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {_HERMES_COPY}")
            conn.execute("DELETE FROM executions")
            conn.executemany(
                f"INSERT INTO executions ({', '.join(_COLUMNS)})"
                f" VALUES ({', '.join('?' for _ in _COLUMNS)})",
                [_file_row(row) for row in rows],
            )
    finally:
        conn.close()
    os.chmod(path, 0o600)


def _file_row(row: dict[str, Any]) -> tuple[Any, ...]:
    """0.19's columns are NOT NULL where a run the scheduler has not taken has no holder."""
    filled = {**row, "process_id": row["process_id"] or "", "pid": row["pid"] or 0}
    filled["claimed_at"] = filled["claimed_at"] or ""
    return tuple(filled[column] for column in _COLUMNS)


def _keep_hermes_agents_own(path: Path) -> None:
    """An executions.db Hermes Agent wrote moves (with its WAL) to
    ``executions.db.hermes-agent`` before the first rewrite, its history kept readable."""
    if not path.exists():
        return
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        ours = conn.execute("PRAGMA application_id").fetchone()[0] == _HERMES_COPY
    finally:
        conn.close()
    kept_as = path.with_name(f"{EXECUTIONS_FILE}.hermes-agent")
    if ours or kept_as.exists():
        return
    for suffix in ("", "-wal", "-shm"):
        part = path.with_name(path.name + suffix)
        if part.exists():
            os.replace(part, kept_as.with_name(kept_as.name + suffix))
