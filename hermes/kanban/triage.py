"""Taking a task out of ``triage`` (0.19's): a person or an orchestrating agent either
specifies it (a title, body or assignee of its own, then ``todo``) or decomposes it into
child tasks that it waits for. Each is one write transaction, so a bad child or a task that
left ``triage`` meanwhile changes nothing; afterwards the tasks that wait for nothing go
to ``ready`` at once, as the dispatcher's next tick would send them."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from hermes.kanban.db import write_txn
from hermes.kanban.tasks import append_event, canonical_assignee, new_task_id, recompute_ready


def _comment(conn: sqlite3.Connection, task_id: str, author: str | None, body: str) -> None:
    """An audit comment by ``author`` (none without one), inside the caller's transaction."""
    if author and author.strip():
        conn.execute(
            "INSERT INTO task_comments (task_id, author, body, created_at) VALUES (?, ?, ?, ?)",
            (task_id, author.strip(), body, int(time.time())),
        )


def specify_triage_task(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    title: str | None = None,
    body: str | None = None,
    assignee: str | None = None,
    author: str | None = None,
) -> bool:
    """Give a triage task the fields passed and move it to ``todo`` (then ``ready`` if it
    waits for nothing), with a ``specified`` event and, when ``author`` is given and a
    field changed, a comment saying which. ``False`` when the task is not in triage;
    ``ValueError`` for a blank title."""
    if title is not None and not title.strip():
        raise ValueError("title cannot be blank")
    assignee = canonical_assignee(assignee)
    with write_txn(conn):
        row = conn.execute(
            "SELECT title, body, assignee FROM tasks WHERE id = ? AND status = 'triage'",
            (task_id,),
        ).fetchone()
        if row is None:
            return False
        wanted = {
            "title": title.strip() if title is not None else None,
            "body": body,
            "assignee": assignee,
        }
        changed = {
            field: value
            for field, value in wanted.items()
            if value is not None and value != (row[field] or ("" if field != "assignee" else None))
        }
        sets = "".join(f", {field} = ?" for field in changed)
        conn.execute(
            f"UPDATE tasks SET status = 'todo'{sets} WHERE id = ? AND status = 'triage'",
            (*changed.values(), task_id),
        )
        if changed:
            _comment(
                conn,
                task_id,
                author,
                f"Specified — updated {', '.join(changed)} and promoted to todo.",
            )
        append_event(
            conn, task_id, "specified", {"changed_fields": list(changed)} if changed else None
        )
    recompute_ready(conn)
    return True


def _check_children(children: list[Any]) -> None:
    """``ValueError`` for a child that is no dict, has no title, or names a parent that is
    not another child's index, and for parents that form a cycle."""
    count = len(children)
    for index, child in enumerate(children):
        if not isinstance(child, dict):
            raise ValueError(f"child[{index}] is not a dict")
        title = child.get("title")
        if not isinstance(title, str) or not title.strip():
            raise ValueError(f"child[{index}].title is required")
        parents = child.get("parents") or []
        if not isinstance(parents, list):
            raise ValueError(f"child[{index}].parents must be a list")
        for parent in parents:
            if isinstance(parent, bool) or not isinstance(parent, int) or not 0 <= parent < count:
                raise ValueError(
                    f"child[{index}].parents[{parent}] is not a valid index into children"
                )
            if parent == index:
                raise ValueError(f"child[{index}] cannot list itself as a parent")
    # Kahn's sort: a child left unsorted sits on a cycle and would wait forever.
    waiting_on = [len(set(child.get("parents") or [])) for child in children]
    free = [i for i, n in enumerate(waiting_on) if n == 0]
    sorted_count = 0
    while free:
        done = free.pop()
        sorted_count += 1
        for index, child in enumerate(children):
            if done in set(child.get("parents") or []):
                waiting_on[index] -= 1
                if waiting_on[index] == 0:
                    free.append(index)
    if sorted_count != count:
        raise ValueError("cyclic dependency detected in decomposed children list")


def _child_workspace(child: dict[str, Any], root: sqlite3.Row) -> tuple[str, str | None]:
    """A child's workspace: its own, else its root's. A scratch folder is never shared:
    each task's is its own, made and removed with it (and hermes refuses a task another
    task's scratch folder), so a scratch child gets a folder of its own."""
    kind = child.get("workspace_kind") or root["workspace_kind"] or "scratch"
    if child.get("workspace_path"):
        return kind, str(child["workspace_path"])
    if kind == (root["workspace_kind"] or "scratch") and kind != "scratch":
        return kind, root["workspace_path"]
    return kind, None


def decompose_triage_task(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    root_assignee: str | None,
    children: list[dict[str, Any]],
    author: str | None = None,
    auto_promote: bool = True,
) -> list[str] | None:
    """Split a triage task into ``children`` (each ``{"title", "body", "assignee",
    "parents": [indexes of other children], "workspace_kind", "workspace_path"}``), which
    inherit its tenant and workspace; the root moves to ``todo``, waiting for every child,
    and gets ``root_assignee`` when one is given. The children's ids in order, or ``None``
    when there are none or the root is not in triage; ``ValueError`` for a bad child.
    With ``auto_promote`` the children that wait for nothing go to ``ready`` at once."""
    if not children:
        return None
    _check_children(children)
    root_assignee = canonical_assignee(root_assignee)
    created_by = author or "decomposer"
    now = int(time.time())
    ids = [new_task_id() for _ in children]
    with write_txn(conn):
        root = conn.execute(
            "SELECT status, tenant, workspace_kind, workspace_path FROM tasks WHERE id = ?",
            (task_id,),
        ).fetchone()
        if root is None or root["status"] != "triage":
            return None
        for child_id, child in zip(ids, children, strict=True):
            kind, path = _child_workspace(child, root)
            body = child.get("body")
            conn.execute(
                "INSERT INTO tasks (id, title, body, assignee, status, workspace_kind, "
                "workspace_path, tenant, created_at, created_by) "
                "VALUES (?, ?, ?, ?, 'todo', ?, ?, ?, ?, ?)",
                (
                    child_id,
                    child["title"].strip(),
                    body if isinstance(body, str) else None,
                    canonical_assignee(child.get("assignee")),
                    kind,
                    path,
                    root["tenant"],
                    now,
                    created_by,
                ),
            )
            append_event(
                conn, child_id, "created", {"by": created_by, "from_decompose_of": task_id}
            )
        for child_id, child in zip(ids, children, strict=True):
            for parent in child.get("parents") or []:
                conn.execute(
                    "INSERT OR IGNORE INTO task_links (parent_id, child_id) VALUES (?, ?)",
                    (ids[parent], child_id),
                )
                append_event(conn, child_id, "linked", {"parent": ids[parent], "child": child_id})
        for child_id in ids:  # the root wakes when every child is done
            conn.execute(
                "INSERT OR IGNORE INTO task_links (parent_id, child_id) VALUES (?, ?)",
                (child_id, task_id),
            )
        conn.execute(
            "UPDATE tasks SET status = 'todo'"
            + (", assignee = ?" if root_assignee is not None else "")
            + " WHERE id = ?",
            (*([root_assignee] if root_assignee is not None else []), task_id),
        )
        _comment(
            conn,
            task_id,
            author,
            f"Decomposed into {', '.join(ids)}. Root will wake when all children complete.",
        )
        append_event(
            conn, task_id, "decomposed", {"child_ids": ids, "root_assignee": root_assignee}
        )
    if auto_promote:
        recompute_ready(conn)
    return ids
