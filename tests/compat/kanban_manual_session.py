"""A person's own moves on Kanban tasks (0.19's dashboard and CLI recovery verbs: promote,
reclaim, reassign, edit a completed result, a child's parent results), played through
whichever ``hermes_cli.kanban_db`` this python finds (hermes's, or Hermes Agent 0.19's
own). What a caller would see is printed as JSON, task ids and times replaced so two runs
can be compared.

Usage: python kanban_manual_session.py   (HERMES_HOME names the home to use)
"""

import json

from hermes_cli import kanban_db as kb

LABELS = {}


def label(task_id):
    return LABELS.setdefault(task_id, f"T{len(LABELS) + 1}")


def plain(value):
    text = json.dumps(value, default=str)
    for task_id, name in LABELS.items():
        text = text.replace(task_id, name)
    return json.loads(text)


def task(conn, task_id):
    t = kb.get_task(conn, task_id)
    return [t.status, t.assignee, t.claim_lock, t.worker_pid, t.consecutive_failures,
            t.last_failure_error, t.result]  # fmt: skip


def runs(conn, task_id):
    return [[r.status, r.outcome, r.summary, r.error, r.metadata, r.ended_at is not None]
            for r in kb.list_runs(conn, task_id)]  # fmt: skip


def events(conn, task_id, *kinds):
    return [[e.kind, e.payload] for e in kb.list_events(conn, task_id) if e.kind in kinds]


seen = {}
kb.init_db()
with kb.connect_closing() as conn:
    a = kb.create_task(conn, title="Parent", assignee="alice")
    b = kb.create_task(conn, title="Child", assignee="alice", parents=[a])
    c = kb.create_task(conn, title="Stuck", assignee="alice")
    d = kb.create_task(conn, title="Wrong model", assignee="alice")
    e = kb.create_task(conn, title="Done once", assignee="alice")
    f = kb.create_task(conn, title="Done by hand")
    for t in (a, b, c, d, e, f):
        label(t)

    seen["promote_ready"] = kb.promote_task(conn, a, actor="ops")
    seen["promote_waiting"] = kb.promote_task(conn, b, actor="ops")
    seen["promote_dry"] = [kb.promote_task(conn, b, actor="ops", force=True, dry_run=True),
                           task(conn, b)[0]]  # fmt: skip
    seen["promote_forced"] = [kb.promote_task(conn, b, actor="ops", reason="go", force=True),
                              task(conn, b)[0], events(conn, b, "promoted_manual")]  # fmt: skip
    seen["promote_unknown"] = kb.promote_task(conn, "t_nope", actor="ops")
    kb.block_task(conn, b, reason="hold")
    seen["promote_blocked"] = [kb.promote_task(conn, b, actor="ops", force=True), task(conn, b)[0]]

    kb.claim_task(conn, c, claimer="elsewhere:4242")
    conn.execute("UPDATE tasks SET worker_pid = 4242, consecutive_failures = 1, "
                 "last_failure_error = 'boom' WHERE id = ?", (c,))  # fmt: skip
    seen["reclaim"] = kb.reclaim_task(conn, c, reason="stuck on a prompt")
    seen["reclaimed_task"] = task(conn, c)
    seen["reclaimed_runs"] = runs(conn, c)
    seen["reclaimed_events"] = events(conn, c, "reclaimed")
    seen["reclaim_again"] = kb.reclaim_task(conn, c)
    seen["reclaim_unknown"] = kb.reclaim_task(conn, "t_nope")
    kb.claim_task(conn, c, claimer="elsewhere:1")
    seen["reclaim_no_reason"] = [kb.reclaim_task(conn, c), runs(conn, c)[-1]]

    kb.claim_task(conn, d, claimer="elsewhere:7")
    seen["reassign_running"] = [kb.reassign_task(conn, d, "bob"), task(conn, d)]
    seen["reassign_reclaiming"] = [kb.reassign_task(conn, d, "Bob", reclaim_first=True),
                                   task(conn, d), events(conn, d, "reclaimed", "assigned")]  # fmt: skip
    seen["unassign"] = [kb.reassign_task(conn, d, None), task(conn, d)[1]]
    seen["reassign_unknown"] = kb.reassign_task(conn, "t_nope", "bob")

    kb.claim_task(conn, e, claimer="elsewhere:9")
    kb.complete_task(conn, e, result="first answer", summary="first summary")
    seen["edit"] = kb.edit_completed_task_result(conn, e, result="second answer",
                                                 metadata={"why": "typo"})  # fmt: skip
    seen["edited"] = [task(conn, e), runs(conn, e), events(conn, e, "edited")]
    seen["edit_not_done"] = kb.edit_completed_task_result(conn, c, result="x")
    seen["edit_unknown"] = kb.edit_completed_task_result(conn, "t_nope", result="x")
    kb.complete_task(conn, f)
    seen["edit_without_run"] = [
        kb.edit_completed_task_result(conn, f, result="by hand", summary="line one\nline two"),
        runs(conn, f), events(conn, f, "edited"),
    ]  # fmt: skip

    g = kb.create_task(conn, title="Grandchild", parents=[a, e, f, c])
    label(g)
    seen["parent_results_none_done"] = kb.parent_results(conn, b)
    kb.complete_task(conn, a, result="parent result")
    seen["parent_results"] = kb.parent_results(conn, g)
    seen["parent_results_unknown"] = kb.parent_results(conn, "t_nope")

print(json.dumps(plain(seen), indent=1, sort_keys=True))
