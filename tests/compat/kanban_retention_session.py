"""What a Kanban board keeps (0.19's worker-log rotation settings, and the garbage
collection of old events and worker logs), played through whichever ``hermes_cli.kanban_db``
this python finds (hermes's, or Hermes Agent 0.19's own). What a caller would see is
printed as JSON, task ids replaced so two runs can be compared.

Usage: python kanban_retention_session.py   (HERMES_HOME names the home to use)
"""

import json
import os
import time
from pathlib import Path

from hermes_cli import kanban_db as kb

HOME = Path(os.environ["HERMES_HOME"])
DAY = 24 * 3600
seen = {}

seen["defaults"] = [kb.DEFAULT_LOG_ROTATE_BYTES, kb.DEFAULT_LOG_BACKUP_COUNT]
seen["rotation"] = [
    kb.worker_log_rotation_config(cfg)
    for cfg in (
        {},
        {"worker_log_rotate_bytes": 5, "worker_log_backup_count": 0},
        {"worker_log_rotate_bytes": "7", "worker_log_backup_count": "3"},
        {"worker_log_rotate_bytes": 0, "worker_log_backup_count": -1},
        {"worker_log_rotate_bytes": "many", "worker_log_backup_count": None},
    )
]
(HOME / "config.yaml").write_text(
    "kanban:\n  worker_log_rotate_bytes: 1234\n  worker_log_backup_count: 3\n"
)
seen["rotation_from_config"] = kb.worker_log_rotation_config()

kb.init_db()
with kb.connect_closing() as conn:
    done = kb.create_task(conn, title="Finished")
    live = kb.create_task(conn, title="Still going")
    gone = kb.create_task(conn, title="Put away")
    names = {done: "done", live: "live", gone: "gone"}
    for task_id in (done, live, gone):
        kb.add_comment(conn, task_id, "ops", "old note")
    kb.complete_task(conn, done, result="ok")
    kb.archive_task(conn, gone)
    conn.execute("UPDATE task_events SET created_at = created_at - ?", (40 * DAY,))
    kb.add_comment(conn, done, "ops", "new note")

    def left():
        rows = conn.execute("SELECT task_id, kind FROM task_events ORDER BY id").fetchall()
        return [(names[r["task_id"]], r["kind"]) for r in rows]

    seen["gc_events_default"] = kb.gc_events(conn)
    seen["events_left"] = left()
    seen["gc_events_again"] = kb.gc_events(conn)
    seen["gc_events_all_finished"] = kb.gc_events(conn, older_than_seconds=-10)
    seen["events_left_after_all"] = left()

logs = kb.worker_logs_dir()
logs.mkdir(parents=True, exist_ok=True)
old = time.time() - 40 * DAY
for name, when in (("t_old.log", old), ("t_old.log.1", old), ("t_new.log", None)):
    (logs / name).write_text("worker output\n")
    if when:
        os.utime(logs / name, (when, when))
(logs / "nested").mkdir()
os.utime(logs / "nested", (old, old))
kb.create_board("side")
side_logs = kb.worker_logs_dir(board="side")
side_logs.mkdir(parents=True)
(side_logs / "t_side.log").write_text("x")
os.utime(side_logs / "t_side.log", (old, old))
seen["gc_logs_default"] = kb.gc_worker_logs()
seen["logs_left"] = sorted(p.name for p in logs.iterdir())
seen["side_left"] = sorted(p.name for p in side_logs.iterdir())
seen["gc_logs_side"] = kb.gc_worker_logs(board="side")
seen["gc_logs_recent_kept"] = kb.gc_worker_logs(older_than_seconds=3600)
seen["gc_logs_everything"] = kb.gc_worker_logs(older_than_seconds=-10)
seen["logs_left_after_all"] = sorted(p.name for p in logs.iterdir())
kb.create_board("empty")
seen["gc_logs_no_folder"] = kb.gc_worker_logs(board="empty")

print(json.dumps(seen, indent=1, sort_keys=True))
