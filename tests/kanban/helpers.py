"""What the Kanban tests share: waiting on a task a worker process moves."""

from __future__ import annotations

import sqlite3
import time

from hermes_cli import kanban_db as kb


def wait_for_task(conn: sqlite3.Connection, task_id: str, *statuses: str) -> kb.Task:
    """The task once a worker process has moved it to one of ``statuses``, or as it is
    after two minutes (the caller's assertion then says where it stopped)."""
    deadline = time.monotonic() + 120
    while True:
        task = kb.get_task(conn, task_id)
        assert task is not None
        if task.status in statuses or time.monotonic() > deadline:
            return task
        time.sleep(0.1)
