"""A board's rows as typed values, with 0.19's field names and order (hermes-webui turns them
into JSON with ``dataclasses.asdict``)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field, fields
from typing import Any


def _json_or_none(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


# 0.19's fields, one a line in 0.19's order: hermes-webui reads them by name from asdict.
@dataclass
class Task:
    id: str
    title: str
    body: str | None
    assignee: str | None
    status: str
    priority: int
    created_by: str | None
    created_at: int
    started_at: int | None
    completed_at: int | None
    workspace_kind: str
    workspace_path: str | None
    claim_lock: str | None
    claim_expires: int | None
    tenant: str | None
    branch_name: str | None = None
    project_id: str | None = None
    result: str | None = None
    idempotency_key: str | None = None
    consecutive_failures: int = 0
    worker_pid: int | None = None
    last_failure_error: str | None = None
    max_runtime_seconds: int | None = None
    last_heartbeat_at: int | None = None
    current_run_id: int | None = None
    workflow_template_id: str | None = None
    current_step_key: str | None = None
    skills: list[str] | None = None
    model_override: str | None = None
    max_retries: int | None = None
    goal_mode: bool = False
    goal_max_turns: int | None = None
    session_id: str | None = None
    block_kind: str | None = None
    block_recurrences: int = 0

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Task:
        keys = set(row.keys())
        values = {f.name: row[f.name] for f in fields(cls) if f.name in keys}
        skills = _json_or_none(values.get("skills"))
        values["skills"] = [str(s) for s in skills if s] if isinstance(skills, list) else None
        values["goal_mode"] = bool(values.get("goal_mode"))
        values["consecutive_failures"] = int(values.get("consecutive_failures") or 0)
        values["block_recurrences"] = int(values.get("block_recurrences") or 0)
        return cls(**values)


@dataclass
class Run:
    """One attempt at a task: opened by a claim, closed by complete/block/reclaim."""

    id: int
    task_id: str
    profile: str | None
    step_key: str | None
    status: str
    claim_lock: str | None
    claim_expires: int | None
    worker_pid: int | None
    max_runtime_seconds: int | None
    last_heartbeat_at: int | None
    started_at: int
    ended_at: int | None
    outcome: str | None
    summary: str | None
    metadata: dict[str, Any] | None
    error: str | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Run:
        values = {f.name: row[f.name] for f in fields(cls)}
        values["metadata"] = _json_or_none(values["metadata"])
        return cls(**values)


@dataclass
class Comment:
    id: int
    task_id: str
    author: str
    body: str
    created_at: int


@dataclass
class Attachment:
    """A file given to a task (a ``task_attachments`` row); ``stored_path`` is the file."""

    id: int
    task_id: str
    filename: str
    stored_path: str
    content_type: str | None
    size: int
    uploaded_by: str | None
    created_at: int

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Attachment:
        values = {f.name: row[f.name] for f in fields(cls)}
        values["size"] = int(values["size"] or 0)
        return cls(**values)


@dataclass
class Event:
    id: int
    task_id: str
    kind: str
    payload: dict[str, Any] | None
    created_at: int
    run_id: int | None = None


@dataclass
class DispatchResult:
    """What one dispatcher tick did, in 0.19's fields."""

    reclaimed: int = 0
    promoted: int = 0
    spawned: list[tuple[str, str, str]] = field(default_factory=list)
    skipped_unassigned: list[str] = field(default_factory=list)
    auto_assigned_default: list[str] = field(default_factory=list)
    skipped_nonspawnable: list[str] = field(default_factory=list)
    skipped_per_profile_capped: list[tuple[str, str, int]] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)
    auto_blocked: list[str] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    respawn_guarded: list[tuple[str, str]] = field(default_factory=list)
    rate_limited: list[str] = field(default_factory=list)
    skipped_locked: bool = False
