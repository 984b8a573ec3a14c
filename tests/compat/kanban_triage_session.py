"""Taking Kanban tasks out of triage (0.19's ``specify_triage_task`` and
``decompose_triage_task``) and pinning a board for one context (``scoped_current_board``),
played through whichever ``hermes_cli.kanban_db`` this python finds (hermes's, or Hermes
Agent 0.19's own). What a caller would see is printed as JSON, task ids replaced so two
runs can be compared.

Usage: python kanban_triage_session.py   (HERMES_HOME names the home to use)
"""

import json
import threading

from hermes_cli import kanban_db as kb

LABELS = {}


def label(task_id):
    return LABELS.setdefault(task_id, f"T{len(LABELS) + 1}")


def plain(value):
    text = json.dumps(value, default=str)
    for task_id, name in sorted(LABELS.items(), key=lambda item: -len(item[0])):
        text = text.replace(task_id, name)
    return json.loads(text)


def error(call):
    try:
        call()
    except Exception as exc:
        return [type(exc).__name__, str(exc)]
    return None


def task(conn, task_id):
    t = kb.get_task(conn, task_id)
    return [t.title, t.body, t.assignee, t.status, t.tenant, t.workspace_kind,
            t.workspace_path, t.created_by]  # fmt: skip


seen = {"failure_limit": kb.DEFAULT_SPAWN_FAILURE_LIMIT}
kb.init_db()
with kb.connect_closing() as conn:
    rough = kb.create_task(conn, title="rough idea", triage=True)
    parked = kb.create_task(conn, title="parked", triage=True)
    label(rough), label(parked)
    seen["specify_blank_title"] = error(lambda: kb.specify_triage_task(conn, rough, title="  "))
    seen["specify"] = kb.specify_triage_task(conn, rough, title=" Build the importer ",
                                             body="CSV first", assignee="Alice", author="pm")  # fmt: skip
    seen["specified"] = task(conn, rough)
    seen["specify_again"] = kb.specify_triage_task(conn, rough, title="x")
    seen["specify_unknown"] = kb.specify_triage_task(conn, "t_nope")
    seen["specify_unchanged"] = [kb.specify_triage_task(conn, parked, title="parked", author="pm"),
                                 task(conn, parked)]  # fmt: skip
    seen["specify_comments"] = [(c.author, c.body) for c in kb.list_comments(conn, rough)]
    seen["specify_events"] = [(e.kind, e.payload) for e in kb.list_events(conn, rough)]
    seen["unchanged_events"] = [(e.kind, e.payload) for e in kb.list_events(conn, parked)]

    big = kb.create_task(conn, title="Ship v2", triage=True, tenant="acme",
                         workspace_kind="dir", workspace_path="/srv/project")  # fmt: skip
    label(big)
    bad_children = [
        [],
        [{"title": ""}],
        [{"title": "a", "parents": [1]}],
        [{"title": "a", "parents": [0]}],
        [{"title": "a", "parents": "0"}],
        ["not a dict"],
        [{"title": "a", "parents": [1]}, {"title": "b", "parents": [0]}],
    ]
    seen["decompose_bad"] = [
        error(lambda c=c: seen.setdefault("none_for_empty", kb.decompose_triage_task(
            conn, big, root_assignee="lead", children=c)))
        for c in bad_children
    ]  # fmt: skip
    seen["nothing_made"] = [t.title for t in kb.list_tasks(conn)]
    kids = kb.decompose_triage_task(
        conn, big, root_assignee="Lead", author="orchestrator",
        children=[
            {"title": "Design", "assignee": "alice"},
            {"title": "Build", "body": "per the design", "parents": [0]},
            {"title": "Docs", "workspace_kind": "scratch"},
            {"title": "Elsewhere", "workspace_path": "/srv/other"},
        ],
    )  # fmt: skip
    for k in kids:
        label(k)
    seen["children"] = [task(conn, k) for k in kids]
    seen["root"] = task(conn, big)
    seen["links"] = {
        label(k): sorted(label(p) for p in kb.parent_ids(conn, k)) for k in kids + [big]
    }
    seen["root_events"] = [(e.kind, e.payload) for e in kb.list_events(conn, big)]
    seen["child_events"] = [[(e.kind, e.payload) for e in kb.list_events(conn, k)] for k in kids]
    seen["root_comments"] = [(c.author, c.body) for c in kb.list_comments(conn, big)]
    seen["decompose_again"] = kb.decompose_triage_task(conn, big, root_assignee=None,
                                                       children=[{"title": "x"}])  # fmt: skip
    quiet = kb.create_task(conn, title="Quiet", triage=True)
    label(quiet)
    held = kb.decompose_triage_task(conn, quiet, root_assignee=None,
                                    children=[{"title": "held"}], auto_promote=False)  # fmt: skip
    label(held[0])
    seen["held"] = [task(conn, held[0]), task(conn, quiet)]

kb.create_board("side")
seen["current_before"] = kb.get_current_board()
inside = {}
with kb.scoped_current_board("side"):
    inside["here"] = [kb.get_current_board(), kb.kanban_db_path().parent.name]
    thread = threading.Thread(
        target=lambda: inside.setdefault("other_thread", kb.get_current_board())
    )
    thread.start()
    thread.join()
    with kb.scoped_current_board("nope"):  # a board that does not exist falls through
        inside["missing"] = kb.get_current_board()
    with kb.scoped_current_board("../etc"):
        inside["malformed"] = kb.get_current_board()
seen["scoped"] = inside
seen["current_after"] = kb.get_current_board()

print(json.dumps(plain(seen), indent=1, sort_keys=True))
