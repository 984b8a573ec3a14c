"""The respawn guard, as 0.19's ``check_respawn_guard``: before the dispatcher starts a
worker for a ready task, it asks whether starting one now would only repeat what just
happened. A guarded task stays ``ready`` and is asked about again at the next tick; the
dispatcher says why in a ``respawn_guarded`` event.

The reasons, in the order they are checked:

- ``rate_limit_cooldown``: its last run ended ``rate_limited`` less than the cool-down ago
  (``HERMES_KANBAN_RATE_LIMIT_COOLDOWN_SECONDS``, 5 minutes by default; 0 turns it off).
  Once the cool-down is over the task may run, whatever its last error says.
- ``blocker_auth``: its last failure reads like a quota, rate-limit or credential error,
  which an immediate retry will not fix (the failure count still blocks it in the end).
- ``recent_success``: a run of it completed within the hour and nobody has put it back
  in the queue since (a move, a promotion, an unblock or a reclaim after that run).
- ``active_pr``: a comment of the last day links a GitHub pull request, which a new
  worker would open a second time.

A worker whose turn hits its provider's rate limit puts its task back with
``requeue_rate_limited``, which is what the cool-down waits out.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time

from hermes.kanban.db import write_txn
from hermes.kanban.flow import back_to_ready
from hermes.kanban.tasks import append_event, close_run

# A failure no immediate retry fixes: quotas, rate limits, credentials, billing.
BLOCKER_ERROR = re.compile(
    r"\b(quota|rate[\s_\-]?limit|429|403|auth\w*|unauthorized|forbidden|billing|"
    r"subscription|access[\s_]denied|permission[\s_]denied|invalid[\s_]api[\s_]key)\b",
    re.IGNORECASE,
)
PULL_REQUEST_URL = re.compile(r"https?://github\.com/[^/\s]+/[^/\s]+/pull/\d+", re.IGNORECASE)
SUCCESS_WINDOW_SECONDS = 3600
PULL_REQUEST_WINDOW_SECONDS = 86400
DEFAULT_RATE_LIMIT_COOLDOWN_SECONDS = 300
# Events after a completed run that mean someone wants the task run again.
REQUEUE_EVENTS = ("status", "promoted", "unblocked", "reclaimed")


def rate_limit_cooldown_seconds() -> int:
    """``HERMES_KANBAN_RATE_LIMIT_COOLDOWN_SECONDS`` when it is a whole number >= 0, else
    the default."""
    raw = os.environ.get("HERMES_KANBAN_RATE_LIMIT_COOLDOWN_SECONDS", "").strip()
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_RATE_LIMIT_COOLDOWN_SECONDS
    return value if value >= 0 else DEFAULT_RATE_LIMIT_COOLDOWN_SECONDS


def check_respawn_guard(conn: sqlite3.Connection, task_id: str) -> str | None:
    """Why no worker should start for ``task_id`` now (see the module's reasons), or
    ``None`` when one may."""
    task = conn.execute("SELECT last_failure_error FROM tasks WHERE id = ?", (task_id,))
    row = task.fetchone()
    if row is None:
        return None
    now = int(time.time())
    last_run = conn.execute(
        "SELECT outcome, ended_at FROM task_runs WHERE task_id = ? AND ended_at IS NOT NULL "
        "ORDER BY ended_at DESC, id DESC LIMIT 1",
        (task_id,),
    ).fetchone()
    if last_run is not None and last_run["outcome"] == "rate_limited":
        # Checked before the error text: a rate-limited run leaves a quota-sounding error
        # that would otherwise hold the task for good.
        cooldown = rate_limit_cooldown_seconds()
        if cooldown and now - int(last_run["ended_at"]) < cooldown:
            return "rate_limit_cooldown"
        return None
    error = row["last_failure_error"]
    if error and BLOCKER_ERROR.search(error):
        return "blocker_auth"
    if _recent_success_not_requeued(conn, task_id, now):
        return "recent_success"
    comments = conn.execute(
        "SELECT body FROM task_comments WHERE task_id = ? AND created_at >= ?",
        (task_id, now - PULL_REQUEST_WINDOW_SECONDS),
    )
    if any(c["body"] and PULL_REQUEST_URL.search(c["body"]) for c in comments):
        return "active_pr"
    return None


def _recent_success_not_requeued(conn: sqlite3.Connection, task_id: str, now: int) -> bool:
    completed = conn.execute(
        "SELECT MAX(ended_at) FROM task_runs WHERE task_id = ? AND outcome = 'completed' "
        "AND ended_at >= ?",
        (task_id, now - SUCCESS_WINDOW_SECONDS),
    ).fetchone()[0]
    if completed is None:
        return False
    marks = ",".join("?" * len(REQUEUE_EVENTS))
    requeued = conn.execute(
        f"SELECT 1 FROM task_events WHERE task_id = ? AND created_at >= ? AND kind IN ({marks}) "
        "LIMIT 1",
        (task_id, int(completed), *REQUEUE_EVENTS),
    ).fetchone()
    return requeued is None


def requeue_rate_limited(
    conn: sqlite3.Connection, task_id: str, error: str, *, expected_run_id: int | None = None
) -> bool:
    """A worker's turn hit its provider's rate limit or quota: the task goes back to
    ``ready`` without counting a failure (a quota wall says nothing about the task), its
    run closed ``rate_limited`` and the error kept, so the guard holds it for the
    cool-down. ``False`` when the task was not running (under ``expected_run_id``)."""
    error = error[:500]
    with write_txn(conn):
        run = () if expected_run_id is None else (int(expected_run_id),)
        where = " AND current_run_id = ?" if run else ""
        if not back_to_ready(conn, task_id, where=where, params=run, failure=error):
            return False
        run_id = close_run(conn, task_id, outcome="rate_limited", error=error)
        append_event(conn, task_id, "rate_limited", {"error": error}, run_id=run_id)
    return True
