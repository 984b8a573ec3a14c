"""Hermes Agent 0.19's ``hermes_cli.kanban_db``: the Kanban task board, kept by hermes
(hermes/kanban/) in 0.19's place and tables, so hermes-webui's Kanban panel and its own SQL
work on it.

What differs from 0.19 (docs/hermes-agent.md): a dispatched task is one turn of its
assignee's agent (``hermes kanban work``), whose answer completes it; no worker supervision
beyond expired claims, attachments, notification subscriptions, projects or goal loops;
a damaged board is copied with SQLite's backup API, never read byte for byte.
"""

from __future__ import annotations

# 0.19's own tests reach sqlite3 through this module (``kanban_db.sqlite3.connect``).
import sqlite3  # noqa: F401

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
from hermes.kanban.dispatch import dispatch_once, release_stale_claims
from hermes.kanban.dispatch import record_failure as _record_task_failure
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
from hermes.kanban.workspaces import (
    resolve_workspace,
    set_branch_name,
    set_workspace_path,
)

__all__ = [
    "BLOCK_RECURRENCE_LIMIT",
    "DEFAULT_BOARD",
    "DEFAULT_BUSY_TIMEOUT_MS",
    "DEFAULT_CLAIM_TTL_SECONDS",
    "DEFAULT_FAILURE_LIMIT",
    "SCHEMA_SQL",
    "VALID_BLOCK_KINDS",
    "VALID_INITIAL_STATUSES",
    "VALID_SORT_ORDERS",
    "VALID_STATUSES",
    "VALID_WORKSPACE_KINDS",
    "_INITIALIZED_PATHS",
    "Comment",
    "DispatchResult",
    "Event",
    "HallucinatedCardsError",
    "KanbanDbCorruptError",
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
    "build_worker_context",
    "child_ids",
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
]
