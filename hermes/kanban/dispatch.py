"""The dispatcher tick, as 0.19's ``dispatch_once``: put back tasks whose claim expired,
promote those whose parents are done, then claim each ready task whose assignee is a
profile and start a worker for it: ``hermes -p <assignee> kanban work <task>``
(hermes/cli/kanban_cmd.py, one agent turn whose answer completes the task), or the
caller's ``spawn_fn``. Of 0.19's supervision hermes keeps the expired claim (a worker
renews its claim while it runs); it does not watch worker pids, runtimes or the causes of
retries.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from hermes import profiles
from hermes.errors import HermesError
from hermes.kanban.db import write_txn
from hermes.kanban.flow import claim_task
from hermes.kanban.paths import (
    get_current_board,
    kanban_db_path,
    normalize_slug,
    worker_log_path,
)
from hermes.kanban.records import DispatchResult, Task
from hermes.kanban.tasks import (
    DEFAULT_FAILURE_LIMIT,
    append_event,
    close_run,
    recompute_ready,
    task_fields,
)
from hermes.kanban.workspaces import prepare_workspace

log = logging.getLogger(__name__)

SpawnFn = Callable[..., Any]  # (task, workspace[, board=]) -> the worker's pid or None


def record_failure(
    conn: sqlite3.Connection,
    task_id: str,
    error: str,
    *,
    outcome: str,
    failure_limit: int | None = None,
    release_claim: bool = False,
    end_run: bool = False,
) -> bool:
    """Count a failed attempt (``spawn_failed``, ``crashed``, ...); at the task's limit
    (its ``max_retries``, else ``failure_limit``) it is blocked with a ``gave_up`` event.
    ``release_claim`` sends a running task back to ``ready``. Whether it was blocked."""
    error = error[:500]
    with write_txn(conn):
        row = task_fields(conn, task_id, "consecutive_failures", "max_retries")
        if row is None:
            return False
        failures = int(row["consecutive_failures"] or 0) + 1
        own = row["max_retries"] is not None
        limit = int(row["max_retries"] if own else (failure_limit or DEFAULT_FAILURE_LIMIT))
        gave_up = failures >= limit
        status = "blocked" if gave_up else ("ready" if release_claim else None)
        claim = ", claim_lock = NULL, claim_expires = NULL, worker_pid = NULL"
        conn.execute(
            "UPDATE tasks SET consecutive_failures = ?, last_failure_error = ?"
            + (", status = ?" if status else "")
            + (claim if release_claim else "")
            + " WHERE id = ?",
            (failures, error, *([status] if status else []), task_id),
        )
        run_id = None
        if end_run:
            run_id = close_run(
                conn,
                task_id,
                outcome="gave_up" if gave_up else outcome,
                error=error,
                metadata={"failures": failures},
            )
        if gave_up:
            payload = {
                "failures": failures,
                "effective_limit": limit,
                "limit_source": "task" if own else "dispatcher",
                "error": error,
                "trigger_outcome": outcome,
            }
            append_event(conn, task_id, "gave_up", payload, run_id=run_id)
        elif end_run:
            append_event(
                conn, task_id, outcome, {"error": error, "failures": failures}, run_id=run_id
            )
    return gave_up


def set_worker_pid(conn: sqlite3.Connection, task_id: str, pid: int) -> None:
    """Record the started worker's pid on the task and its run, with a ``spawned`` event."""
    with write_txn(conn):
        conn.execute("UPDATE tasks SET worker_pid = ? WHERE id = ?", (pid, task_id))
        row = conn.execute("SELECT current_run_id FROM tasks WHERE id = ?", (task_id,))
        run_id = row.fetchone()["current_run_id"]
        if run_id is not None:
            conn.execute("UPDATE task_runs SET worker_pid = ? WHERE id = ?", (pid, run_id))
        append_event(conn, task_id, "spawned", {"pid": pid}, run_id=run_id)


def _call_spawn(spawn_fn: SpawnFn, task: Task, workspace: str, board: str | None) -> Any:
    """``spawn_fn(task, workspace)``, with ``board=`` when it takes one (0.19's convention)."""
    try:
        takes_board = "board" in inspect.signature(spawn_fn).parameters
    except (TypeError, ValueError):
        takes_board = False
    return spawn_fn(task, workspace, board=board) if takes_board else spawn_fn(task, workspace)


def _start(
    conn: sqlite3.Connection,
    task_id: str,
    spawn_fn: SpawnFn,
    *,
    board: str | None,
    ttl_seconds: int | None,
    failure_limit: int,
    result: DispatchResult,
) -> bool:
    """Claim a ready task and start it through ``spawn_fn`` in its workspace (made by
    ``workspaces.prepare_workspace``; one that cannot be made counts as a failed start)."""
    claimed = claim_task(conn, task_id, ttl_seconds=ttl_seconds)
    if claimed is None:
        return False
    try:
        workspace = str(prepare_workspace(conn, claimed, board=board))
        pid = _call_spawn(spawn_fn, claimed, workspace, board)
    except Exception as exc:  # the caller's spawner failed: count it, as 0.19 does
        if record_failure(
            conn,
            task_id,
            str(exc),
            outcome="spawn_failed",
            failure_limit=failure_limit,
            release_claim=True,
            end_run=True,
        ):
            result.auto_blocked.append(task_id)
        return False
    if pid:
        set_worker_pid(conn, task_id, int(pid))
    result.spawned.append((task_id, claimed.assignee or "", workspace))
    return True


def database_file(conn: sqlite3.Connection) -> str:
    """The file ``conn`` has open (the board a caller dispatches on, whatever is current)."""
    return str(conn.execute("PRAGMA database_list").fetchone()[2])


def spawn_hermes_worker(
    task: Task, workspace: str, board: str | None = None, *, db_file: str | None = None
) -> int:
    """Start ``hermes -p ASSIGNEE kanban work TASK`` in the task's workspace, its output in
    the task's worker log, pinned to the board's database (``db_file``: the one the task
    was claimed in); the worker's pid."""
    slug = normalize_slug(board) or get_current_board()
    log_path = worker_log_path(task.id, board=slug)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "HERMES_KANBAN_DB": db_file or str(kanban_db_path(slug)),
        "HERMES_KANBAN_BOARD": slug,
    }
    argv = [sys.executable, "-m", "hermes", "-p", task.assignee or "default"]
    argv += ["kanban", "work", task.id, "--board", slug]
    with open(log_path, "ab") as log_file:
        worker = subprocess.Popen(
            argv,
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives a dispatcher that stops (a web UI request)
        )
    return worker.pid


def is_profile(name: str) -> bool:
    try:
        return profiles.exists(name)
    except HermesError:
        return False


def release_stale_claims(conn: sqlite3.Connection) -> int:
    """Put back to ``ready`` each running task whose claim expired (its worker stopped
    renewing it), closing its run as ``reclaimed``; how many."""
    now = int(time.time())
    released = 0
    with write_txn(conn):
        stale = conn.execute(
            "SELECT id, claim_lock FROM tasks WHERE status = 'running' "
            "AND claim_expires IS NOT NULL AND claim_expires < ?",
            (now,),
        ).fetchall()
        for row in stale:
            conn.execute(
                "UPDATE tasks SET status = 'ready', claim_lock = NULL, claim_expires = NULL, "
                "worker_pid = NULL WHERE id = ? AND status = 'running'",
                (row["id"],),
            )
            run_id = close_run(
                conn, row["id"], outcome="reclaimed", summary="claim expired (no heartbeat)"
            )
            append_event(
                conn, row["id"], "reclaimed", {"stale_lock": row["claim_lock"]}, run_id=run_id
            )
            released += 1
    return released


def _running_by_assignee(conn: sqlite3.Connection) -> dict[str, int]:
    rows = conn.execute(
        "SELECT assignee, COUNT(*) AS n FROM tasks "
        "WHERE status = 'running' AND assignee IS NOT NULL GROUP BY assignee"
    )
    return {r["assignee"]: int(r["n"]) for r in rows}


def dispatch_once(
    conn: sqlite3.Connection,
    *,
    spawn_fn: SpawnFn | None = None,
    ttl_seconds: int | None = None,
    dry_run: bool = False,
    max_spawn: int | None = None,
    max_in_progress: int | None = None,
    failure_limit: int = DEFAULT_FAILURE_LIMIT,
    stale_timeout_seconds: int = 0,
    board: str | None = None,
    default_assignee: str | None = None,
    max_in_progress_per_profile: int | None = None,
) -> DispatchResult:
    """One dispatcher tick: reclaim expired claims, promote what is ready, then claim ready
    assigned tasks and start a worker for each (``spawn_fn``, else ``hermes -p ASSIGNEE
    kanban work``: a task whose assignee is no profile waits), keeping at most
    ``max_spawn`` / ``max_in_progress`` running (``max_in_progress_per_profile`` each)."""
    result = DispatchResult()
    if not dry_run:
        result.reclaimed = release_stale_claims(conn)
        result.promoted = recompute_ready(conn, failure_limit=failure_limit)
    ready = conn.execute(
        "SELECT id, assignee FROM tasks WHERE status = 'ready' AND claim_lock IS NULL "
        "ORDER BY priority DESC, created_at ASC"
    ).fetchall()
    waiting = [r for r in ready if r["assignee"]]
    result.skipped_unassigned = [r["id"] for r in ready if not r["assignee"]]
    if spawn_fn is None:
        spawn_fn = functools.partial(spawn_hermes_worker, db_file=database_file(conn))
        nobody = [r for r in waiting if not is_profile(r["assignee"])]
        result.skipped_nonspawnable = [r["id"] for r in nobody]
        waiting = [r for r in waiting if r not in nobody]
        for row in nobody:
            log.warning(
                "Kanban task %s waits: its assignee %r is no profile of this home "
                "(create the profile or reassign the task).",
                row["id"],
                row["assignee"],
            )
    caps = [c for c in (max_spawn, max_in_progress) if c is not None]
    running = conn.execute("SELECT COUNT(*) FROM tasks WHERE status = 'running'").fetchone()[0]
    per_profile = _running_by_assignee(conn)
    for row in waiting:
        if caps and running >= min(caps):
            break
        assignee = row["assignee"]
        busy = per_profile.get(assignee, 0)
        if max_in_progress_per_profile and busy >= max_in_progress_per_profile:
            result.skipped_per_profile_capped.append((row["id"], assignee, busy))
            continue
        if dry_run:
            result.spawned.append((row["id"], assignee, ""))
        elif not _start(
            conn,
            row["id"],
            spawn_fn,
            board=board,
            ttl_seconds=ttl_seconds,
            failure_limit=failure_limit,
            result=result,
        ):
            continue
        running += 1
        per_profile[assignee] = busy + 1
    return result
