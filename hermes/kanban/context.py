"""What a worker reads before it starts a task (0.19's ``build_worker_context``): the task,
the files attached to it, its earlier attempts, what its parents handed off, and the
comments on it. Each part is
capped, so a retry-heavy task or a comment storm keeps the prompt bounded."""

from __future__ import annotations

import sqlite3
from typing import TypeVar

from hermes.kanban.attachments import list_attachments
from hermes.kanban.records import Task
from hermes.kanban.tasks import get_task, list_comments, list_runs, parent_ids

MAX_PRIOR_ATTEMPTS = 10
MAX_COMMENTS = 30
MAX_FIELD_CHARS = 4 * 1024
MAX_BODY_CHARS = 8 * 1024
MAX_COMMENT_CHARS = 2 * 1024

_Item = TypeVar("_Item")


def _cap(text: str | None, limit: int = MAX_FIELD_CHARS) -> str:
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [truncated, {len(text) - limit} chars omitted]"


def _newest(items: list[_Item], limit: int, noun: str) -> tuple[list[_Item], list[str]]:
    """The last ``limit`` items, and a line saying how many older ones were left out."""
    if len(items) <= limit:
        return items, []
    left_out = len(items) - limit
    return items[-limit:], [f"_({left_out} earlier {noun}(s) omitted)_"]


def _header(task: Task) -> list[str]:
    lines = [
        f"# Kanban task {task.id}: {task.title}",
        "",
        f"Assignee: {task.assignee or '(unassigned)'}",
        f"Status:   {task.status}",
    ]
    if task.tenant:
        lines.append(f"Tenant:   {task.tenant}")
    lines.append(f"Workspace: {task.workspace_kind} @ {task.workspace_path or '(unresolved)'}")
    if task.max_runtime_seconds is not None:
        lines.append(f"Max runtime: {task.max_runtime_seconds}s")
    if task.branch_name:
        lines.append(f"Branch:   {task.branch_name}")
    lines.append("")
    if task.body and task.body.strip():
        lines += ["## Body", _cap(task.body, MAX_BODY_CHARS), ""]
    return lines


def _attachments(conn: sqlite3.Connection, task_id: str) -> list[str]:
    """The files given to the task, each at the path the worker's file tools read it from."""
    attached = list_attachments(conn, task_id)
    if not attached:
        return []
    lines = [
        "## Attachments",
        "Files attached to this task. Read them with the file/terminal tools at the "
        "absolute paths below:",
    ]
    for item in attached:
        name = item.filename.replace("`", "")  # a name cannot close the quote around it
        kind = f", {item.content_type}" if item.content_type else ""
        size = f", {max(1, (item.size + 1023) // 1024)} KB" if item.size else ""
        lines.append(f"- `{name}`{kind}{size} → `{item.stored_path}`")
    return [*lines, ""]


def _prior_attempts(conn: sqlite3.Connection, task_id: str) -> list[str]:
    ended = [r for r in list_runs(conn, task_id) if r.ended_at is not None]
    shown, note = _newest(ended, MAX_PRIOR_ATTEMPTS, "attempt")
    if not shown:
        return []
    lines = ["## Prior attempts on this task", *note]
    for run in shown:
        lines.append(f"### {run.outcome or run.status} ({run.profile or '(unknown)'})")
        if run.summary and run.summary.strip():
            lines.append(_cap(run.summary))
        if run.error and run.error.strip():
            lines.append(f"_error_: {_cap(run.error)}")
        lines.append("")
    return lines


def _parent_results(conn: sqlite3.Connection, task_id: str) -> list[str]:
    lines: list[str] = []
    for parent_id in parent_ids(conn, task_id):
        parent = get_task(conn, parent_id)
        if parent is None or parent.status != "done":
            continue
        completed = [r for r in list_runs(conn, parent_id) if r.outcome == "completed"]
        summary = completed[-1].summary if completed else None
        handoff = summary if summary and summary.strip() else parent.result
        if not lines:
            lines.append("## Parent task results")
        lines += [f"### {parent_id} ({parent.title})", _cap(handoff) or "(no result recorded)", ""]
    return lines


def _comments(conn: sqlite3.Connection, task_id: str) -> list[str]:
    shown, note = _newest(list_comments(conn, task_id), MAX_COMMENTS, "comment")
    if not shown:
        return []
    lines = ["## Comment thread", *note]
    for comment in shown:
        # Framed as a worker's comment, so an author named "system" reads as no directive.
        author = (comment.author or "").replace("`", "")
        lines += [f"comment from worker `{author}`:", _cap(comment.body, MAX_COMMENT_CHARS), ""]
    return lines


def build_worker_context(conn: sqlite3.Connection, task_id: str) -> str:
    """The text a worker starts task ``task_id`` with; ``ValueError`` for an unknown task."""
    task = get_task(conn, task_id)
    if task is None:
        raise ValueError(f"unknown task {task_id}")
    lines = _header(task)
    lines += _attachments(conn, task_id)
    lines += _prior_attempts(conn, task_id)
    lines += _parent_results(conn, task_id)
    lines += _comments(conn, task_id)
    return "\n".join(lines).rstrip() + "\n"
