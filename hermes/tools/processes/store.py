"""Background-process records on disk: one JSON file per process under HERMES_HOME.

Layout of ``$HERMES_HOME/processes/`` (0700, files 0600):

    <id>.json       the record (ProcessRecord), replaced atomically on every change
    <id>.log        everything the process printed, stdout and stderr together
    <id>.exit       the exit code, written by the supervisor when the command ends
    <id>.notified   the claim that its completion event was produced (see events.py)
    events/         completion events waiting for ``drain_events``
    foreground/     <id>.json: a foreground command while it runs (``terminal``), so a
                    command whose hermes process died is found and ended later
    .lock           serialises read-modify-write of records across processes

Records outlive the agent object and the host process, so any later hermes process
can list, read and judge them.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from hermes.tools._fs import JsonRecord, private_dir, read_json, write_json

RUNNING = "running"
EXITED = "exited"
KILLED = "killed"
LOST = "lost"  # its pid is gone (or reused) and nobody recorded how it ended


@dataclass
class ProcessRecord(JsonRecord):
    """What is known about one background process."""

    id: str
    command: str
    pid: int
    cwd: str = ""
    pid_create_time: float | None = None
    host: str | None = None
    owner_pid: int | None = None
    owner_create_time: float | None = None
    started_at: float = 0.0
    notify_on_complete: bool = False
    conversation_id: str | None = None
    session_id: str | None = None
    status: str = RUNNING
    exit_code: int | None = None
    finished_at: float | None = None
    kill_requested: bool = False
    watch_patterns: list[str] = field(default_factory=list)  # see watch.py
    watch_hits: int = 0  # watch_match notices sent
    watch_disabled: bool = False  # switched off by the rate limit (then notify_on_complete)

    @property
    def finished(self) -> bool:
        return self.status != RUNNING


def new_process_id() -> str:
    return "proc_" + secrets.token_hex(4)


class ProcessStore:
    """The records of one HERMES_HOME."""

    def __init__(self, hermes_home: Path) -> None:
        self.dir = Path(hermes_home) / "processes"

    def ensure(self) -> ProcessStore:
        private_dir(self.dir.parent)
        private_dir(self.dir)
        return self

    def record_path(self, process_id: str) -> Path:
        return self.dir / f"{process_id}.json"

    def log_path(self, process_id: str) -> Path:
        return self.dir / f"{process_id}.log"

    def exit_path(self, process_id: str) -> Path:
        return self.dir / f"{process_id}.exit"

    def notified_path(self, process_id: str) -> Path:
        return self.dir / f"{process_id}.notified"

    def events_dir(self) -> Path:
        return self.dir / "events"

    def foreground_dir(self) -> Path:
        return self.dir / "foreground"

    def save_foreground(self, record: ProcessRecord) -> None:
        private_dir(self.ensure().foreground_dir())
        write_json(self.foreground_dir() / f"{record.id}.json", record.to_dict())

    def drop_foreground(self, process_id: str) -> None:
        if _valid_id(process_id):
            (self.foreground_dir() / f"{process_id}.json").unlink(missing_ok=True)

    def all_foreground(self) -> list[ProcessRecord]:
        """The foreground commands recorded as running, oldest first."""
        folder = self.foreground_dir()
        if not folder.is_dir():
            return []
        records = [
            ProcessRecord.from_dict(data)
            for path in folder.glob("*.json")
            if (data := read_json(path)) and "id" in data and "pid" in data
        ]
        return sorted(records, key=lambda r: (r.started_at, r.id))

    def lock(self) -> FileLock:
        self.ensure()
        return FileLock(str(self.dir / ".lock"), timeout=30, mode=0o600)

    def save(self, record: ProcessRecord) -> None:
        self.ensure()
        write_json(self.record_path(record.id), record.to_dict())

    def load(self, process_id: str) -> ProcessRecord | None:
        if not _valid_id(process_id):
            return None
        data = read_json(self.record_path(process_id))
        return ProcessRecord.from_dict(data) if data else None

    def all(self) -> list[ProcessRecord]:
        """Every readable record, oldest first."""
        if not self.dir.is_dir():
            return []
        records = []
        for path in self.dir.glob("*.json"):
            data = read_json(path)
            if data and "id" in data and "pid" in data:
                records.append(ProcessRecord.from_dict(data))
        return sorted(records, key=lambda r: (r.started_at, r.id))

    def update(self, process_id: str, **changes: Any) -> ProcessRecord | None:
        with self.lock():
            record = self.load(process_id)
            if record is None:
                return None
            record = dataclasses.replace(record, **changes)
            self.save(record)
            return record

    def finish(
        self, process_id: str, exit_code: int | None, status: str, finished_at: float
    ) -> tuple[ProcessRecord | None, bool]:
        """Record how a process ended, once: returns (record, whether this call recorded it)."""
        with self.lock():
            record = self.load(process_id)
            if record is None or record.finished:
                return record, False
            record = dataclasses.replace(
                record, status=status, exit_code=exit_code, finished_at=finished_at
            )
            self.save(record)
            return record, True

    def read_exit_code(self, process_id: str) -> int | None:
        try:
            return int(self.exit_path(process_id).read_text(encoding="ascii").strip())
        except (FileNotFoundError, ValueError):
            return None


def _valid_id(process_id: str) -> bool:
    # Ids become file names; refuse anything that could walk out of the folder.
    return bool(process_id) and process_id.replace("_", "").replace("-", "").isalnum()
