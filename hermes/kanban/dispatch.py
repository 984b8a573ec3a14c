"""The dispatcher tick, as 0.19's ``dispatch_once``: put back tasks whose claim expired,
promote those whose parents are done, then claim each ready task whose assignee is a
profile and start a worker for it: ``hermes -p <assignee> kanban work <task>``
(hermes/cli/kanban_cmd.py, one agent turn whose answer completes the task), or the
caller's ``spawn_fn``. Before that, ``supervision`` watches the workers already
started (expired claims, stale, crashed and timed-out workers). Before starting a ready
task it asks the respawn guard (``respawn``); after the ready lane it serves the review
lane (``review``).
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import sqlite3
import subprocess
import sys
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
from hermes.kanban.respawn import check_respawn_guard
from hermes.kanban.retention import rotate_worker_log, worker_log_rotation_config
from hermes.kanban.review import claim_for_review
from hermes.kanban.supervision import record_failure, supervise, watch
from hermes.kanban.tasks import (
    DEFAULT_FAILURE_LIMIT,
    append_event,
    recompute_ready,
)
from hermes.kanban.workspaces import prepare_workspace

log = logging.getLogger(__name__)

SpawnFn = Callable[..., Any]  # (task, workspace[, board=]) -> the worker's pid or None
ClaimFn = Callable[..., Task | None]  # (conn, task_id, ttl_seconds=) -> the claimed task


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
    claim: ClaimFn = claim_task,
) -> bool:
    """Claim a task (a ready one unless ``claim`` says otherwise) and start it through
    ``spawn_fn`` in its workspace (made by ``workspaces.prepare_workspace``; one that
    cannot be made counts as a failed start)."""
    claimed = claim(conn, task_id, ttl_seconds=ttl_seconds)
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
        watch(int(pid))
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
    was claimed in), with the task's skills; the worker's pid."""
    slug = normalize_slug(board) or get_current_board()
    log_path = worker_log_path(task.id, board=slug)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    rotate_worker_log(log_path, *worker_log_rotation_config())
    env = {
        **os.environ,
        "HERMES_KANBAN_DB": db_file or str(kanban_db_path(slug)),
        "HERMES_KANBAN_BOARD": slug,
    }
    argv = [sys.executable, "-m", "hermes", "-p", task.assignee or "default"]
    argv += ["kanban", "work", task.id, "--board", slug]
    for skill in task.skills or ():
        argv += ["--skill", skill]
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


def _running_by_assignee(conn: sqlite3.Connection) -> dict[str, int]:
    rows = conn.execute(
        "SELECT assignee, COUNT(*) AS n FROM tasks "
        "WHERE status = 'running' AND assignee IS NOT NULL GROUP BY assignee"
    )
    return {r["assignee"]: int(r["n"]) for r in rows}


def _waiting(
    conn: sqlite3.Connection,
    status: str,
    result: DispatchResult,
    assignee_is_profile: Callable[[str], bool] | None,
) -> list[sqlite3.Row]:
    """The unclaimed tasks of a lane a worker can start for, in dispatch order; the rest
    go to ``result``'s skipped lists. ``assignee_is_profile`` (when hermes starts the
    workers) sets apart the tasks whose assignee is no profile."""
    rows = conn.execute(
        "SELECT id, assignee FROM tasks WHERE status = ? AND claim_lock IS NULL "
        "ORDER BY priority DESC, created_at ASC",
        (status,),
    ).fetchall()
    result.skipped_unassigned += [r["id"] for r in rows if not r["assignee"]]
    waiting = [r for r in rows if r["assignee"]]
    if assignee_is_profile is None:
        return waiting
    nobody = [r for r in waiting if not assignee_is_profile(r["assignee"])]
    result.skipped_nonspawnable += [r["id"] for r in nobody]
    for row in nobody:
        log.warning(
            "Kanban task %s waits: its assignee %r is no profile of this home "
            "(create the profile or reassign the task).",
            row["id"],
            row["assignee"],
        )
    return [r for r in waiting if r not in nobody]


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
    assignee_is_profile: Callable[[str], bool] = is_profile,
) -> DispatchResult:
    """One dispatcher tick: watch the running workers (``supervision``), promote what is
    ready, then claim ready
    assigned tasks and start a worker for each (``spawn_fn``, else ``hermes -p ASSIGNEE
    kanban work``: a task whose assignee is no profile waits), keeping at most
    ``max_spawn`` / ``max_in_progress`` running (``max_in_progress_per_profile`` each).
    A ready task the respawn guard holds waits for a later tick, with a
    ``respawn_guarded`` event; then review tasks get their reviewer. A dry run changes
    nothing but what supervision finds (a dead worker frees its task, as in 0.19)."""
    result = DispatchResult()
    # Workers are watched even on a dry run, as 0.19 does (a dead one frees its task).
    supervise(
        conn, result, stale_timeout_seconds=stale_timeout_seconds, failure_limit=failure_limit
    )
    if not dry_run:
        result.promoted = recompute_ready(conn, failure_limit=failure_limit)
    profile_check = None
    if spawn_fn is None:
        spawn_fn = functools.partial(spawn_hermes_worker, db_file=database_file(conn))
        profile_check = assignee_is_profile
    ready = _waiting(conn, "ready", result, profile_check)
    review = _waiting(conn, "review", result, profile_check)
    caps = [c for c in (max_spawn, max_in_progress) if c is not None]
    running = conn.execute("SELECT COUNT(*) FROM tasks WHERE status = 'running'").fetchone()[0]
    per_profile = _running_by_assignee(conn)
    lanes = [(row, "ready") for row in ready] + [(row, "review") for row in review]
    for row, lane in lanes:
        if caps and running >= min(caps):
            break
        assignee = row["assignee"]
        busy = per_profile.get(assignee, 0)
        if lane == "ready":  # 0.19 caps per profile and guards the ready lane only
            if max_in_progress_per_profile and busy >= max_in_progress_per_profile:
                result.skipped_per_profile_capped.append((row["id"], assignee, busy))
                continue
            reason = check_respawn_guard(conn, row["id"])
            if reason is not None:
                result.respawn_guarded.append((row["id"], reason))
                if not dry_run:
                    with write_txn(conn):
                        append_event(conn, row["id"], "respawn_guarded", {"reason": reason})
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
            claim=claim_task if lane == "ready" else claim_for_review,
        ):
            continue
        running += 1
        per_profile[assignee] = busy + 1
    return result
