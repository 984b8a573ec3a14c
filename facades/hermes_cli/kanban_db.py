"""Hermes Agent 0.19's ``hermes_cli.kanban_db``: the Kanban task board, kept by hermes
(hermes/kanban/) in 0.19's place and tables, so hermes-webui's Kanban panel and its own SQL
work on it.

What differs from 0.19 (docs/hermes-agent.md): a dispatched task is one turn of its
assignee's agent (``hermes kanban work``), whose answer completes it; an attachment's
name may not be a path, and only a file in its task's own folder is recorded or deleted;
no projects or goal loops; a damaged board's byte-for-byte backup is made by a child
process, so this one never opens the file outside SQLite.

Whether an assignee is a profile is asked of ``hermes_cli.profiles.profile_exists`` at
each call, as 0.19's dispatcher asks it (its callers replace it to make lanes spawnable).
"""

from __future__ import annotations

import os  # noqa: F401  0.19's tests patch ``kanban_db.os.waitpid`` and ``kanban_db.time.time``
import sqlite3  # 0.19's own tests reach it here (``kanban_db.sqlite3.connect``)
import threading
import time  # noqa: F401
from typing import Any

from hermes.kanban import daemon as _daemon
from hermes.kanban import dispatch as _dispatch
from hermes.kanban import manual as _manual
from hermes.kanban import review as _review
from hermes.kanban import supervision
from hermes.kanban.artifacts import ArtifactPreservationError
from hermes.kanban.attachments import (
    KANBAN_ATTACHMENT_MAX_BYTES,
    AttachmentTooLarge,
    add_attachment,
    delete_attachment,
    get_attachment,
    list_attachments,
    store_attachment_bytes,
)
from hermes.kanban.boards import (
    board_metadata_path,
    create_board,
    list_boards,
    read_board_metadata,
    remove_board,
    write_board_metadata,
)
from hermes.kanban.context import build_worker_context
from hermes.kanban.db import (
    _INITIALIZED_PATHS,
    DEFAULT_BUSY_TIMEOUT_MS,
    KanbanDbCorruptError,
    connect,
    connect_closing,
    init_db,
    write_txn,
)
from hermes.kanban.dispatch import set_worker_pid as _set_worker_pid
from hermes.kanban.flow import (
    BLOCK_RECURRENCE_LIMIT,
    DEFAULT_CLAIM_TTL_SECONDS,
    VALID_BLOCK_KINDS,
    HallucinatedCardsError,
    archive_task,
    block_task,
    board_stats,
    claim_task,
    complete_task,
    heartbeat_claim,
    known_assignees,
    list_profiles_on_disk,
    schedule_task,
    task_age,
    unblock_task,
)
from hermes.kanban.flow import claimer_id as _claimer_id
from hermes.kanban.flow import to_epoch as _to_epoch
from hermes.kanban.manual import edit_completed_task_result, promote_task
from hermes.kanban.notify import (
    add_notify_sub,
    advance_notify_cursor,
    claim_unseen_events_for_sub,
    list_notify_subs,
    remove_notify_sub,
    rewind_notify_cursor,
    unseen_events_for_sub,
)
from hermes.kanban.paths import (
    DEFAULT_BOARD,
    attachments_root,
    board_dir,
    board_exists,
    boards_root,
    clear_current_board,
    current_board_path,
    get_current_board,
    kanban_db_path,
    kanban_home,
    read_worker_log,
    scoped_current_board,
    set_current_board,
    task_attachments_dir,
    worker_log_path,
    worker_logs_dir,
    workspaces_root,
)
from hermes.kanban.paths import normalize_slug as _normalize_board_slug
from hermes.kanban.records import Attachment, Comment, DispatchResult, Event, Run, Task
from hermes.kanban.respawn import BLOCKER_ERROR as _RESPAWN_BLOCKER_RE
from hermes.kanban.respawn import DEFAULT_RATE_LIMIT_COOLDOWN_SECONDS, check_respawn_guard
from hermes.kanban.respawn import PULL_REQUEST_URL as _RESPAWN_GUARD_PR_URL_RE
from hermes.kanban.respawn import PULL_REQUEST_WINDOW_SECONDS as _RESPAWN_GUARD_PR_WINDOW
from hermes.kanban.respawn import SUCCESS_WINDOW_SECONDS as _RESPAWN_GUARD_SUCCESS_WINDOW
from hermes.kanban.respawn import (
    rate_limit_cooldown_seconds as _resolve_rate_limit_cooldown_seconds,
)
from hermes.kanban.retention import (
    DEFAULT_LOG_BACKUP_COUNT,
    DEFAULT_LOG_ROTATE_BYTES,
    gc_events,
    gc_worker_logs,
    worker_log_rotation_config,
)
from hermes.kanban.review import claim_review_task
from hermes.kanban.schema import SCHEMA_SQL
from hermes.kanban.supervision import (
    DEFAULT_CLAIM_HEARTBEAT_MAX_STALE_SECONDS,
    DEFAULT_CRASH_GRACE_SECONDS,
    KANBAN_RATE_LIMIT_EXIT_CODE,
    KANBAN_TERMINAL_TIMEOUT_GRACE_SECONDS,
    RECLAIM_DEFER_GRACE_SECONDS,
    heartbeat_worker,
)
from hermes.kanban.supervision import classify_exit as _classify_worker_exit
from hermes.kanban.supervision import crash_grace_seconds as _resolve_crash_grace_seconds
from hermes.kanban.supervision import pid_alive as _pid_alive
from hermes.kanban.supervision import record_failure as _record_task_failure
from hermes.kanban.supervision import record_worker_exit as _record_worker_exit
from hermes.kanban.supervision import survived as _worker_survived_termination
from hermes.kanban.tasks import (
    DEFAULT_FAILURE_LIMIT,
    VALID_INITIAL_STATUSES,
    VALID_SORT_ORDERS,
    VALID_STATUSES,
    VALID_WORKSPACE_KINDS,
    add_comment,
    assign_task,
    child_ids,
    delete_archived_task,
    delete_task,
    get_run,
    get_task,
    latest_run,
    latest_summaries,
    latest_summary,
    link_tasks,
    list_comments,
    list_events,
    list_runs,
    list_tasks,
    parent_ids,
    parent_results,
    recompute_ready,
    unlink_tasks,
)
from hermes.kanban.tasks import append_event as _append_event
from hermes.kanban.tasks import close_run as _end_run
from hermes.kanban.tasks import create_task as _create_task
from hermes.kanban.tasks import new_task_id as _new_task_id
from hermes.kanban.tasks import record_ended_run as _synthesize_ended_run
from hermes.kanban.triage import decompose_triage_task, specify_triage_task
from hermes.kanban.workspaces import (
    resolve_workspace,
    set_branch_name,
    set_workspace_path,
)
from hermes.tools.toolsets import toolsets as _toolsets
from hermes_cli import profiles as _cli_profiles

DEFAULT_SPAWN_FAILURE_LIMIT = DEFAULT_FAILURE_LIMIT  # 0.19's older name, which it keeps
# hermes's toolsets, lower case: a task's skill so named is a toolset mistaken for a skill.
KNOWN_TOOLSET_NAMES = frozenset(name.casefold() for name in _toolsets())


def create_task(conn: sqlite3.Connection, **fields: Any) -> str:
    """0.19's ``create_task`` (hermes.kanban.tasks, same keywords), refusing a skill named
    like one of ``KNOWN_TOOLSET_NAMES``."""
    return _create_task(conn, toolset_names=KNOWN_TOOLSET_NAMES, **fields)


def _profile_exists(name: str) -> bool:
    try:
        return bool(_cli_profiles.profile_exists(name))  # looked up now: callers replace it
    except ValueError:  # not a profile name at all
        return False


def dispatch_once(conn: sqlite3.Connection, **options: Any) -> DispatchResult:
    """0.19's dispatcher tick (hermes.kanban.dispatch.dispatch_once, same keywords)."""
    return _dispatch.dispatch_once(conn, assignee_is_profile=_profile_exists, **options)


def run_daemon(
    *,
    interval: float = 60.0,
    max_spawn: int | None = None,
    failure_limit: int = DEFAULT_SPAWN_FAILURE_LIMIT,
    stop_event: threading.Event | None = None,
    on_tick: Any = None,
) -> None:
    """0.19's ``hermes kanban daemon``: ``dispatch_once`` on the active board every
    ``interval`` seconds until SIGINT/SIGTERM or ``stop_event`` (hermes/kanban/daemon.py)."""
    _daemon.run_daemon(
        dispatch_once,
        interval=interval,
        max_spawn=max_spawn,
        failure_limit=failure_limit,
        stop_event=stop_event,
        on_tick=on_tick,
    )


def has_spawnable_ready(conn: sqlite3.Connection) -> bool:
    """Whether a ready task is assigned, unclaimed and its assignee a profile."""
    return _review.has_spawnable(conn, "ready", _profile_exists)


def has_spawnable_review(conn: sqlite3.Connection) -> bool:
    """Whether a review task is assigned, unclaimed and its assignee a profile."""
    return _review.has_spawnable(conn, "review", _profile_exists)


# Worker supervision (hermes/kanban/supervision.py). 0.19's tools and tests put their own
# ``_pid_alive``, ``_terminate_reclaimed_worker`` and ``_record_worker_exit`` on this
# module, so the functions below hand the ones found here at call time to hermes's.


def _terminate_reclaimed_worker(
    pid: int | None, claim_lock: str | None, *, signal_fn: Any = None
) -> dict[str, Any]:
    return supervision.terminate_worker(pid, claim_lock, signal_fn=signal_fn, pid_alive=_pid_alive)


def release_stale_claims(conn: sqlite3.Connection, *, signal_fn: Any = None) -> int:
    return supervision.release_stale_claims(
        conn, signal_fn=signal_fn, pid_alive=_pid_alive, terminate=_terminate_reclaimed_worker
    )


def detect_stale_running(
    conn: sqlite3.Connection, *, stale_timeout_seconds: int = 0, signal_fn: Any = None
) -> list[str]:
    return supervision.detect_stale_running(
        conn,
        stale_timeout_seconds=stale_timeout_seconds,
        signal_fn=signal_fn,
        terminate=_terminate_reclaimed_worker,
    )


def detect_crashed_workers(conn: sqlite3.Connection) -> list[str]:
    blocked: list[str] = []
    limited: list[str] = []
    crashed = supervision.detect_crashed_workers(
        conn, pid_alive=_pid_alive, auto_blocked=blocked, rate_limited=limited
    )
    # 0.19 leaves the tasks blocked and rate-limited on the function, for its callers.
    detect_crashed_workers._last_auto_blocked = blocked  # type: ignore[attr-defined]
    detect_crashed_workers._last_rate_limited = limited  # type: ignore[attr-defined]
    return crashed


def enforce_max_runtime(conn: sqlite3.Connection, *, signal_fn: Any = None) -> list[str]:
    return supervision.enforce_max_runtime(conn, signal_fn=signal_fn, pid_alive=_pid_alive)


def reclaim_task(
    conn: sqlite3.Connection, task_id: str, *, reason: str | None = None, signal_fn: Any = None
) -> bool:
    return _manual.reclaim_task(
        conn, task_id, reason=reason, signal_fn=signal_fn, terminate=_terminate_reclaimed_worker
    )


def reassign_task(
    conn: sqlite3.Connection,
    task_id: str,
    profile: str | None,
    *,
    reclaim_first: bool = False,
    reason: str | None = None,
) -> bool:
    return _manual.reassign_task(
        conn, task_id, profile, reclaim_first=reclaim_first, reason=reason, reclaim=reclaim_task
    )


def reap_worker_zombies() -> list[int]:
    return supervision.reap_worker_zombies(record_exit=_record_worker_exit)


__all__ = [
    "ArtifactPreservationError",
    "KANBAN_TERMINAL_TIMEOUT_GRACE_SECONDS",
    "KNOWN_TOOLSET_NAMES",
    "run_daemon",
    "DEFAULT_SPAWN_FAILURE_LIMIT",
    "decompose_triage_task",
    "scoped_current_board",
    "specify_triage_task",
    "DEFAULT_LOG_BACKUP_COUNT",
    "DEFAULT_LOG_ROTATE_BYTES",
    "gc_events",
    "gc_worker_logs",
    "worker_log_rotation_config",
    "edit_completed_task_result",
    "parent_results",
    "promote_task",
    "reassign_task",
    "reclaim_task",
    "KANBAN_ATTACHMENT_MAX_BYTES",
    "Attachment",
    "AttachmentTooLarge",
    "add_attachment",
    "attachments_root",
    "delete_attachment",
    "get_attachment",
    "list_attachments",
    "store_attachment_bytes",
    "task_attachments_dir",
    "add_notify_sub",
    "advance_notify_cursor",
    "claim_unseen_events_for_sub",
    "list_notify_subs",
    "remove_notify_sub",
    "rewind_notify_cursor",
    "unseen_events_for_sub",
    "BLOCK_RECURRENCE_LIMIT",
    "DEFAULT_BOARD",
    "DEFAULT_BUSY_TIMEOUT_MS",
    "DEFAULT_CLAIM_TTL_SECONDS",
    "DEFAULT_FAILURE_LIMIT",
    "DEFAULT_RATE_LIMIT_COOLDOWN_SECONDS",
    "KANBAN_RATE_LIMIT_EXIT_CODE",
    "SCHEMA_SQL",
    "VALID_BLOCK_KINDS",
    "VALID_INITIAL_STATUSES",
    "VALID_SORT_ORDERS",
    "VALID_STATUSES",
    "VALID_WORKSPACE_KINDS",
    "_INITIALIZED_PATHS",
    "_RESPAWN_BLOCKER_RE",
    "_RESPAWN_GUARD_PR_URL_RE",
    "_RESPAWN_GUARD_PR_WINDOW",
    "_RESPAWN_GUARD_SUCCESS_WINDOW",
    "_resolve_rate_limit_cooldown_seconds",
    "Comment",
    "DispatchResult",
    "Event",
    "HallucinatedCardsError",
    "KanbanDbCorruptError",
    "Run",
    "Task",
    "_append_event",
    "_claimer_id",
    "_classify_worker_exit",
    "_end_run",
    "_new_task_id",
    "_normalize_board_slug",
    "_record_task_failure",
    "_set_worker_pid",
    "_to_epoch",
    "_synthesize_ended_run",
    "add_comment",
    "archive_task",
    "assign_task",
    "block_task",
    "board_dir",
    "board_exists",
    "board_metadata_path",
    "board_stats",
    "boards_root",
    "build_worker_context",
    "check_respawn_guard",
    "child_ids",
    "claim_review_task",
    "claim_task",
    "clear_current_board",
    "complete_task",
    "connect",
    "connect_closing",
    "create_board",
    "create_task",
    "current_board_path",
    "delete_archived_task",
    "delete_task",
    "dispatch_once",
    "get_current_board",
    "get_run",
    "get_task",
    "has_spawnable_ready",
    "has_spawnable_review",
    "heartbeat_claim",
    "heartbeat_worker",
    "init_db",
    "kanban_db_path",
    "kanban_home",
    "known_assignees",
    "latest_run",
    "latest_summaries",
    "latest_summary",
    "link_tasks",
    "list_boards",
    "list_comments",
    "list_events",
    "list_profiles_on_disk",
    "list_runs",
    "list_tasks",
    "parent_ids",
    "read_board_metadata",
    "read_worker_log",
    "recompute_ready",
    "release_stale_claims",
    "remove_board",
    "resolve_workspace",
    "schedule_task",
    "set_branch_name",
    "set_current_board",
    "set_workspace_path",
    "task_age",
    "unblock_task",
    "unlink_tasks",
    "worker_log_path",
    "worker_logs_dir",
    "workspaces_root",
    "write_board_metadata",
    "write_txn",
    "DEFAULT_CLAIM_HEARTBEAT_MAX_STALE_SECONDS",
    "DEFAULT_CRASH_GRACE_SECONDS",
    "RECLAIM_DEFER_GRACE_SECONDS",
    "_pid_alive",
    "_record_worker_exit",
    "_resolve_crash_grace_seconds",
    "_terminate_reclaimed_worker",
    "_worker_survived_termination",
    "detect_crashed_workers",
    "detect_stale_running",
    "enforce_max_runtime",
    "reap_worker_zombies",
]
