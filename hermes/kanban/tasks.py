"""Tasks on a board: creating, reading, assigning and linking them, their comments, events
and runs, and promoting ``todo`` tasks whose parents are done. Each takes the connection
the caller opened (``db.connect``) and writes in one ``write_txn``, as 0.19's do."""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Collection, Iterable
from typing import Any

from hermes import profiles
from hermes.kanban.boards import read_board_metadata
from hermes.kanban.db import write_txn
from hermes.kanban.paths import get_current_board
from hermes.kanban.records import Comment, Event, Run, Task

VALID_STATUSES = {
    "triage",
    "todo",
    "scheduled",
    "ready",
    "running",
    "blocked",
    "review",
    "done",
    "archived",
}
VALID_INITIAL_STATUSES = {"running", "blocked"}
VALID_WORKSPACE_KINDS = {"scratch", "worktree", "dir"}
DEFAULT_FAILURE_LIMIT = 2
VALID_SORT_ORDERS = {
    "created": "created_at ASC, id ASC",
    "created-desc": "created_at DESC, id DESC",
    "priority": "priority DESC, created_at ASC",
    "priority-desc": "priority ASC, created_at ASC",
    "status": "status ASC, created_at ASC",
    "assignee": "assignee ASC, created_at ASC",
    "title": "title ASC, id ASC",
    "updated": "started_at DESC NULLS LAST, created_at DESC",
}


def new_task_id() -> str:
    return "t_" + secrets.token_hex(4)


def canonical_assignee(assignee: str | None) -> str | None:
    """A profile name as stored (lower case); ``None`` or blank is unassigned."""
    if assignee is None or not str(assignee).strip():
        return None
    return profiles.normalize(assignee)


def append_event(
    conn: sqlite3.Connection,
    task_id: str,
    kind: str,
    payload: dict[str, Any] | None = None,
    *,
    run_id: int | None = None,
) -> None:
    """One ``task_events`` row (inside the caller's transaction, if any)."""
    conn.execute(
        "INSERT INTO task_events (task_id, run_id, kind, payload, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (
            task_id,
            run_id,
            kind,
            json.dumps(payload, ensure_ascii=False) if payload else None,
            int(time.time()),
        ),
    )


def task_fields(conn: sqlite3.Connection, task_id: str, *columns: str) -> Any:
    """The named columns of one task's row (a ``sqlite3.Row``); ``None`` for an unknown
    task. Typed as ``fetchone`` is, since most callers know the task is there."""
    return conn.execute(
        f"SELECT {', '.join(columns)} FROM tasks WHERE id = ?", (task_id,)
    ).fetchone()


def waits_for_parent(conn: sqlite3.Connection, task_id: str) -> bool:
    """Whether a parent of the task is neither done nor archived."""
    unfinished = conn.execute(
        "SELECT 1 FROM task_links l JOIN tasks p ON p.id = l.parent_id "
        "WHERE l.child_id = ? AND p.status NOT IN ('done', 'archived') LIMIT 1",
        (task_id,),
    ).fetchone()
    return unfinished is not None


def missing_tasks(conn: sqlite3.Connection, ids: Iterable[str]) -> list[str]:
    wanted = list(ids)
    if not wanted:
        return []
    marks = ",".join("?" * len(wanted))
    rows = conn.execute(f"SELECT id FROM tasks WHERE id IN ({marks})", wanted).fetchall()
    present = {r["id"] for r in rows}
    return [i for i in wanted if i not in present]


def _clean_skills(
    skills: Iterable[str] | None, toolset_names: Collection[str] = ()
) -> list[str] | None:
    """The skill names, blank and repeated ones dropped; ``ValueError`` for a name holding
    a comma, or naming a toolset (``toolset_names``, lower case) rather than a skill."""
    if skills is None:
        return None
    cleaned: list[str] = []
    toolsets: list[str] = []
    for raw in skills:
        name = str(raw or "").strip()
        if "," in name:
            raise ValueError(
                f"skill name cannot contain comma: {name!r} "
                "(pass a list of separate names instead of a comma-joined string)"
            )
        if name.casefold() in toolset_names:
            toolsets.append(name)
        elif name and name not in cleaned:
            cleaned.append(name)
    if toolsets:  # all of them at once: an agent that confuses the two passes several
        names = ", ".join(repr(n) for n in toolsets)
        noun = "is a toolset name" if len(toolsets) == 1 else "are toolset names"
        raise ValueError(
            f"{names} {noun}, not skill name(s): give the assignee profile its tools in "
            "its config (`agent.toolsets`) and name only skills here."
        )
    return cleaned


def _initial_status(
    conn: sqlite3.Connection, parents: tuple[str, ...], *, triage: bool, initial_status: str
) -> str:
    missing = missing_tasks(conn, parents)
    if missing:
        raise ValueError(f"unknown parent task(s): {', '.join(missing)}")
    if initial_status == "blocked":
        return "blocked"
    if triage:
        return "triage"
    if parents:
        marks = ",".join("?" * len(parents))
        rows = conn.execute(f"SELECT status FROM tasks WHERE id IN ({marks})", parents)
        if any(r["status"] != "done" for r in rows):
            return "todo"
    return "ready"


# 0.19's signature kept whole: hermes-webui and 0.19's callers pass these keywords.
def create_task(
    conn: sqlite3.Connection,
    *,
    title: str,
    body: str | None = None,
    assignee: str | None = None,
    created_by: str | None = None,
    workspace_kind: str = "scratch",
    workspace_path: str | None = None,
    branch_name: str | None = None,
    tenant: str | None = None,
    priority: int = 0,
    parents: Iterable[str] = (),
    triage: bool = False,
    idempotency_key: str | None = None,
    max_runtime_seconds: int | None = None,
    skills: Iterable[str] | None = None,
    max_retries: int | None = None,
    goal_mode: bool = False,
    goal_max_turns: int | None = None,
    initial_status: str = "running",
    session_id: str | None = None,
    board: str | None = None,
    project_id: str | None = None,
    toolset_names: Collection[str] = (),
) -> str:
    """A new task's id: ``ready`` with no unfinished parent, ``todo`` with one, ``triage``
    when asked. An ``idempotency_key`` already on a live task returns that task's id.
    ``project_id`` is dropped: hermes keeps no projects (0.19 drops one it cannot find).
    A skill named like one of ``toolset_names`` is refused (``ValueError``)."""
    assignee = canonical_assignee(assignee)
    if not title or not title.strip():
        raise ValueError("title is required")
    if initial_status not in VALID_INITIAL_STATUSES:
        raise ValueError(f"initial_status must be one of {sorted(VALID_INITIAL_STATUSES)}")
    if workspace_kind not in VALID_WORKSPACE_KINDS:
        raise ValueError(
            f"workspace_kind must be one of {sorted(VALID_WORKSPACE_KINDS)}, got {workspace_kind!r}"
        )
    branch_name = (str(branch_name).strip() or None) if branch_name is not None else None
    if branch_name and workspace_kind != "worktree":
        raise ValueError("branch_name is only valid for worktree workspaces")
    parent_ids_ = tuple(p for p in parents if p)
    skills_list = _clean_skills(skills, toolset_names)
    if idempotency_key:
        row = conn.execute(
            "SELECT id FROM tasks WHERE idempotency_key = ? AND status != 'archived' "
            "ORDER BY created_at DESC LIMIT 1",
            (idempotency_key,),
        ).fetchone()
        if row:
            return str(row["id"])
    if workspace_path is None and workspace_kind in {"dir", "worktree"}:
        # Only a kept workspace may default to the board's project folder: a scratch one
        # is deleted when the task is done.
        workspace_path = read_board_metadata(board or get_current_board()).get("default_workdir")
    task_id = new_task_id()
    with write_txn(conn):
        status = _initial_status(conn, parent_ids_, triage=triage, initial_status=initial_status)
        conn.execute(
            "INSERT INTO tasks (id, title, body, assignee, status, priority, created_by, "
            "created_at, workspace_kind, workspace_path, branch_name, project_id, tenant, "
            "idempotency_key, max_runtime_seconds, skills, max_retries, goal_mode, "
            "goal_max_turns, session_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                task_id,
                title.strip(),
                body,
                assignee,
                status,
                int(priority or 0),
                created_by,
                int(time.time()),
                workspace_kind,
                workspace_path,
                branch_name,
                None,
                tenant,
                idempotency_key,
                int(max_runtime_seconds) if max_runtime_seconds is not None else None,
                json.dumps(skills_list) if skills_list is not None else None,
                int(max_retries) if max_retries is not None else None,
                1 if goal_mode else 0,
                int(goal_max_turns) if goal_max_turns is not None else None,
                session_id,
            ),
        )
        for parent in parent_ids_:
            conn.execute(
                "INSERT OR IGNORE INTO task_links (parent_id, child_id) VALUES (?, ?)",
                (parent, task_id),
            )
        append_event(
            conn,
            task_id,
            "created",
            {
                "assignee": assignee,
                "status": status,
                "parents": list(parent_ids_),
                "tenant": tenant,
                "branch_name": branch_name,
                "skills": skills_list or None,
                "goal_mode": bool(goal_mode) or None,
            },
        )
    return task_id


def get_task(conn: sqlite3.Connection, task_id: str) -> Task | None:
    row = conn.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
    return Task.from_row(row) if row else None


# 0.19's signature kept whole: hermes-webui filters the board by these keywords.
def list_tasks(
    conn: sqlite3.Connection,
    *,
    assignee: str | None = None,
    status: str | None = None,
    tenant: str | None = None,
    session_id: str | None = None,
    include_archived: bool = False,
    limit: int | None = None,
    order_by: str | None = None,
    workflow_template_id: str | None = None,
    current_step_key: str | None = None,
) -> list[Task]:
    """Tasks matching every filter given; archived ones only when asked (or by status)."""
    if status is not None and status not in VALID_STATUSES:
        raise ValueError(f"status must be one of {sorted(VALID_STATUSES)}")
    filters: list[tuple[str, Any]] = [
        ("assignee", canonical_assignee(assignee) if assignee is not None else None),
        ("status", status),
        ("tenant", tenant),
        ("session_id", session_id),
        ("workflow_template_id", workflow_template_id),
        ("current_step_key", current_step_key),
    ]
    query = "SELECT * FROM tasks WHERE 1=1"
    params: list[Any] = []
    for column, value in filters:
        if value is not None:
            query += f" AND {column} = ?"
            params.append(value)
    if not include_archived and status != "archived":
        query += " AND status != 'archived'"
    order = (order_by or "").strip().lower()
    if order_by is not None and order not in VALID_SORT_ORDERS:
        raise ValueError(f"order_by must be one of {sorted(VALID_SORT_ORDERS)}")
    query += " ORDER BY " + VALID_SORT_ORDERS.get(order, "priority DESC, created_at ASC")
    if limit:
        query += f" LIMIT {int(limit)}"
    return [Task.from_row(r) for r in conn.execute(query, params)]


def assign_task(conn: sqlite3.Connection, task_id: str, profile: str | None) -> bool:
    """Assign (or unassign with ``None``); ``False`` for an unknown task, ``RuntimeError``
    while it runs under a claim. A new assignee starts with a clean failure count."""
    profile = canonical_assignee(profile)
    with write_txn(conn):
        row = task_fields(conn, task_id, "status", "claim_lock", "assignee")
        if not row:
            return False
        if row["claim_lock"] is not None and row["status"] == "running":
            raise RuntimeError(
                f"cannot reassign {task_id}: currently running (claimed). "
                "Wait for completion or reclaim the stale lock first."
            )
        reset = ", consecutive_failures = 0, last_failure_error = NULL"
        conn.execute(
            "UPDATE tasks SET assignee = ?"
            + (reset if row["assignee"] != profile else "")
            + " WHERE id = ?",
            (profile, task_id),
        )
        append_event(conn, task_id, "assigned", {"assignee": profile})
    return True


def _would_cycle(conn: sqlite3.Connection, parent_id: str, child_id: str) -> bool:
    """Whether ``parent_id`` already descends from ``child_id``."""
    seen: set[str] = set()
    stack = [child_id]
    while stack:
        node = stack.pop()
        if node == parent_id:
            return True
        if node not in seen:
            seen.add(node)
            stack += child_ids(conn, node)
    return False


def link_tasks(conn: sqlite3.Connection, parent_id: str, child_id: str) -> None:
    """``child_id`` waits for ``parent_id`` (a ready child goes back to ``todo``)."""
    if parent_id == child_id:
        raise ValueError("a task cannot depend on itself")
    with write_txn(conn):
        missing = missing_tasks(conn, [parent_id, child_id])
        if missing:
            raise ValueError(f"unknown task(s): {', '.join(missing)}")
        if _would_cycle(conn, parent_id, child_id):
            raise ValueError(f"linking {parent_id} -> {child_id} would create a cycle")
        conn.execute(
            "INSERT OR IGNORE INTO task_links (parent_id, child_id) VALUES (?, ?)",
            (parent_id, child_id),
        )
        parent = task_fields(conn, parent_id, "status")
        if parent["status"] != "done":
            conn.execute(
                "UPDATE tasks SET status = 'todo' WHERE id = ? AND status = 'ready'",
                (child_id,),
            )
        append_event(conn, child_id, "linked", {"parent": parent_id, "child": child_id})


def unlink_tasks(conn: sqlite3.Connection, parent_id: str, child_id: str) -> bool:
    with write_txn(conn):
        removed = conn.execute(
            "DELETE FROM task_links WHERE parent_id = ? AND child_id = ?",
            (parent_id, child_id),
        ).rowcount
        if removed:
            append_event(conn, child_id, "unlinked", {"parent": parent_id, "child": child_id})
    if removed:
        recompute_ready(conn)
    return bool(removed)


def parent_ids(conn: sqlite3.Connection, task_id: str) -> list[str]:
    rows = conn.execute(
        "SELECT parent_id FROM task_links WHERE child_id = ? ORDER BY parent_id", (task_id,)
    )
    return [r["parent_id"] for r in rows]


def child_ids(conn: sqlite3.Connection, task_id: str) -> list[str]:
    rows = conn.execute(
        "SELECT child_id FROM task_links WHERE parent_id = ? ORDER BY child_id", (task_id,)
    )
    return [r["child_id"] for r in rows]


def parent_results(conn: sqlite3.Connection, task_id: str) -> list[tuple[str, str | None]]:
    """``(parent id, result)`` of each done parent of the task, first completed first
    (within a second, first created first)."""
    rows = conn.execute(
        "SELECT p.id, p.result FROM tasks p JOIN task_links l ON l.parent_id = p.id "
        "WHERE l.child_id = ? AND p.status = 'done' ORDER BY p.completed_at ASC, p.rowid ASC",
        (task_id,),
    )
    return [(r["id"], r["result"]) for r in rows]


def add_comment(conn: sqlite3.Connection, task_id: str, author: str, body: str) -> int:
    """The new comment's id; ``ValueError`` for a blank body or author, or no such task."""
    if not body or not body.strip():
        raise ValueError("comment body is required")
    if not author or not author.strip():
        raise ValueError("comment author is required")
    with write_txn(conn):
        if missing_tasks(conn, [task_id]):
            raise ValueError(f"unknown task {task_id}")
        cur = conn.execute(
            "INSERT INTO task_comments (task_id, author, body, created_at) VALUES (?, ?, ?, ?)",
            (task_id, author.strip(), body.strip(), int(time.time())),
        )
        append_event(conn, task_id, "commented", {"author": author, "len": len(body)})
    return int(cur.lastrowid or 0)


def list_comments(conn: sqlite3.Connection, task_id: str) -> list[Comment]:
    rows = conn.execute(
        "SELECT id, task_id, author, body, created_at FROM task_comments "
        "WHERE task_id = ? ORDER BY created_at ASC, id ASC",
        (task_id,),
    )
    return [Comment(**dict(r)) for r in rows]


def event_from_row(row: sqlite3.Row) -> Event:
    """A ``task_events`` row as an ``Event`` (a payload that is not JSON reads as none)."""
    try:
        payload = json.loads(row["payload"]) if row["payload"] else None
    except ValueError:
        payload = None
    return Event(row["id"], row["task_id"], row["kind"], payload, row["created_at"], row["run_id"])


def list_events(conn: sqlite3.Connection, task_id: str) -> list[Event]:
    rows = conn.execute(
        "SELECT * FROM task_events WHERE task_id = ? ORDER BY created_at ASC, id ASC",
        (task_id,),
    )
    return [event_from_row(r) for r in rows]


def list_runs(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    include_active: bool = True,
    state_type: str | None = None,
    state_name: str | None = None,
) -> list[Run]:
    """A task's attempts in the order they started."""
    if (state_type is None) != (state_name is None):
        raise ValueError("state_type and state_name must both be set or both omitted")
    if state_type is not None and state_type not in ("status", "outcome"):
        raise ValueError("state_type must be 'status' or 'outcome'")
    query = "SELECT * FROM task_runs WHERE task_id = ?"
    params: list[Any] = [task_id]
    if not include_active:
        query += " AND ended_at IS NOT NULL"
    if state_type is not None:
        query += f" AND {state_type} = ?"
        params.append(state_name)
    query += " ORDER BY started_at ASC, id ASC"
    return [Run.from_row(r) for r in conn.execute(query, params)]


# 0.19's ``_end_run`` kept whole: hermes-webui's bridge calls it by these keywords.
def close_run(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    outcome: str,
    summary: str | None = None,
    error: str | None = None,
    metadata: dict[str, Any] | None = None,
    status: str | None = None,
) -> int | None:
    """Close the task's run in flight (inside the caller's transaction); its id, or
    ``None`` when no run was open."""
    row = task_fields(conn, task_id, "current_run_id")
    if not row or not row["current_run_id"]:
        return None
    run_id = int(row["current_run_id"])
    conn.execute(
        "UPDATE task_runs SET status = ?, outcome = ?, summary = ?, error = ?, metadata = ?, "
        "ended_at = ?, claim_lock = NULL, claim_expires = NULL, worker_pid = NULL "
        "WHERE id = ? AND ended_at IS NULL",
        (
            status or outcome,
            outcome,
            summary,
            error,
            json.dumps(metadata, ensure_ascii=False) if metadata else None,
            int(time.time()),
            run_id,
        ),
    )
    conn.execute("UPDATE tasks SET current_run_id = NULL WHERE id = ?", (task_id,))
    return run_id


def get_run(conn: sqlite3.Connection, run_id: int) -> Run | None:
    row = conn.execute("SELECT * FROM task_runs WHERE id = ?", (int(run_id),)).fetchone()
    return Run.from_row(row) if row else None


def latest_run(conn: sqlite3.Connection, task_id: str) -> Run | None:
    row = conn.execute(
        "SELECT * FROM task_runs WHERE task_id = ? ORDER BY started_at DESC, id DESC LIMIT 1",
        (task_id,),
    ).fetchone()
    return Run.from_row(row) if row else None


def latest_summaries(conn: sqlite3.Connection, task_ids: Iterable[str]) -> dict[str, str]:
    """Each task's newest non-empty run summary, for the tasks that have one."""
    ids = list(task_ids)
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        "SELECT task_id, summary FROM (SELECT task_id, summary, ROW_NUMBER() OVER ("
        "PARTITION BY task_id ORDER BY COALESCE(ended_at, started_at) DESC, id DESC) AS n "
        f"FROM task_runs WHERE task_id IN ({marks}) AND summary IS NOT NULL AND summary != '') "
        "WHERE n = 1",
        ids,
    )
    return {r["task_id"]: r["summary"] for r in rows}


def latest_summary(conn: sqlite3.Connection, task_id: str) -> str | None:
    return latest_summaries(conn, [task_id]).get(task_id)


def _delete_rows(conn: sqlite3.Connection, task_id: str) -> bool:
    conn.execute("DELETE FROM task_links WHERE parent_id = ? OR child_id = ?", (task_id, task_id))
    for table in ("task_comments", "task_events", "task_runs", "kanban_notify_subs"):
        conn.execute(f"DELETE FROM {table} WHERE task_id = ?", (task_id,))
    return conn.execute("DELETE FROM tasks WHERE id = ?", (task_id,)).rowcount == 1


def delete_task(conn: sqlite3.Connection, task_id: str) -> bool:
    """Delete a task and everything recorded about it; ``False`` for an unknown task."""
    with write_txn(conn):
        deleted = not missing_tasks(conn, [task_id]) and _delete_rows(conn, task_id)
    if deleted:
        recompute_ready(conn)
    return deleted


def delete_archived_task(conn: sqlite3.Connection, task_id: str) -> bool:
    """``delete_task`` for an archived task only (anything else must be archived first)."""
    with write_txn(conn):
        row = task_fields(conn, task_id, "status")
        return bool(row) and row["status"] == "archived" and _delete_rows(conn, task_id)


# 0.19's ``_synthesize_ended_run``, kept whole: the facade exports it under that name,
# with ``close_run``'s keywords less ``status`` (a zero-length run has no other state).
def record_ended_run(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    outcome: str,
    summary: str | None = None,
    error: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> int:
    """A closed, zero-length run, so what a never-claimed task ended with is kept."""
    now = int(time.time())
    task = task_fields(conn, task_id, "assignee", "current_step_key")
    cur = conn.execute(
        "INSERT INTO task_runs (task_id, profile, step_key, status, outcome, summary, error, "
        "metadata, started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            task_id,
            task["assignee"] if task else None,
            task["current_step_key"] if task else None,
            outcome,
            outcome,
            summary,
            error,
            json.dumps(metadata, ensure_ascii=False) if metadata else None,
            now,
            now,
        ),
    )
    return int(cur.lastrowid or 0)


def _blocked_by_hand(conn: sqlite3.Connection, task_id: str) -> bool:
    """Whether the task's last block/unblock event is a block someone asked for (such a
    task waits for ``unblock_task``, not for its parents)."""
    row = conn.execute(
        "SELECT kind FROM task_events WHERE task_id = ? AND kind IN ('blocked', 'unblocked') "
        "ORDER BY id DESC LIMIT 1",
        (task_id,),
    ).fetchone()
    return bool(row) and row["kind"] == "blocked"


def recompute_ready(conn: sqlite3.Connection, failure_limit: int | None = None) -> int:
    """Promote to ``ready`` every ``todo`` task (and ``blocked`` one not blocked by hand
    nor out of retries) whose parents are all done or archived; how many moved."""
    limit = DEFAULT_FAILURE_LIMIT if failure_limit is None else failure_limit
    promoted = 0
    with write_txn(conn):
        waiting = conn.execute(
            "SELECT id, status, consecutive_failures, max_retries FROM tasks "
            "WHERE status IN ('todo', 'blocked')"
        ).fetchall()
        for row in waiting:
            if row["status"] == "blocked":
                own_limit = row["max_retries"] if row["max_retries"] is not None else limit
                if _blocked_by_hand(conn, row["id"]) or (
                    int(row["consecutive_failures"] or 0) >= int(own_limit)
                ):
                    continue
            if waits_for_parent(conn, row["id"]):
                continue
            conn.execute(
                "UPDATE tasks SET status = 'ready' WHERE id = ? AND status = ?",
                (row["id"], row["status"]),
            )
            append_event(conn, row["id"], "promoted", None)
            promoted += 1
    return promoted
