"""Hermes Agent 0.19's ``hermes_cli.kanban_db``: the Kanban task board, kept by hermes
(hermes/kanban/) in 0.19's place and tables, so hermes-webui's Kanban panel and its own SQL
work on it.

What differs from 0.19 (docs/hermes-agent.md): a dispatched task is one turn of its
assignee's agent (``hermes kanban work``), whose answer completes it; no worker supervision
beyond expired claims, the respawn guard and the review lane, git worktrees, attachments,
notification subscriptions, projects or goal loops.

Whether an assignee is a profile is asked of ``hermes_cli.profiles.profile_exists`` at
each call, as 0.19's dispatcher asks it (its callers replace it to make lanes spawnable).
"""

from __future__ import annotations

import sqlite3
import time  # noqa: F401 (0.19's module has it: its callers set the board's clock through it)
from typing import Any

from hermes.kanban import dispatch as _dispatch
from hermes.kanban import review as _review
from hermes.kanban.boards import (
    board_metadata_path,
    create_board,
    list_boards,
    read_board_metadata,
    remove_board,
    write_board_metadata,
)
from hermes.kanban.db import (
    _INITIALIZED_PATHS,
    DEFAULT_BUSY_TIMEOUT_MS,
    connect,
    connect_closing,
    init_db,
    write_txn,
)
from hermes.kanban.dispatch import record_failure as _record_task_failure
from hermes.kanban.dispatch import release_stale_claims
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
    task_age,
    unblock_task,
)
from hermes.kanban.flow import claimer_id as _claimer_id
from hermes.kanban.flow import to_epoch as _to_epoch
from hermes.kanban.paths import (
    DEFAULT_BOARD,
    board_dir,
    board_exists,
    boards_root,
    clear_current_board,
    current_board_path,
    get_current_board,
    kanban_db_path,
    kanban_home,
    read_worker_log,
    set_current_board,
    worker_log_path,
    worker_logs_dir,
    workspaces_root,
)
from hermes.kanban.paths import normalize_slug as _normalize_board_slug
from hermes.kanban.records import Comment, DispatchResult, Event, Run, Task
from hermes.kanban.respawn import BLOCKER_ERROR as _RESPAWN_BLOCKER_RE
from hermes.kanban.respawn import DEFAULT_RATE_LIMIT_COOLDOWN_SECONDS, check_respawn_guard
from hermes.kanban.respawn import PULL_REQUEST_URL as _RESPAWN_GUARD_PR_URL_RE
from hermes.kanban.respawn import PULL_REQUEST_WINDOW_SECONDS as _RESPAWN_GUARD_PR_WINDOW
from hermes.kanban.respawn import SUCCESS_WINDOW_SECONDS as _RESPAWN_GUARD_SUCCESS_WINDOW
from hermes.kanban.respawn import (
    rate_limit_cooldown_seconds as _resolve_rate_limit_cooldown_seconds,
)
from hermes.kanban.review import claim_review_task
from hermes.kanban.schema import SCHEMA_SQL
from hermes.kanban.tasks import (
    DEFAULT_FAILURE_LIMIT,
    VALID_INITIAL_STATUSES,
    VALID_SORT_ORDERS,
    VALID_STATUSES,
    VALID_WORKSPACE_KINDS,
    add_comment,
    assign_task,
    child_ids,
    create_task,
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
    recompute_ready,
    unlink_tasks,
)
from hermes.kanban.tasks import append_event as _append_event
from hermes.kanban.tasks import close_run as _end_run
from hermes.kanban.tasks import new_task_id as _new_task_id
from hermes.kanban.tasks import record_ended_run as _synthesize_ended_run
from hermes_cli import profiles as _cli_profiles


def _profile_exists(name: str) -> bool:
    try:
        return bool(_cli_profiles.profile_exists(name))  # looked up now: callers replace it
    except ValueError:  # not a profile name at all
        return False


def dispatch_once(conn: sqlite3.Connection, **options: Any) -> DispatchResult:
    """0.19's dispatcher tick (hermes.kanban.dispatch.dispatch_once, same keywords)."""
    return _dispatch.dispatch_once(conn, assignee_is_profile=_profile_exists, **options)


def has_spawnable_ready(conn: sqlite3.Connection) -> bool:
    """Whether a ready task is assigned, unclaimed and its assignee a profile."""
    return _review.has_spawnable(conn, "ready", _profile_exists)


def has_spawnable_review(conn: sqlite3.Connection) -> bool:
    """Whether a review task is assigned, unclaimed and its assignee a profile."""
    return _review.has_spawnable(conn, "review", _profile_exists)


__all__ = [
    "BLOCK_RECURRENCE_LIMIT",
    "DEFAULT_BOARD",
    "DEFAULT_BUSY_TIMEOUT_MS",
    "DEFAULT_CLAIM_TTL_SECONDS",
    "DEFAULT_FAILURE_LIMIT",
    "DEFAULT_RATE_LIMIT_COOLDOWN_SECONDS",
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
    "Run",
    "Task",
    "_append_event",
    "_claimer_id",
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
    "set_current_board",
    "task_age",
    "unblock_task",
    "unlink_tasks",
    "worker_log_path",
    "worker_logs_dir",
    "workspaces_root",
    "write_board_metadata",
    "write_txn",
]
