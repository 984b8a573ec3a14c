"""hermes-webui's Kanban panel (its api/kanban_bridge.py), run by any python against the
``hermes_cli.kanban_db`` it finds: hermes's, or Hermes Agent 0.19's own. Each step calls
``kb`` and runs the SQL exactly as the bridge does; what the panel would show is printed as
JSON, with task ids, times and host names replaced so two runs can be compared.

Usage: python webui_kanban_bridge.py   (HERMES_HOME names the home to use)
"""

import json
import os
import time
from dataclasses import asdict, is_dataclass

from hermes_cli import kanban_db as kb

BOARD_COLUMNS = ["triage", "todo", "ready", "running", "blocked", "done"]
HOME = os.environ["HERMES_HOME"]
LABELS = {}


def label(task_id):
    return LABELS.setdefault(task_id, f"T{len(LABELS) + 1}") if task_id else task_id


# --- the bridge's helpers, as it writes them ------------------------------------------


def _normalise_board_or_raise(raw):
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return None
    try:
        normed = kb._normalize_board_slug(raw)
    except (ValueError, AttributeError) as exc:
        raise ValueError(f"invalid board slug: {raw!r}") from exc
    if not normed:
        return None
    if normed != getattr(kb, "DEFAULT_BOARD", "default") and not kb.board_exists(normed):
        raise LookupError(f"board {normed!r} does not exist")
    return normed


def _conn(board=None):
    kb.init_db(board=board)
    return kb.connect_closing(board=board)


def _obj_dict(value):
    if value is None:
        return None
    if is_dataclass(value):
        return asdict(value)
    return dict(value)


def _task_dict(task):
    data = _obj_dict(task)
    data["age"] = kb.task_age(task)
    return data


def _latest_event_id(conn):
    row = conn.execute("SELECT COALESCE(MAX(id), 0) AS latest FROM task_events").fetchone()
    return int(row["latest"] or 0)


def _task_link_counts(conn, tasks):
    counts = {task.id: {"parents": 0, "children": 0} for task in tasks}
    for row in conn.execute("SELECT parent_id, child_id FROM task_links").fetchall():
        counts.setdefault(row["parent_id"], {"parents": 0, "children": 0})["children"] += 1
        counts.setdefault(row["child_id"], {"parents": 0, "children": 0})["parents"] += 1
    return counts


def _comment_counts(conn):
    rows = conn.execute(
        "SELECT task_id, COUNT(*) AS n FROM task_comments GROUP BY task_id"
    ).fetchall()
    return {row["task_id"]: int(row["n"] or 0) for row in rows}


def board_payload(board=None, since=None, include_archived=False):
    with _conn(board=board) as conn:
        latest = _latest_event_id(conn)
        if since is not None and since >= latest:
            return {"changed": False, "latest_event_id": latest}
        tasks = kb.list_tasks(conn, tenant=None, assignee=None, include_archived=include_archived)
        links = _task_link_counts(conn, tasks)
        comments = _comment_counts(conn)
        names = BOARD_COLUMNS + (["archived"] if include_archived else [])
        return {
            "changed": True,
            "latest_event_id": latest,
            "columns": {
                name: [
                    (label(t.id), t.title, links[t.id], comments.get(t.id, 0))
                    for t in tasks
                    if t.status == name
                ]
                for name in names
            },
            "assignees": sorted({t.assignee for t in tasks if t.assignee}),
        }


def _set_status_direct(conn, task_id, new_status):
    with kb.write_txn(conn):
        prev = conn.execute(
            "SELECT status, current_run_id FROM tasks WHERE id = ?", (task_id,)
        ).fetchone()
        if prev is None:
            return False
        was_running = prev["status"] == "running"
        cur = conn.execute(
            "UPDATE tasks SET status = ?, "
            "  claim_lock = CASE WHEN ? = 'running' THEN claim_lock ELSE NULL END, "
            "  claim_expires = CASE WHEN ? = 'running' THEN claim_expires ELSE NULL END, "
            "  worker_pid = CASE WHEN ? = 'running' THEN worker_pid ELSE NULL END "
            "WHERE id = ?",
            (new_status, new_status, new_status, new_status, task_id),
        )
        if cur.rowcount != 1:
            return False
        run_id = None
        if was_running and new_status != "running" and prev["current_run_id"]:
            run_id = kb._end_run(
                conn, task_id, outcome="reclaimed", status="reclaimed",
                summary=f"status changed to {new_status} (webui/direct)",
            )  # fmt: skip
        conn.execute(
            "INSERT INTO task_events (task_id, run_id, kind, payload, created_at) "
            "VALUES (?, ?, 'status', ?, ?)",
            (task_id, run_id, json.dumps({"status": new_status, "source": "webui"}),
             int(time.time())),
        )  # fmt: skip
    if new_status in ("done", "ready"):
        kb.recompute_ready(conn)
    return True


def patch_task(conn, task_id, body):
    task = kb.get_task(conn, task_id)
    if not task:
        raise LookupError("task not found")
    updates = {k: body[k] for k in ("title", "body", "tenant", "priority") if k in body}
    if updates:
        assignments = ", ".join(f"{field} = ?" for field in updates)
        conn.execute(f"UPDATE tasks SET {assignments} WHERE id = ?", [*updates.values(), task_id])
        kb._append_event(conn, task_id, "updated", {"fields": list(updates), "source": "webui"})
    if "assignee" in body and not kb.assign_task(conn, task_id, body.get("assignee") or None):
        raise LookupError("task not found")
    status = body.get("status")
    if not status:
        return
    if status == "done":
        ok = kb.complete_task(conn, task_id, result=body.get("result"), summary=body.get("summary"))
    elif status == "blocked":
        ok = kb.block_task(conn, task_id, reason=body.get("block_reason") or body.get("reason"))
    elif status == "archived":
        ok = kb.archive_task(conn, task_id)
    elif status == "ready" and kb.get_task(conn, task_id).status == "blocked":
        ok = kb.unblock_task(conn, task_id)
    else:
        ok = _set_status_direct(conn, task_id, status)
    if not ok:
        raise LookupError("task not found")


def create_task_payload(body, board=None):
    with _conn(board=board) as conn:
        task_id = kb.create_task(
            conn,
            title=body["title"],
            body=body.get("body") or None,
            assignee=body.get("assignee") or None,
            created_by=body.get("created_by") or "webui",
            tenant=body.get("tenant") or None,
            priority=int(body.get("priority") or 0),
            parents=body.get("parents") or (),
            triage=bool(body.get("triage") or False),
            workspace_kind=body.get("workspace_kind") or "scratch",
            workspace_path=body.get("workspace_path") or None,
            idempotency_key=body.get("idempotency_key") or None,
            max_runtime_seconds=body.get("max_runtime_seconds") or None,
            skills=body.get("skills") or None,
        )
        if body.get("status"):
            patch_task(conn, task_id, {"status": body["status"]})
        return _task_dict(kb.get_task(conn, task_id))


def task_detail(task_id, board=None):
    with _conn(board=board) as conn:
        task = kb.get_task(conn, task_id)
        if not task:
            return None
        return {
            "task": _task_dict(task),
            "comments": [_obj_dict(c) for c in kb.list_comments(conn, task_id)],
            "events": [_obj_dict(e) for e in kb.list_events(conn, task_id)],
            "links": {
                "parents": kb.parent_ids(conn, task_id),
                "children": kb.child_ids(conn, task_id),
            },
            "runs": [_obj_dict(r) for r in kb.list_runs(conn, task_id)],
        }


def events_payload(since=0, board=None):
    with _conn(board=board) as conn:
        rows = conn.execute(
            "SELECT id, task_id, run_id, kind, payload, created_at "
            "FROM task_events WHERE id > ? ORDER BY id ASC LIMIT ?",
            (since, 200),
        ).fetchall()
        return [(label(r["task_id"]), r["kind"]) for r in rows]


def task_log_payload(task_id):
    content = kb.read_worker_log(task_id, tail_bytes=None)
    path = kb.worker_log_path(task_id)
    relative = os.path.relpath(path, HOME).replace(task_id, label(task_id))
    return {"path": relative, "exists": content is not None}


def list_boards_payload(include_archived=False):
    boards = kb.list_boards(include_archived=include_archived)
    current = kb.get_current_board()
    if current not in {b.get("slug") for b in boards}:
        kb.clear_current_board()
        current = "default"
    out = []
    for meta in boards:
        slug = meta["slug"]
        counts = {}
        if kb.board_exists(slug):
            conn = kb.connect(board=slug)
            try:
                rows = conn.execute(
                    "SELECT status, COUNT(*) AS n FROM tasks "
                    "WHERE status != 'archived' GROUP BY status"
                ).fetchall()
                counts = {row["status"]: int(row["n"] or 0) for row in rows}
            finally:
                conn.close()
        db_path = os.path.relpath(meta["db_path"], HOME)
        out.append((slug, meta["name"], bool(meta.get("archived")), db_path, counts))
    return {"boards": out, "current": current}


def errors(call):
    try:
        call()
    except (ValueError, LookupError, RuntimeError) as exc:
        return type(exc).__name__
    return None


# --- a session in the panel ------------------------------------------------------------

seen = {}
seen["boards_at_start"] = list_boards_payload()
meta = kb.create_board("Side-Project", name="Side project", description="scratch work")
kb.set_current_board(meta["slug"])
seen["created_board"] = (meta["slug"], meta["name"], meta["description"])
seen["current_after_switch"] = kb.get_current_board()
kb.set_current_board(_normalise_board_or_raise("default"))

first = create_task_payload({"title": "Write the spec", "assignee": "Alice", "priority": 2})
A = first["id"]
label(A)
seen["task_fields"] = sorted(first)
seen["task_a"] = {k: first[k] for k in ("title", "assignee", "status", "priority", "created_by")}
B = create_task_payload({"title": "Build it", "parents": [A], "assignee": "bob"})["id"]
C = create_task_payload({"title": "Ideas", "triage": True})["id"]
D = create_task_payload({"title": "Later", "status": "todo", "tenant": "acme"})["id"]
for t in (B, C, D):
    label(t)
seen["idempotent"] = (
    create_task_payload({"title": "x", "idempotency_key": "k1"})["id"]
    == (create_task_payload({"title": "y", "idempotency_key": "k1"})["id"])
)

with _conn() as conn:
    kb.link_tasks(conn, A, D)
    seen["links_of_d"] = [label(p) for p in kb.parent_ids(conn, D)]
    seen["unlink"] = kb.unlink_tasks(conn, A, D)
    seen["unlink_again"] = kb.unlink_tasks(conn, A, D)
    seen["cycle"] = errors(lambda: kb.link_tasks(conn, B, A))
    seen["self_link"] = errors(lambda: kb.link_tasks(conn, A, A))
    seen["comment_id"] = kb.add_comment(conn, A, "webui", "Looks good") > 0
    seen["empty_comment"] = errors(lambda: kb.add_comment(conn, A, "webui", "  "))
    patch_task(conn, A, {"title": "Write the spec v2", "priority": 5, "assignee": "Bob"})
    seen["claim_a"] = kb.claim_task(conn, A).status
    seen["claim_a_again"] = kb.claim_task(conn, A)
    seen["claim_b_waits"] = kb.claim_task(conn, B)
    seen["reassign_running"] = errors(lambda: kb.assign_task(conn, A, "carol"))
    patch_task(conn, A, {"status": "ready"})  # yanked back to the queue from the UI
    kb.claim_task(conn, A)
    seen["block"] = kb.block_task(conn, A, reason="needs input")
    seen["block_again"] = kb.block_task(conn, A, reason="still")
    seen["recompute_keeps_hand_block"] = kb.recompute_ready(conn)
    seen["unblock"] = kb.unblock_task(conn, A)
    seen["b_before"] = kb.get_task(conn, B).status
    patch_task(conn, A, {"status": "done", "result": "spec written", "summary": "Spec done"})
    seen["b_after"] = kb.get_task(conn, B).status
    seen["complete_again"] = kb.complete_task(conn, A, result="again")
    seen["archive_c"] = kb.archive_task(conn, C)
    seen["archive_c_again"] = kb.archive_task(conn, C)
    seen["unknown_task"] = (kb.get_task(conn, "t_nope"), kb.assign_task(conn, "t_nope", "x"))
    seen["bad_status_filter"] = errors(lambda: kb.list_tasks(conn, status="bogus"))
    seen["stats"] = {k: v for k, v in kb.board_stats(conn).items() if k not in ("now",)}
    seen["stats"]["oldest_ready_age_seconds"] = seen["stats"]["oldest_ready_age_seconds"] is None
    seen["assignees"] = [(a["name"], a["on_disk"], a["counts"]) for a in kb.known_assignees(conn)]

board = board_payload()
seen["board"] = board
seen["board_unchanged"] = board_payload(since=board["latest_event_id"])
seen["board_with_archived"] = board_payload(include_archived=True)["columns"]["archived"]
detail = task_detail(A)
seen["detail_task"] = {
    k: detail["task"][k]
    for k in ("title", "status", "assignee", "priority", "result", "current_run_id", "claim_lock")
}
seen["detail_comments"] = [(c["author"], c["body"]) for c in detail["comments"]]
seen["detail_events"] = [
    (e["kind"], e["payload"] if e["kind"] not in ("claimed",) else None) for e in detail["events"]
]
seen["detail_links"] = {k: [label(t) for t in v] for k, v in detail["links"].items()}
seen["detail_runs"] = [
    (r["profile"], r["status"], r["outcome"], r["summary"], r["ended_at"] is not None)
    for r in detail["runs"]
]
seen["run_fields"] = sorted(detail["runs"][0])
seen["no_detail"] = task_detail("t_missing")
seen["events"] = events_payload()
seen["log"] = task_log_payload(A)

kb.write_board_metadata("side-project", name="Renamed", archived=True)
seen["boards_hidden_archived"] = list_boards_payload()
seen["boards_all"] = list_boards_payload(include_archived=True)
removed = kb.remove_board("side-project", archive=True)
seen["removed"] = (removed["slug"], removed["action"])
seen["gone"] = kb.board_exists("side-project")
seen["boards_after_remove"] = list_boards_payload(include_archived=True)
seen["remove_default"] = errors(lambda: kb.remove_board("default"))
seen["bad_slugs"] = [
    errors(lambda s=s: _normalise_board_or_raise(s)) for s in ("../etc", "a/b", "/abs", "..")
]
seen["missing_board"] = errors(lambda: _normalise_board_or_raise("nope"))

with kb.connect_closing() as conn:
    tables = [r["name"] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    seen["schema"] = {
        table: [c["name"] for c in conn.execute(f"PRAGMA table_info({table})")]
        for table in sorted(tables)
        if table.startswith(("task", "kanban"))
    }
    seen["journal_mode"] = conn.execute("PRAGMA journal_mode").fetchone()[0]

print(json.dumps(seen, indent=1, sort_keys=True, default=str))
