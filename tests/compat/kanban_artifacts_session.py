"""A completed task's deliverables kept from its scratch folder (0.19's completion
artifacts and ``ArtifactPreservationError``), played through whichever
``hermes_cli.kanban_db`` this python finds (hermes's, or Hermes Agent 0.19's own). What a
caller would see is printed as JSON, task ids and paths made relative so two runs can be
compared.

Usage: python kanban_artifacts_session.py   (HERMES_HOME names the home to use)
"""

import json
import os
from pathlib import Path

from hermes_cli import kanban_db as kb

HOME = Path(os.environ["HERMES_HOME"])
LABELS = {}


def label(task_id):
    return LABELS.setdefault(task_id, f"T{len(LABELS) + 1}")


def plain(value):
    text = json.dumps(value, default=str).replace(str(HOME), "~")
    for task_id, name in LABELS.items():
        text = text.replace(task_id, name)
    return json.loads(text)


def scratch(conn, title):
    task_id = kb.create_task(conn, title=title, assignee="alice")
    label(task_id)
    kb.claim_task(conn, task_id, claimer="elsewhere:1")
    folder = kb.workspaces_root() / task_id
    folder.mkdir(parents=True)
    kb.set_workspace_path(conn, task_id, folder)
    return task_id, folder


def outcome(conn, task_id, call):
    try:
        done = call()
    except Exception as exc:
        done = [type(exc).__name__, isinstance(exc, RuntimeError)]
    t = kb.get_task(conn, task_id)
    attached = [
        [a.filename, a.uploaded_by, a.size, a.content_type, a.stored_path]
        for a in kb.list_attachments(conn, task_id)
    ]
    runs = [r.metadata for r in kb.list_runs(conn, task_id)]
    completed = [  # the result's length left out: it names the home, whose length varies
        {k: v for k, v in e.payload.items() if k != "result_len"}
        for e in kb.list_events(conn, task_id)
        if e.kind == "completed"
    ]
    return {"returned": done, "status": t.status, "attached": attached, "runs": runs,
            "completed": completed, "attached_events": [
                e.payload for e in kb.list_events(conn, task_id) if e.kind == "attached"]}  # fmt: skip


seen = {}
outside = HOME / "elsewhere.txt"
outside.write_text("not the worker's")
kb.init_db()
with kb.connect_closing() as conn:
    a, folder = scratch(conn, "Write the report")
    (folder / "report.html").write_text("<h1>report</h1>")
    (folder / "notes.md").write_text("notes")
    seen["named"] = outcome(conn, a, lambda: kb.complete_task(
        conn, a, result=f"Done: see {folder}/notes.md.",
        metadata={"artifacts": [str(folder / "report.html"), str(outside)], "tests": 3}))  # fmt: skip
    seen["copies"] = [Path(x[4]).read_text() for x in seen["named"]["attached"]]

    b, folder_b = scratch(conn, "Promised a file")
    seen["missing"] = outcome(conn, b, lambda: kb.complete_task(
        conn, b, result="ok", metadata={"artifacts": [str(folder_b / "missing.txt")]}))  # fmt: skip

    c, folder_c = scratch(conn, "Too big")
    with open(folder_c / "big.bin", "wb") as big:
        big.truncate(kb.KANBAN_ATTACHMENT_MAX_BYTES + 1)
    seen["too_big"] = outcome(conn, c, lambda: kb.complete_task(
        conn, c, result="ok", metadata={"artifacts": [str(folder_c / "big.bin")]}))  # fmt: skip

    d = kb.create_task(conn, title="In a project", workspace_kind="dir",
                       workspace_path=str(HOME / "project"))  # fmt: skip
    label(d)
    (HOME / "project").mkdir()
    (HOME / "project" / "out.txt").write_text("x")
    seen["dir_workspace"] = outcome(conn, d, lambda: kb.complete_task(
        conn, d, result="ok", metadata={"artifacts": [str(HOME / "project" / "out.txt")]}))  # fmt: skip

    e, folder_e = scratch(conn, "No artifacts")
    seen["none"] = outcome(conn, e, lambda: kb.complete_task(conn, e, result="plain"))

print(json.dumps(plain(seen), indent=1, sort_keys=True))
