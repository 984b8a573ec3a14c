"""Hermes Agent 0.19's checkpoint of its running background processes,
``$HERMES_HOME/processes.json``, read in a home that 0.19 used before.

0.19 keeps its processes in one process's memory and lists the running ones in that
file, so that after a restart it adopts those still running (``recover_from_checkpoint``).
hermes keeps records on disk and needs no checkpoint of its own; ``adopt`` takes 0.19's
in the same way: each entry whose process still runs, and is the same process (its
kernel start time is the one 0.19 noted, when it noted one), becomes a hermes record, so
it is listed, polled, stopped and its end noticed like hermes's own. Its output went to
0.19 (a pipe that is gone), so its log holds only a line saying so; it ends ``lost``
(nobody can learn its exit code). The file is left as it is; an entry already adopted is
not adopted again.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from pathlib import Path
from typing import Any

from hermes.tools.processes import background
from hermes.tools.processes.store import ProcessRecord, ProcessStore

log = logging.getLogger(__name__)

CHECKPOINT_NAME = "processes.json"


def adopt(hermes_home: Path, checkpoint: Path | None = None) -> list[ProcessRecord]:
    """The records made for the live processes of 0.19's checkpoint (``checkpoint``,
    the home's ``processes.json`` by default) not adopted before."""
    path = checkpoint if checkpoint is not None else Path(hermes_home) / CHECKPOINT_NAME
    store = ProcessStore(hermes_home)
    adopted = []
    for entry in _entries(path):
        record = _record(entry)
        if record is None or store.load(record.id) is not None:
            continue
        store.ensure()
        log_path = store.log_path(record.id)
        log_path.write_text(
            "[hermes: adopted from Hermes Agent 0.19's processes.json; what it printed "
            "went to 0.19, and its exit code cannot be known]\n",
            encoding="utf-8",
        )
        os.chmod(log_path, 0o600)
        store.save(record)
        adopted.append(record)
        log.info("adopted %s (pid %s) from 0.19's checkpoint", record.id, record.pid)
    return adopted


def _entries(path: Path) -> list[dict[str, Any]]:
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return []
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _record(entry: dict[str, Any]) -> ProcessRecord | None:
    """A running record for a live entry of this host; None for anything else."""
    pid, process_id = entry.get("pid"), str(entry.get("session_id") or "")
    if not isinstance(pid, int) or pid <= 0 or not process_id:
        return None
    if entry.get("pid_scope", "host") != "host":
        return None  # a pid inside a sandbox 0.19 ran: meaningless here, as in 0.19
    noted = entry.get("host_start_time")
    if not background.pid_alive(pid, None) or (noted is not None and _start_ticks(pid) != noted):
        return None  # gone, or its number now names another process
    patterns = entry.get("watch_patterns") or []
    return ProcessRecord(
        id=process_id,
        command=str(entry.get("command") or "unknown"),
        pid=pid,
        cwd=str(entry.get("cwd") or ""),
        pid_create_time=background.create_time(pid),
        host=socket.gethostname(),
        started_at=float(entry.get("started_at") or 0.0),
        # Its patterns cannot be watched (no output): its end is told instead.
        notify_on_complete=bool(entry.get("notify_on_complete") or patterns),
        session_id=str(entry.get("session_key") or "") or None,
    )


def _start_ticks(pid: int) -> int | None:
    """The kernel start time of ``pid`` in clock ticks since boot (field 22 of
    /proc/PID/stat), the fingerprint 0.19 notes as ``host_start_time``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None
