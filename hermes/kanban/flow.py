"""A task's moves on the board (claim, heartbeat, complete, block, unblock, archive), and
what the board counts (stats, ages, assignees). The dispatcher tick is in ``dispatch``."""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from hermes import profiles
from hermes.kanban.artifacts import preserve_scratch_artifacts
from hermes.kanban.db import write_txn
from hermes.kanban.records import Task
from hermes.kanban.tasks import (
    append_event,
    close_run,
    get_task,
    missing_tasks,
    recompute_ready,
    record_ended_run,
    task_fields,
    waits_for_parent,
)
from hermes.kanban.workspaces import cleanup_workspace

DEFAULT_CLAIM_TTL_SECONDS = 15 * 60
VALID_BLOCK_KINDS = {"dependency", "needs_input", "capability", "transient"}
# The same cause blocking a task this often after unblocks sends it to triage instead.
BLOCK_RECURRENCE_LIMIT = 2


class HallucinatedCardsError(ValueError):
    """A completion named task ids (``created_cards``) that are not on the board."""

    def __init__(self, phantom: list[str], task_id: str) -> None:
        self.phantom = phantom
        self.task_id = task_id
        super().__init__(
            f"task {task_id} claims to have created {', '.join(phantom)}, which are not "
            "on the board; complete it again without them"
        )


def claim_ttl_seconds(ttl_seconds: int | None = None) -> int:
    """The caller's TTL, else ``HERMES_KANBAN_CLAIM_TTL_SECONDS``, else 15 minutes."""
    if ttl_seconds is not None:
        return max(1, int(ttl_seconds))
    raw = os.environ.get("HERMES_KANBAN_CLAIM_TTL_SECONDS", "").strip()
    value = int(raw) if raw.isdigit() else 0
    return value if value > 0 else DEFAULT_CLAIM_TTL_SECONDS


def claimer_id() -> str:
    """``host:pid``: who holds a claim."""
    return f"{socket.gethostname() or 'unknown'}:{os.getpid()}"


def claim_task(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    ttl_seconds: int | None = None,
    claimer: str | None = None,
) -> Task | None:
    """``ready`` -> ``running`` under a claim, opening a run; ``None`` when the task is not
    ready, already claimed, or has a parent not done (then it goes back to ``todo``)."""
    now = int(time.time())
    lock = claimer or claimer_id()
    expires = now + claim_ttl_seconds(ttl_seconds)
    with write_txn(conn):
        if waits_for_parent(conn, task_id):
            conn.execute(
                "UPDATE tasks SET status = 'todo' WHERE id = ? AND status = 'ready'", (task_id,)
            )
            append_event(conn, task_id, "claim_rejected", {"reason": "parents_not_done"})
            return None
        claimed = conn.execute(
            "UPDATE tasks SET status = 'running', claim_lock = ?, claim_expires = ?, "
            "started_at = COALESCE(started_at, ?) "
            "WHERE id = ? AND status = 'ready' AND claim_lock IS NULL",
            (lock, expires, now, task_id),
        ).rowcount
        if claimed != 1:
            return None
        open_run(conn, task_id, lock=lock, expires=expires, now=now)
    return get_task(conn, task_id)


def open_run(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    lock: str,
    expires: int,
    now: int,
    event: dict[str, Any] | None = None,
) -> int:
    """Open the run of a task just claimed (inside the caller's transaction), with a
    ``claimed`` event (``event`` adds to its payload); the run's id."""
    task = task_fields(conn, task_id, "assignee", "max_runtime_seconds", "current_step_key")
    run_id = int(
        conn.execute(
            "INSERT INTO task_runs (task_id, profile, step_key, status, claim_lock, "
            "claim_expires, max_runtime_seconds, started_at) "
            "VALUES (?, ?, ?, 'running', ?, ?, ?, ?)",
            (
                task_id,
                task["assignee"],
                task["current_step_key"],
                lock,
                expires,
                task["max_runtime_seconds"],
                now,
            ),
        ).lastrowid
        or 0
    )
    conn.execute("UPDATE tasks SET current_run_id = ? WHERE id = ?", (run_id, task_id))
    payload = {"lock": lock, "expires": expires, "run_id": run_id, **(event or {})}
    append_event(conn, task_id, "claimed", payload, run_id=run_id)
    return run_id


def back_to_ready(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    where: str = "",
    params: Iterable[Any] = (),
    forget_heartbeat: bool = False,
    failure: str | None = None,
) -> bool:
    """A running task back to ``ready``, its claim and worker cleared (its heartbeat too,
    or ``failure`` kept as its last error), if it still is as its caller saw it (``where``
    with ``params``: another tick may have moved it since). Inside the caller's
    transaction; whether it moved."""
    sets = ", last_heartbeat_at = NULL" if forget_heartbeat else ""
    sets += ", last_failure_error = ?" if failure is not None else ""
    moved = conn.execute(
        "UPDATE tasks SET status = 'ready', claim_lock = NULL, claim_expires = NULL, "
        f"worker_pid = NULL{sets} WHERE id = ? AND status = 'running'{where}",
        (*([failure] if failure is not None else []), task_id, *params),
    )
    return moved.rowcount == 1


def heartbeat_claim(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    ttl_seconds: int | None = None,
    claimer: str | None = None,
) -> bool:
    """Extend a running claim (on the task and its run); whether ``claimer`` still holds it."""
    expires = int(time.time()) + claim_ttl_seconds(ttl_seconds)
    with write_txn(conn):
        held = conn.execute(
            "UPDATE tasks SET claim_expires = ? "
            "WHERE id = ? AND status = 'running' AND claim_lock = ?",
            (expires, task_id, claimer or claimer_id()),
        ).rowcount
        if held == 1:
            conn.execute(
                "UPDATE task_runs SET claim_expires = ? "
                "WHERE id = (SELECT current_run_id FROM tasks WHERE id = ?)",
                (expires, task_id),
            )
    return held == 1


def complete_task(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    result: str | None = None,
    summary: str | None = None,
    metadata: dict[str, Any] | None = None,
    created_cards: Iterable[str] | None = None,
    expected_run_id: int | None = None,
) -> bool:
    """``running``/``ready``/``blocked`` -> ``done`` with ``result``; the summary goes on the
    run (a closed one is made for a task never claimed). Children whose parents are now all
    done become ready. ``False`` when the task was in no such state."""
    cards = [c for c in (created_cards or ()) if c]
    phantom = missing_tasks(conn, cards)
    if phantom:
        with write_txn(conn):
            append_event(
                conn,
                task_id,
                "completion_blocked_hallucination",
                {
                    "phantom_cards": phantom,
                    "verified_cards": [c for c in cards if c not in phantom],
                },
            )
        raise HallucinatedCardsError(phantom, task_id)
    handoff = summary if summary is not None else result
    with write_txn(conn):
        query = (
            "UPDATE tasks SET status = 'done', result = ?, completed_at = ?, claim_lock = NULL, "
            "claim_expires = NULL, worker_pid = NULL, block_kind = NULL, block_recurrences = 0, "
            "consecutive_failures = 0, last_failure_error = NULL "
            "WHERE id = ? AND status IN ('running', 'ready', 'blocked')"
        )
        if not _moved(conn, query, [result, int(time.time()), task_id], expected_run_id):
            return False
        # Before the scratch folder goes (cleanup_workspace, below).
        metadata = preserve_scratch_artifacts(
            conn, task_id, metadata, summary=summary, result=result
        )
        run_id = close_run(
            conn, task_id, outcome="completed", status="done", summary=handoff, metadata=metadata
        )
        if run_id is None and (summary or metadata or result):
            run_id = record_ended_run(
                conn, task_id, outcome="completed", summary=handoff, metadata=metadata
            )
        first_line = handoff.strip().splitlines()[0][:400] if handoff and handoff.strip() else ""
        payload: dict[str, Any] = {
            "result_len": len(result) if result else 0,
            "summary": first_line or None,
        }
        if cards:
            payload["verified_cards"] = cards
        artifacts = (metadata or {}).get("artifacts")
        if isinstance(artifacts, list) and artifacts:  # for a notifier to send them
            payload["artifacts"] = artifacts
        append_event(conn, task_id, "completed", payload, run_id=run_id)
    recompute_ready(conn)
    cleanup_workspace(conn, task_id)
    return True


def _block_route(kind: str | None, prev_kind: str | None, prev_count: int) -> tuple[str, int]:
    """Where a block sends the task, and its new count of same-cause blocks: a
    ``dependency`` waits in ``todo``; a cause that keeps coming back goes to ``triage``."""
    if kind == "dependency":
        return "todo", prev_count
    count = prev_count + 1 if prev_kind == kind else 1
    return ("triage" if count >= BLOCK_RECURRENCE_LIMIT else "blocked"), count


# 0.19's signature kept whole: hermes-webui and 0.19's kanban tools pass these keywords.
def block_task(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    reason: str | None = None,
    kind: str | None = None,
    expected_run_id: int | None = None,
) -> bool:
    """``running``/``ready`` -> ``blocked`` (``todo`` for a ``dependency``, ``triage`` for a
    block that keeps recurring); ``False`` when the task was in neither state."""
    if kind is not None and kind not in VALID_BLOCK_KINDS:
        raise ValueError(f"block kind must be one of {sorted(VALID_BLOCK_KINDS)} or None")
    with write_txn(conn):
        row = task_fields(conn, task_id, "block_kind", "block_recurrences")
        if row is None:
            return False
        status, count = _block_route(kind, row["block_kind"], int(row["block_recurrences"] or 0))
        query = (
            "UPDATE tasks SET status = ?, claim_lock = NULL, claim_expires = NULL, "
            "worker_pid = NULL, block_kind = ?, block_recurrences = ? "
            "WHERE id = ? AND status IN ('running', 'ready')"
        )
        if not _moved(conn, query, [status, kind, count, task_id], expected_run_id):
            return False
        run_id = _close_or_keep_run(conn, task_id, "blocked", reason)
        payload: dict[str, Any]
        if status == "todo":
            event, payload = "dependency_wait", {"reason": reason, "kind": kind}
        elif status == "triage":
            event = "block_loop_detected"
            payload = {
                "reason": reason,
                "kind": kind,
                "recurrences": count,
                "limit": BLOCK_RECURRENCE_LIMIT,
            }
        else:
            event, payload = "blocked", {"reason": reason, "kind": kind, "recurrences": count}
        append_event(conn, task_id, event, payload, run_id=run_id)
    return True


def _moved(
    conn: sqlite3.Connection, query: str, params: list[Any], expected_run_id: int | None
) -> bool:
    """Run a move's UPDATE, held to the run the caller saw (``expected_run_id``, when
    given); whether the task moved."""
    if expected_run_id is not None:
        query += " AND current_run_id = ?"
        params = [*params, int(expected_run_id)]
    return conn.execute(query, params).rowcount == 1


def _close_or_keep_run(
    conn: sqlite3.Connection, task_id: str, outcome: str, reason: str | None
) -> int | None:
    """Close the task's run in flight as ``outcome`` or, for a task no worker claimed, keep
    ``reason`` in a zero-length run; the run's id, or None when there was neither."""
    run_id = close_run(conn, task_id, outcome=outcome, status=outcome, summary=reason)
    if run_id is None and reason:
        run_id = record_ended_run(conn, task_id, outcome=outcome, summary=reason)
    return run_id


def schedule_task(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    reason: str | None = None,
    expected_run_id: int | None = None,
) -> bool:
    """Park a task in ``scheduled``: waiting on time, never dispatched, until something (a
    cron job, a person) calls ``unblock_task``. ``False`` when it was not ``todo``,
    ``ready``, ``running`` or ``blocked``."""
    with write_txn(conn):
        query = (
            "UPDATE tasks SET status = 'scheduled', claim_lock = NULL, claim_expires = NULL, "
            "worker_pid = NULL WHERE id = ? AND status IN ('todo', 'ready', 'running', 'blocked')"
        )
        if not _moved(conn, query, [task_id], expected_run_id):
            return False
        run_id = _close_or_keep_run(conn, task_id, "scheduled", reason)
        append_event(conn, task_id, "scheduled", {"reason": reason}, run_id=run_id)
    return True


def unblock_task(conn: sqlite3.Connection, task_id: str) -> bool:
    """``blocked``/``scheduled`` -> ``ready`` (``todo`` while a parent is not done); the
    retry count starts over. ``False`` when the task was in neither state."""
    now = int(time.time())
    with write_txn(conn):
        conn.execute(
            "UPDATE task_runs SET status = 'reclaimed', outcome = 'reclaimed', "
            "summary = COALESCE(summary, 'invariant recovery on unblock'), ended_at = ?, "
            "claim_lock = NULL, claim_expires = NULL, worker_pid = NULL "
            "WHERE ended_at IS NULL AND id = (SELECT current_run_id FROM tasks "
            "WHERE id = ? AND status IN ('blocked', 'scheduled'))",
            (now, task_id),
        )
        unfinished = conn.execute(
            "SELECT 1 FROM task_links l JOIN tasks p ON p.id = l.parent_id "
            "WHERE l.child_id = ? AND p.status != 'done' LIMIT 1",
            (task_id,),
        ).fetchone()
        status = "todo" if unfinished else "ready"
        moved = conn.execute(
            "UPDATE tasks SET status = ?, current_run_id = NULL, consecutive_failures = 0, "
            "last_failure_error = NULL WHERE id = ? AND status IN ('blocked', 'scheduled')",
            (status, task_id),
        ).rowcount
        if moved != 1:
            return False
        append_event(conn, task_id, "unblocked", {"status": status} if status != "ready" else None)
    return True


def archive_task(conn: sqlite3.Connection, task_id: str) -> bool:
    """Archive a task (its run in flight closes as ``reclaimed``); its children stop
    waiting for it. ``False`` when it was already archived or is unknown."""
    with write_txn(conn):
        moved = conn.execute(
            "UPDATE tasks SET status = 'archived', claim_lock = NULL, claim_expires = NULL, "
            "worker_pid = NULL WHERE id = ? AND status != 'archived'",
            (task_id,),
        ).rowcount
        if moved != 1:
            return False
        run_id = close_run(
            conn,
            task_id,
            outcome="reclaimed",
            status="reclaimed",
            summary="task archived with run still active",
        )
        append_event(conn, task_id, "archived", None, run_id=run_id)
    recompute_ready(conn)
    return True


def board_stats(conn: sqlite3.Connection) -> dict[str, Any]:
    """Counts by status and by assignee (archived left out), and the oldest ready task's
    age in seconds."""
    by_status = {
        r["status"]: int(r["n"])
        for r in conn.execute(
            "SELECT status, COUNT(*) AS n FROM tasks WHERE status != 'archived' GROUP BY status"
        )
    }
    by_assignee: dict[str, dict[str, int]] = {}
    for r in conn.execute(
        "SELECT assignee, status, COUNT(*) AS n FROM tasks "
        "WHERE status != 'archived' AND assignee IS NOT NULL GROUP BY assignee, status"
    ):
        by_assignee.setdefault(r["assignee"], {})[r["status"]] = int(r["n"])
    oldest = conn.execute("SELECT MIN(created_at) AS ts FROM tasks WHERE status = 'ready'")
    ts = oldest.fetchone()["ts"]
    now = int(time.time())
    return {
        "by_status": by_status,
        "by_assignee": by_assignee,
        "oldest_ready_age_seconds": now - int(ts) if ts is not None else None,
        "now": now,
    }


def to_epoch(value: Any) -> int | None:
    """Seconds since the epoch from an int, a digit string or ISO-8601; ``None`` for
    anything else (a corrupt row must not break a board view)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    text = value.strip() if isinstance(value, str) else ""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


def task_age(task: Task) -> dict[str, int | None]:
    """Seconds since the task was created and started, and how long it took to complete."""
    now = int(time.time())
    created, started = to_epoch(task.created_at), to_epoch(task.started_at)
    completed = to_epoch(task.completed_at)
    since = started if started is not None else created
    return {
        "created_age_seconds": now - created if created is not None else None,
        "started_age_seconds": now - started if started is not None else None,
        "time_to_complete_seconds": (
            completed - since if completed is not None and since is not None else None
        ),
    }


def list_profiles_on_disk() -> list[str]:
    """The profiles a task can be assigned to: ``default`` and each named one."""
    return sorted(p.name for p in profiles.list_all())


def known_assignees(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every profile on disk and every assignee of a live task, with its counts by status."""
    on_disk = set(list_profiles_on_disk())
    counts: dict[str, dict[str, int]] = {}
    for r in conn.execute(
        "SELECT assignee, status, COUNT(*) AS n FROM tasks "
        "WHERE status != 'archived' AND assignee IS NOT NULL GROUP BY assignee, status"
    ):
        counts.setdefault(r["assignee"], {})[r["status"]] = int(r["n"])
    return [
        {"name": name, "on_disk": name in on_disk, "counts": counts.get(name, {})}
        for name in sorted(on_disk | set(counts))
    ]
