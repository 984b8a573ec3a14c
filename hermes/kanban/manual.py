"""A person's own moves on a task (0.19's recovery verbs, from its dashboard and CLI): take a
task back from its worker now (``reclaim_task``), give it to another profile
(``reassign_task``), send a waiting task to ``ready`` (``promote_task``), and correct the
result of a completed one (``edit_completed_task_result``). Each leaves an event saying who
or why, as 0.19's do."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from hermes.kanban.db import write_txn
from hermes.kanban.supervision import terminate_worker
from hermes.kanban.tasks import (
    append_event,
    assign_task,
    close_run,
    record_ended_run,
    task_fields,
)

Terminate = Callable[..., dict[str, Any]]


def reclaim_task(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    reason: str | None = None,
    signal_fn: Any = None,
    terminate: Terminate = terminate_worker,
) -> bool:
    """Stop a task's worker (if it runs on this host) and put the task back to ``ready``
    at once, whatever its claim's expiry; its run ends ``reclaimed`` and its failure count
    starts over. ``False`` when the task is unknown or holds no claim and is not running."""
    row = task_fields(conn, task_id, "status", "claim_lock", "worker_pid")
    if not row or (row["status"] != "running" and row["claim_lock"] is None):
        return False
    lock = row["claim_lock"]
    stopped = terminate(row["worker_pid"], lock, signal_fn=signal_fn)
    with write_txn(conn):
        moved = conn.execute(
            "UPDATE tasks SET status = 'ready', claim_lock = NULL, claim_expires = NULL, "
            "worker_pid = NULL, consecutive_failures = 0, last_failure_error = NULL "
            "WHERE id = ? AND status IN ('running', 'ready', 'blocked') AND claim_lock IS ?",
            (task_id, lock),
        ).rowcount
        if moved != 1:  # another process moved it meanwhile
            return False
        run_id = close_run(
            conn,
            task_id,
            outcome="reclaimed",
            status="reclaimed",
            error=f"manual_reclaim: {reason}" if reason else f"manual_reclaim lock={lock}",
            metadata=stopped,
        )
        payload = {"manual": True, "reason": reason, "prev_lock": lock, **stopped}
        append_event(conn, task_id, "reclaimed", payload, run_id=run_id)
    return True


def reassign_task(
    conn: sqlite3.Connection,
    task_id: str,
    profile: str | None,
    *,
    reclaim_first: bool = False,
    reason: str | None = None,
    reclaim: Callable[..., bool] = reclaim_task,
) -> bool:
    """Give the task to ``profile`` (``None`` unassigns); with ``reclaim_first`` a running
    task is taken back from its worker first, else it is refused (``False``), as is an
    unknown task."""
    if reclaim_first:
        reclaim(conn, task_id, reason=reason or "reassign")
    try:
        return assign_task(conn, task_id, profile)
    except RuntimeError:  # still running: the caller may retry with reclaim_first
        return False


def promote_task(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    actor: str,
    reason: str | None = None,
    force: bool = False,
    dry_run: bool = False,
) -> tuple[bool, str | None]:
    """Send a ``todo`` or ``blocked`` task to ``ready`` by hand (a ``promoted_manual`` event
    naming ``actor``); a parent not done or archived refuses it unless ``force``.
    ``(True, None)``, or ``(False, why)``; ``dry_run`` only checks."""
    row = task_fields(conn, task_id, "status")
    if row is None:
        return False, f"task {task_id} not found"
    if row["status"] not in ("todo", "blocked"):
        return False, (
            f"task {task_id} is {row['status']!r}; promote only applies to 'todo' or 'blocked'"
        )
    if not force:
        waiting = [
            r["id"]
            for r in conn.execute(
                "SELECT p.id FROM task_links l JOIN tasks p ON p.id = l.parent_id "
                "WHERE l.child_id = ? AND p.status NOT IN ('done', 'archived') ORDER BY p.id",
                (task_id,),
            )
        ]
        if waiting:
            return False, (
                f"unsatisfied parent dependencies: {', '.join(waiting)} (use --force to override)"
            )
    if dry_run:
        return True, None
    with write_txn(conn):
        moved = conn.execute(
            "UPDATE tasks SET status = 'ready' WHERE id = ? AND status IN ('todo', 'blocked')",
            (task_id,),
        ).rowcount
        if moved != 1:
            return False, f"task {task_id} status changed during promotion"
        append_event(
            conn, task_id, "promoted_manual", {"actor": actor, "reason": reason, "forced": force}
        )
    return True, None


def edit_completed_task_result(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    result: str,
    summary: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> bool:
    """Correct a done task's result, and the summary (``result`` when none is given) and
    metadata of its last completed run (a closed one is made if it has none); an
    ``edited`` event. ``False`` when the task is not done."""
    handoff = summary if summary is not None else result
    with write_txn(conn):
        row = task_fields(conn, task_id, "status")
        if not row or row["status"] != "done":
            return False
        conn.execute("UPDATE tasks SET result = ? WHERE id = ?", (result, task_id))
        run = conn.execute(
            "SELECT id FROM task_runs WHERE task_id = ? AND outcome = 'completed' "
            "ORDER BY COALESCE(ended_at, started_at, 0) DESC, id DESC LIMIT 1",
            (task_id,),
        ).fetchone()
        if run is None:
            run_id = record_ended_run(
                conn, task_id, outcome="completed", summary=handoff, metadata=metadata
            )
        else:
            run_id = int(run["id"])
            conn.execute("UPDATE task_runs SET summary = ? WHERE id = ?", (handoff, run_id))
            if metadata is not None:
                conn.execute(
                    "UPDATE task_runs SET metadata = ? WHERE id = ?",
                    (json.dumps(metadata, ensure_ascii=False), run_id),
                )
        first_line = handoff.strip().splitlines()[0][:400] if handoff and handoff.strip() else ""
        payload = {
            "fields": ["result", "summary"] + (["metadata"] if metadata is not None else []),
            "result_len": len(result) if result else 0,
            "summary": first_line or None,
        }
        append_event(conn, task_id, "edited", payload, run_id=run_id)
    return True
