"""The review lane, as 0.19 runs it, and which lanes a dispatcher has work for.

A worker that opened a pull request moves its task to ``review``; the dispatcher then
claims it (``review`` -> ``running``, a new run) and starts the assignee's agent again
with 0.19's reviewer skill, ``sdlc-review``, which checks the request and completes the
task or hands it back. A review claim does not look at the task's parents: it passed
that gate when it first ran.

``has_spawnable_ready``/``has_spawnable_review`` tell a dispatcher's health report
whether a lane holds a task it could start (assigned, unclaimed, its assignee a
profile), so an idle tick with only other lanes' tasks is not reported as stuck.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from hermes.kanban.db import write_txn
from hermes.kanban.flow import claim_ttl_seconds, claimer_id, open_run
from hermes.kanban.records import Task
from hermes.kanban.tasks import get_task

# The skills 0.19 loads into a review agent's turn (in place of the task's own).
REVIEW_SKILLS = ("sdlc-review",)


def claim_review_task(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    ttl_seconds: int | None = None,
    claimer: str | None = None,
) -> Task | None:
    """``review`` -> ``running`` under a claim, opening a run; ``None`` when the task is
    not in review or already claimed."""
    now = int(time.time())
    lock = claimer or claimer_id()
    expires = now + claim_ttl_seconds(ttl_seconds)
    with write_txn(conn):
        claimed = conn.execute(
            "UPDATE tasks SET status = 'running', claim_lock = ?, claim_expires = ?, "
            "started_at = COALESCE(started_at, ?) "
            "WHERE id = ? AND status = 'review' AND claim_lock IS NULL",
            (lock, expires, now, task_id),
        ).rowcount
        if claimed != 1:
            return None
        open_run(
            conn, task_id, lock=lock, expires=expires, now=now, event={"source_status": "review"}
        )
    return get_task(conn, task_id)


def claim_for_review(
    conn: sqlite3.Connection, task_id: str, *, ttl_seconds: int | None = None
) -> Task | None:
    """``claim_review_task``, the claimed task carrying the reviewer's skills for its
    worker (the board keeps the task's own)."""
    task = claim_review_task(conn, task_id, ttl_seconds=ttl_seconds)
    if task is not None:
        task.skills = list(REVIEW_SKILLS)
    return task


def has_spawnable(conn: sqlite3.Connection, status: str, is_profile: Callable[[str], bool]) -> bool:
    """Whether a task in ``status`` is assigned, unclaimed and its assignee a profile."""
    rows = conn.execute(
        "SELECT DISTINCT assignee FROM tasks "
        "WHERE status = ? AND assignee IS NOT NULL AND claim_lock IS NULL",
        (status,),
    )
    return any(is_profile(row["assignee"]) for row in rows)
