"""What a board keeps, and for how long (0.19's): a task's worker log is rotated when its
next worker starts, once it is over ``kanban.worker_log_rotate_bytes`` (2 MiB), keeping
``kanban.worker_log_backup_count`` older generations (``<task>.log.1``, ...); and, when
asked, the events of finished tasks and the worker logs older than a cut-off are deleted
(``gc_events``, ``gc_worker_logs``)."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import Any

from hermes.config import load_config
from hermes.errors import HermesError
from hermes.kanban.db import write_txn
from hermes.kanban.paths import worker_logs_dir

DEFAULT_LOG_ROTATE_BYTES = 2 * 1024 * 1024
DEFAULT_LOG_BACKUP_COUNT = 1
DEFAULT_RETENTION_SECONDS = 30 * 24 * 3600


def _whole_number(value: Any, default: int, minimum: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return number if number >= minimum else default


def worker_log_rotation_config(kanban_cfg: dict[str, Any] | None = None) -> tuple[int, int]:
    """``(rotate over this many bytes, generations kept)`` from ``kanban_cfg`` (the
    ``kanban`` section of config.yaml when not given); a value that is no whole number,
    or too small (under 1 byte, under 0 generations), is the default."""
    if kanban_cfg is None:
        try:
            section = load_config().get("kanban")
        except (KeyError, HermesError):  # no such section, or a config hermes refuses
            section = {}
        kanban_cfg = section if isinstance(section, dict) else {}
    return (
        _whole_number(kanban_cfg.get("worker_log_rotate_bytes"), DEFAULT_LOG_ROTATE_BYTES, 1),
        _whole_number(kanban_cfg.get("worker_log_backup_count"), DEFAULT_LOG_BACKUP_COUNT, 0),
    )


def _generation(log_path: Path, number: int) -> Path:
    return log_path.with_name(f"{log_path.name}.{number}")


def rotate_worker_log(log_path: Path, max_bytes: int, backup_count: int) -> None:
    """Move ``<log>`` to ``<log>.1`` (older generations up by one, the oldest beyond
    ``backup_count`` dropped; with 0 it is deleted) when it is over ``max_bytes``. A log
    that cannot be moved is left to grow: a worker must start even so."""
    with contextlib.suppress(OSError):
        if log_path.is_symlink() or not log_path.is_file():
            return
        if log_path.stat().st_size <= max_bytes:
            return
        if backup_count <= 0:
            log_path.unlink()
            return
        _generation(log_path, backup_count).unlink(missing_ok=True)
        for number in range(backup_count - 1, 0, -1):
            older = _generation(log_path, number)
            if older.exists():
                older.rename(_generation(log_path, number + 1))
        log_path.rename(_generation(log_path, 1))


def gc_events(
    conn: sqlite3.Connection, *, older_than_seconds: int = DEFAULT_RETENTION_SECONDS
) -> int:
    """Delete the events older than ``older_than_seconds`` of done and archived tasks (a
    live task keeps its whole history); how many were deleted."""
    cutoff = int(time.time()) - int(older_than_seconds)
    with write_txn(conn):
        cur = conn.execute(
            "DELETE FROM task_events WHERE created_at < ? AND task_id IN "
            "(SELECT id FROM tasks WHERE status IN ('done', 'archived'))",
            (cutoff,),
        )
    return int(cur.rowcount or 0)


def gc_worker_logs(
    *, older_than_seconds: int = DEFAULT_RETENTION_SECONDS, board: str | None = None
) -> int:
    """Delete the worker logs of ``board`` (the active board when not given) last written
    more than ``older_than_seconds`` ago; how many files were deleted."""
    folder = worker_logs_dir(board=board)
    cutoff = time.time() - older_than_seconds
    removed = 0
    try:
        entries = list(folder.iterdir())
    except OSError:  # no logs yet
        return 0
    for path in entries:
        with contextlib.suppress(OSError):
            if path.is_symlink() or not path.is_file():
                continue
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
    return removed
