"""A board's tables, with Hermes Agent 0.19's names and columns: its readers (hermes-webui's
Kanban panel, 0.19 itself after a switch back) run their own SQL on them. ``make_schema``
makes what a board lacks, columns of a board from before 0.19 included."""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from typing import Any

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS tasks (
    id                   TEXT PRIMARY KEY,
    title                TEXT NOT NULL,
    body                 TEXT,
    assignee             TEXT,
    status               TEXT NOT NULL,
    priority             INTEGER DEFAULT 0,
    created_by           TEXT,
    created_at           INTEGER NOT NULL,
    started_at           INTEGER,
    completed_at         INTEGER,
    workspace_kind       TEXT NOT NULL DEFAULT 'scratch',
    workspace_path       TEXT,
    branch_name          TEXT,
    project_id           TEXT,
    claim_lock           TEXT,
    claim_expires        INTEGER,
    tenant               TEXT,
    result               TEXT,
    idempotency_key      TEXT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    worker_pid           INTEGER,
    last_failure_error   TEXT,
    max_runtime_seconds  INTEGER,
    last_heartbeat_at    INTEGER,
    current_run_id       INTEGER,     -- the run in flight (task_runs.id), NULL when none
    workflow_template_id TEXT,
    current_step_key     TEXT,
    skills               TEXT,        -- a JSON array of skill names
    model_override       TEXT,
    max_retries          INTEGER,
    goal_mode            INTEGER NOT NULL DEFAULT 0,
    goal_max_turns       INTEGER,
    session_id           TEXT,
    block_kind           TEXT,
    block_recurrences    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS task_links (
    parent_id  TEXT NOT NULL,
    child_id   TEXT NOT NULL,
    PRIMARY KEY (parent_id, child_id)
);

CREATE TABLE IF NOT EXISTS task_comments (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    TEXT NOT NULL,
    author     TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

-- Append-only: readers follow it by id (hermes-webui's live view polls id > cursor).
CREATE TABLE IF NOT EXISTS task_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    TEXT NOT NULL,
    run_id     INTEGER,
    kind       TEXT NOT NULL,
    payload    TEXT,
    created_at INTEGER NOT NULL
);

-- One row per attempt at a task; ended_at IS NULL only for the run in flight.
CREATE TABLE IF NOT EXISTS task_runs (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id             TEXT NOT NULL,
    profile             TEXT,
    step_key            TEXT,
    status              TEXT NOT NULL,
    claim_lock          TEXT,
    claim_expires       INTEGER,
    worker_pid          INTEGER,
    max_runtime_seconds INTEGER,
    last_heartbeat_at   INTEGER,
    started_at          INTEGER NOT NULL,
    ended_at            INTEGER,
    outcome             TEXT,
    summary             TEXT,
    metadata            TEXT,
    error               TEXT
);

CREATE TABLE IF NOT EXISTS task_attachments (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id      TEXT NOT NULL,
    filename     TEXT NOT NULL,
    stored_path  TEXT NOT NULL,
    content_type TEXT,
    size         INTEGER NOT NULL DEFAULT 0,
    uploaded_by  TEXT,
    created_at   INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS kanban_notify_subs (
    task_id       TEXT NOT NULL,
    platform      TEXT NOT NULL,
    chat_id       TEXT NOT NULL,
    thread_id     TEXT NOT NULL DEFAULT '',
    user_id       TEXT,
    notifier_profile TEXT,
    created_at    INTEGER NOT NULL,
    last_event_id INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, platform, chat_id, thread_id)
);

CREATE INDEX IF NOT EXISTS idx_tasks_assignee_status ON tasks(assignee, status);
CREATE INDEX IF NOT EXISTS idx_tasks_status          ON tasks(status);
CREATE INDEX IF NOT EXISTS idx_links_child           ON task_links(child_id);
CREATE INDEX IF NOT EXISTS idx_links_parent          ON task_links(parent_id);
CREATE INDEX IF NOT EXISTS idx_comments_task         ON task_comments(task_id, created_at);
CREATE INDEX IF NOT EXISTS idx_events_task           ON task_events(task_id, created_at);
CREATE INDEX IF NOT EXISTS idx_runs_task             ON task_runs(task_id, started_at);
CREATE INDEX IF NOT EXISTS idx_runs_status           ON task_runs(status);
CREATE INDEX IF NOT EXISTS idx_attachments_task      ON task_attachments(task_id, created_at);
CREATE INDEX IF NOT EXISTS idx_notify_task           ON kanban_notify_subs(task_id);
CREATE INDEX IF NOT EXISTS idx_tasks_tenant          ON tasks(tenant);
CREATE INDEX IF NOT EXISTS idx_tasks_idempotency     ON tasks(idempotency_key);
CREATE INDEX IF NOT EXISTS idx_tasks_session_id      ON tasks(session_id);
CREATE INDEX IF NOT EXISTS idx_events_run            ON task_events(run_id, id);
"""


@functools.cache
def _reference() -> tuple[list[tuple[str, str, list[tuple[Any, ...]]]], list[str]]:
    """``SCHEMA_SQL`` as SQLite parses it: each table's ``CREATE TABLE IF NOT EXISTS`` and
    columns (``PRAGMA table_info`` rows), and each ``CREATE INDEX IF NOT EXISTS``."""

    def if_not_exists(kind: str, sql: str) -> str:
        prefix = f"CREATE {kind} "
        return prefix + "IF NOT EXISTS " + sql[len(prefix) :]

    with contextlib.closing(sqlite3.connect(":memory:")) as fresh:
        fresh.executescript(SCHEMA_SQL)
        rows = fresh.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
            "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        ).fetchall()
        tables = [
            (
                name,
                if_not_exists("TABLE", sql),
                fresh.execute(f"PRAGMA table_info({name})").fetchall(),
            )
            for kind, name, sql in rows
            if kind == "table"
        ]
    indexes = [if_not_exists("INDEX", sql) for kind, _name, sql in rows if kind == "index"]
    return tables, indexes


def _add_missing_columns(
    conn: sqlite3.Connection, table: str, wanted: list[tuple[Any, ...]]
) -> None:
    """Give a board's table from before 0.19 the columns it lacks, with their defaults."""
    have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
    for _cid, name, kind, notnull, default, pk in wanted:
        if name in have or pk:
            continue
        column = f'"{name}" {kind}'
        if default is not None:
            column += f" DEFAULT {default}" + (" NOT NULL" if notnull else "")
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")


def make_schema(conn: sqlite3.Connection) -> None:
    """Tables, then the columns a board from before 0.19 lacks, then indexes (some index
    those columns), inside the caller's write transaction."""
    tables, indexes = _reference()
    for table, create, columns in tables:
        conn.execute(create)
        _add_missing_columns(conn, table, columns)
    for create in indexes:
        conn.execute(create)
