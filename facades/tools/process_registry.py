"""Hermes Agent 0.19's ``tools.process_registry``: the background processes, as its readers see them.

Over hermes.tools.processes (records, logs and completion events under
``$HERMES_HOME/processes/``), for the home of each call (``hermes_constants``): the
``process_registry`` object answers ``get``, ``list_sessions``, ``poll``,
``kill_process``, ``is_completion_consumed`` and ``recover_from_checkpoint`` with 0.19's
shapes, and ``completion_queue`` hands out the home's completion events as 0.19's dicts.

Where hermes's model differs, the mapping:

- Processes are records on disk, not an in-memory table: every process of the home is
  listed, whichever process started it, and its output is its log (never ``detached``).
  The view is pruned as 0.19's table is (the records stay): a finished process is
  forgotten ``FINISHED_TTL_SECONDS`` after it started, and at most ``MAX_PROCESSES``
  are listed, the oldest finished ones left out first.
- ``recover_from_checkpoint`` adopts the live processes of 0.19's ``processes.json``
  (``CHECKPOINT_PATH``; a home 0.19 used: hermes.tools.processes.checkpoint) and counts
  the running processes another process started (an earlier web UI, a chat, 0.19): a
  process hermes started needs no checkpoint, its record and log outlive its starter.
  hermes writes no ``processes.json``.
- A completion event is produced once and spooled (hermes.tools.processes.events);
  ``completion_queue.get`` takes the spooled ones, each by exactly one taker in any
  process. Events of a gateway's conversations stay spooled for the gateway. An event
  put back is spooled again.
- Watch patterns (``terminal``'s ``watch_patterns``) are hermes's own, with 0.19's rate
  limits (hermes.tools.processes.watch): their notices come through ``completion_queue``
  as 0.19's ``watch_match`` / ``watch_disabled`` / ``watch_overflow_*`` dicts, the
  overflow ones addressed to the process whose match tripped or released the breaker.
- ``session_key`` is the conversation segment the process was started from (the agent's
  ``session_id`` then), which is what hermes-webui keys its sessions by.
- Reading a log or waiting never swallows an event here, so ``is_completion_consumed``
  answers only what the caller marked (``_completion_consumed``, under ``_lock``, as
  hermes-webui marks the events it delivered) or killed through ``kill_process``.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_constants import get_hermes_home

from hermes.config import defaults, load_config
from hermes.redaction import redact
from hermes.state import SessionDB
from hermes.state.errors import HermesAgentStoreError, StateError
from hermes.state.location import STATE_FILE, StoreLocation, location_of
from hermes.tools.processes import background, checkpoint, events, watch
from hermes.tools.processes.store import KILLED, ProcessRecord, ProcessStore
from hermes.tools.processes.tool import TOOL
from tools._registry import registry  # 0.19's tool registry, over hermes's tools

__all__ = [
    "CHECKPOINT_PATH",
    "FINISHED_TTL_SECONDS",
    "MAX_ACTIVE_PROCESS_AGE",
    "MAX_OUTPUT_CHARS",
    "MAX_PROCESSES",
    "PROCESS_SCHEMA",
    "WATCH_GLOBAL_COOLDOWN_SECONDS",
    "WATCH_GLOBAL_MAX_PER_WINDOW",
    "WATCH_GLOBAL_WINDOW_SECONDS",
    "WATCH_MIN_INTERVAL_SECONDS",
    "WATCH_STRIKE_LIMIT",
    "ProcessRegistry",
    "ProcessSession",
    "format_process_notification",
    "format_uptime_short",
    "process_registry",
    "registry",
]

# The tail of the log a ProcessSession carries as ``output_buffer`` (0.19 keeps 200 000 in
# memory; here it is read from the log and redacted on every call).
MAX_OUTPUT_CHARS = 20_000
# The seconds a background process may run by default before hermes ends it
# (``terminal.background_timeout``; 0.19's 24 h is a session reset's limit).
MAX_ACTIVE_PROCESS_AGE = int(defaults()["terminal.background_timeout"])
# 0.19's checkpoint of its running processes, at import as 0.19's (a call reads its own
# home's, unless a caller pointed this elsewhere).
CHECKPOINT_PATH = get_hermes_home() / checkpoint.CHECKPOINT_NAME
_CHECKPOINT_AT_IMPORT = CHECKPOINT_PATH
# The view's pruning, 0.19's: a finished process is forgotten this long after it started...
FINISHED_TTL_SECONDS = 1800
# ... and no more than this many are listed (the oldest finished ones left out first).
MAX_PROCESSES = 64
# The rate limits of watch-pattern notices, hermes's own (0.19's values).
WATCH_MIN_INTERVAL_SECONDS = watch.WATCH_MIN_INTERVAL_SECONDS
WATCH_STRIKE_LIMIT = watch.WATCH_STRIKE_LIMIT
WATCH_GLOBAL_MAX_PER_WINDOW = watch.WATCH_GLOBAL_MAX_PER_WINDOW
WATCH_GLOBAL_WINDOW_SECONDS = watch.WATCH_GLOBAL_WINDOW_SECONDS
WATCH_GLOBAL_COOLDOWN_SECONDS = watch.WATCH_GLOBAL_COOLDOWN_SECONDS
# The process tool as the model is given it, in 0.19's shape (name, description, parameters).
PROCESS_SCHEMA = TOOL.schema()["function"]
_POLL_SECONDS = 0.2  # how often a blocking get looks at the spool again
_REFRESH_SECONDS = 5.0  # how often the queue checks the records for unwatched endings


@dataclass
class ProcessSession:
    """0.19's view of one background process (the fields its readers use)."""

    id: str
    command: str
    task_id: str = ""
    session_key: str = ""
    pid: int | None = None
    cwd: str | None = None
    started_at: float = 0.0
    exited: bool = False
    exit_code: int | None = None
    completion_reason: str = "exited"
    termination_source: str = ""
    output_buffer: str = ""
    max_output_chars: int = MAX_OUTPUT_CHARS
    detached: bool = False
    notify_on_complete: bool = False
    watch_patterns: list[str] = field(default_factory=list)
    watch_hits: int = 0
    watch_disabled: bool = False


class CompletionQueue:
    """0.19's ``completion_queue`` (``get``, ``get_nowait``, ``put``, ``empty``) over the
    spooled completion events of the caller's home."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Events taken from the spool in one batch and not yet handed out, and items put
        # back that are no event of hermes's; per home.
        self._held: dict[Path, deque[dict[str, Any]]] = {}
        # (home, conversation) -> whether a gateway serves it (its events are the gateway's).
        self._gateway: dict[tuple[Path, str], bool] = {}
        self._refreshed: dict[Path, float] = {}  # home -> when its records were last checked

    def get(self, block: bool = True, timeout: float | None = None) -> dict[str, Any]:
        home = get_hermes_home()
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while True:
            item = self._take(home)
            if item is not None:
                return item
            if not block or (deadline is not None and time.monotonic() >= deadline):
                raise queue.Empty
            wait = _POLL_SECONDS
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - time.monotonic()))
            time.sleep(wait)

    def get_nowait(self) -> dict[str, Any]:
        return self.get(block=False)

    def put(self, item: dict[str, Any], block: bool = True, timeout: float | None = None) -> None:
        """Give an event back: a completion event is spooled again for the next taker."""
        home = get_hermes_home()
        event = _as_event(item)
        if event is not None:
            events.spool_event(home, event)
            return
        with self._lock:
            self._held.setdefault(home, deque()).append(item)

    def put_nowait(self, item: dict[str, Any]) -> None:
        self.put(item, block=False)

    def empty(self) -> bool:
        home = get_hermes_home()
        with self._lock:
            if self._held.get(home):
                return False
        return not any(self._ours(home, event) for event in events.spooled(home))

    def qsize(self) -> int:
        return 0 if self.empty() else 1  # 0.19's is approximate too

    def _take(self, home: Path) -> dict[str, Any] | None:
        with self._lock:
            held = self._held.setdefault(home, deque())
            if not held:
                self._notice_unwatched_endings(home)
                taken = events.take_spooled(home, lambda e: self._ours(home, e))
                held.extend(_event_dict(home, e) for e in taken)
            return held.popleft() if held else None

    def _notice_unwatched_endings(self, home: Path) -> None:
        """Produce the events of processes that ended while no hermes process watched
        them (their starter died), now and then: a watched one spools its event itself,
        and a drain thread asks every second."""
        now = time.monotonic()
        if now - self._refreshed.get(home, -_REFRESH_SECONDS) >= _REFRESH_SECONDS:
            self._refreshed[home] = now
            background.refresh_all(home)

    def _ours(self, home: Path, event: events.CompletionEvent) -> bool:
        """Whether the event is for this queue's takers: not one of a gateway's
        conversations, which the gateway of this home delivers (it takes the spool when
        it starts)."""
        conversation = event.conversation_id
        if not conversation:
            return True
        key = (home, conversation)
        if key not in self._gateway:
            try:
                self._gateway[key] = _is_gateway_key(_session_key(home, conversation))
            except StateError:
                return False  # the store cannot say now: leave it spooled, ask again later
        return not self._gateway[key]


class ProcessRegistry:
    """0.19's ``ProcessRegistry``, answered from the caller's home."""

    def __init__(self) -> None:
        self.completion_queue = CompletionQueue()
        # The processes whose completion the caller has in hand (0.19's private pair,
        # which hermes-webui reads and writes).
        self._lock = threading.Lock()
        self._completion_consumed: set[str] = set()

    def get(self, session_id: str) -> ProcessSession | None:
        home = get_hermes_home()
        record = background.load(home, session_id)
        if record is None or (record.finished and not _still_tracked(home, record)):
            return None
        return _session(home, record)

    def list_sessions(
        self, task_id: str | None = None, session_key: str | None = None
    ) -> list[dict[str, Any]]:
        """Every process of the home, oldest first, as 0.19's rows; ``task_id`` (a 0.19
        sandbox name, none here) and ``session_key`` filter as in 0.19."""
        home = get_hermes_home()
        sessions = [_session(home, r) for r in _tracked(background.refresh_all(home))]
        if task_id or session_key:
            sessions = [
                s
                for s in sessions
                if (task_id and s.task_id == task_id)
                or (session_key and s.session_key == session_key)
            ]
        return [_row(s) for s in sessions]

    def poll(self, session_id: str) -> dict[str, Any]:
        session = self.get(session_id)
        if session is None:
            return _not_found(session_id)
        result: dict[str, Any] = {
            "session_id": session.id,
            "command": session.command,
            "status": "exited" if session.exited else "running",
            "pid": session.pid,
            "uptime_seconds": int(time.time() - session.started_at),
            "output_preview": session.output_buffer[-1000:],
        }
        if session.exited:
            result.update(_ending(session))
        return result

    def kill_process(
        self, session_id: str, *, source: str = "process.kill", consume_output: bool = True
    ) -> dict[str, Any]:
        """Stop the process's whole group (SIGTERM, then SIGKILL); 0.19's answer."""
        home = get_hermes_home()
        before = self.get(session_id)
        if before is None:
            return _not_found(session_id)
        record = background.kill(home, session_id)
        after = _session(home, record) if record is not None else before
        if consume_output:
            with self._lock:
                self._completion_consumed.add(session_id)
        output = after.output_buffer[-2000:]
        if before.exited:
            return {
                "status": "already_exited",
                "command": after.command,
                **_ending(after),
                "output": output,
            }
        return {"status": "killed", "session_id": after.id, **_ending(after), "output": output}

    def is_completion_consumed(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._completion_consumed

    def count_running(self) -> int:
        return sum(1 for row in self.list_sessions() if row["status"] == "running")

    def has_any_active(self) -> bool:
        return self.count_running() > 0

    def recover_from_checkpoint(self) -> int:
        """Adopt the live processes of 0.19's checkpoint; how many running processes of
        the home another process started (an earlier web UI, a chat, 0.19)."""
        home = get_hermes_home()
        moved = CHECKPOINT_PATH != _CHECKPOINT_AT_IMPORT  # a caller pointed it elsewhere
        checkpoint.adopt(home, CHECKPOINT_PATH if moved else None)
        return sum(
            1
            for record in background.refresh_all(home)
            if not record.finished and record.owner_pid != os.getpid()
        )


def format_process_notification(evt: dict[str, Any]) -> str | None:
    """0.19's ``[IMPORTANT: ...]`` message for a completion or watch event; None for a
    kind hermes never produces (0.19's delegations)."""
    kind = evt.get("type", "completion")
    if kind == watch.WATCH_MATCH:
        dropped = evt.get("suppressed") or 0
        return (
            f"[IMPORTANT: Background process {evt.get('session_id', 'unknown')} matched "
            f'watch pattern "{evt.get("pattern", "?")}".\nCommand: {evt.get("command", "unknown")}\n'
            f"Matched output:\n{evt.get('output', '')}"
            + (f"\n({dropped} earlier matches were suppressed by rate limit)" if dropped else "")
            + "]"
        )
    if kind in _WATCH_SUMMARIES:
        return f"[IMPORTANT: {evt.get('message', '')}]"
    if kind != "completion":
        return None
    exit_code = evt.get("exit_code", "?")
    reason = evt.get("completion_reason") or "exited"
    # 0.19 names the signal of a stop: -15 (SIGTERM, as Python reports it) or 143 (the shell's).
    signal = ", SIGTERM" if exit_code in {-15, 143, "-15", "143"} else ""
    if reason == "killed":
        status = f"terminated by {evt.get('termination_source') or 'Hermes'}"
    elif reason == "lost":
        status = "marked lost because the process backend disappeared"
    elif reason == "failed_start":
        status = "failed to start"
    elif exit_code == 0:
        status = "completed normally"
    else:
        status = "exited"
    return (
        f"[IMPORTANT: Background process {evt.get('session_id', 'unknown')} {status} "
        f"(exit code {exit_code}{signal}).\nCommand: {evt.get('command', 'unknown')}\n"
        f"Output:\n{evt.get('output', '')}]"
    )


def _tracked(records: list[ProcessRecord]) -> list[ProcessRecord]:
    """The records 0.19's table would still hold: the running ones and the finished ones
    younger than FINISHED_TTL_SECONDS (counted from their start, as 0.19 counts), at most
    MAX_PROCESSES in all, the oldest finished ones left out first."""
    now = time.time()
    kept = [r for r in records if not r.finished or now - r.started_at <= FINISHED_TTL_SECONDS]
    excess = len(kept) - MAX_PROCESSES
    if excess > 0:
        finished = sorted((r for r in kept if r.finished), key=lambda r: (r.started_at, r.id))
        left_out = {r.id for r in finished[:excess]}
        kept = [r for r in kept if r.id not in left_out]
    return kept


def _still_tracked(home: Path, record: ProcessRecord) -> bool:
    return any(r.id == record.id for r in _tracked(ProcessStore(home).all()))


_WATCH_SUMMARIES = {watch.WATCH_DISABLED, watch.OVERFLOW_TRIPPED, watch.OVERFLOW_RELEASED}


def _session(home: Path, record: ProcessRecord) -> ProcessSession:
    log = ProcessStore(home).log_path(record.id)
    return ProcessSession(
        id=record.id,
        command=record.command,
        session_key=record.session_id or record.conversation_id or "",
        pid=record.pid,
        cwd=record.cwd or None,
        started_at=record.started_at,
        exited=record.finished,
        exit_code=record.exit_code,
        completion_reason=record.status if record.finished else "exited",
        termination_source="process.kill" if record.status == KILLED else "",
        output_buffer=redact(_tail(log, MAX_OUTPUT_CHARS)),
        notify_on_complete=record.notify_on_complete,
        watch_patterns=list(record.watch_patterns),
        watch_hits=record.watch_hits,
        watch_disabled=record.watch_disabled,
    )


def _row(session: ProcessSession) -> dict[str, Any]:
    row: dict[str, Any] = {
        "session_id": session.id,
        "command": session.command[:200],
        "cwd": session.cwd,
        "pid": session.pid,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(session.started_at)),
        "uptime_seconds": int(time.time() - session.started_at),
        "status": "exited" if session.exited else "running",
        "output_preview": session.output_buffer[-200:],
    }
    if session.watch_patterns and not session.watch_disabled:
        row["watch_patterns"] = list(session.watch_patterns)
        row["watch_hit"] = session.watch_hits > 0
    if session.notify_on_complete:
        row["notify_on_complete"] = True
    if session.exited:
        row["exit_code"] = session.exit_code
    return row


def _ending(session: ProcessSession) -> dict[str, Any]:
    return {
        "exit_code": session.exit_code,
        "completion_reason": session.completion_reason,
        "termination_source": session.termination_source,
    }


def _not_found(session_id: str) -> dict[str, Any]:
    return {"status": "not_found", "error": f"No process with ID {session_id}"}


def _event_dict(home: Path, event: events.CompletionEvent) -> dict[str, Any]:
    """0.19's completion or watch event for ``event`` (``conversation_id`` added:
    hermes's address)."""
    if event.kind != events.COMPLETION:
        return _watch_dict(event)
    record = ProcessStore(home).load(event.process_id)
    return {
        "type": "completion",
        "session_id": event.process_id,
        "session_key": event.session_id or event.conversation_id or "",
        "command": event.command,
        "exit_code": event.exit_code,
        "completion_reason": event.status,
        "termination_source": "process.kill" if event.status == KILLED else "",
        "output": redact(event.output_tail),
        "started_at": record.started_at if record else None,
        "completed_at": event.finished_at,
        "conversation_id": event.conversation_id,
    }


def _watch_dict(event: events.CompletionEvent) -> dict[str, Any]:
    """0.19's dict of a watch notice (``message`` for the summaries, as 0.19's)."""
    found = {
        "type": event.kind,
        "session_id": event.process_id,
        "session_key": event.session_id or event.conversation_id or "",
        "command": event.command,
        "suppressed": event.suppressed,
        "conversation_id": event.conversation_id,
        "at": event.finished_at,
    }
    if event.kind == watch.WATCH_MATCH:
        return {**found, "pattern": event.pattern, "output": redact(event.output_tail)}
    return {**found, "message": redact(event.headline())}


def _as_event(item: Any) -> events.CompletionEvent | None:
    """The hermes event a dict of ``_event_dict`` stands for; None for anything else."""
    if not isinstance(item, dict):
        return None
    if item.get("type") in {watch.WATCH_MATCH, *_WATCH_SUMMARIES} and "at" in item:
        return events.CompletionEvent(
            process_id=str(item.get("session_id") or ""),
            conversation_id=item.get("conversation_id"),
            command=str(item.get("command") or ""),
            exit_code=None,
            output_tail=str(item.get("output") or ""),
            finished_at=float(item["at"]),
            session_id=item.get("session_key") or None,
            kind=str(item["type"]),
            pattern=item.get("pattern"),
            suppressed=int(item.get("suppressed") or 0),
        )
    if item.get("type") != "completion" or "completed_at" not in item:
        return None
    return events.CompletionEvent(
        process_id=str(item.get("session_id") or ""),
        conversation_id=item.get("conversation_id"),
        command=str(item.get("command") or ""),
        exit_code=item.get("exit_code"),
        output_tail=str(item.get("output") or ""),
        finished_at=float(item["completed_at"]),
        status=str(item.get("completion_reason") or "exited"),
        session_id=item.get("session_key") or None,
    )


def _session_key(home: Path, conversation: str) -> str | None:
    """The stored session key of a conversation (none without a store of hermes's)."""
    configured = load_config(home / "config.yaml").get("state.url")
    place = location_of(configured) if configured else StoreLocation(path=home / STATE_FILE)
    if not place.exists:
        return None
    try:
        db = SessionDB(db_path=place.path, url=place.url, read_only=True)
    except HermesAgentStoreError:
        return None
    try:
        row = db.get_session(conversation)
    finally:
        db.close()
    return row.get("session_key") if row else None


def _is_gateway_key(key: str | None) -> bool:
    if not key or ":" not in key:
        return False
    from hermes.gateway.settings import PLATFORMS  # only when there are events

    return key.split(":", 1)[0] in PLATFORMS


def format_uptime_short(seconds: int) -> str:
    """0.19's short uptime: ``42s``, ``3m 5s``, ``2h 7m``."""
    total = max(0, int(seconds))
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {secs}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes}m"


def _tail(path: Path, chars: int) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, path.stat().st_size - chars * 4))
            return handle.read().decode("utf-8", errors="replace")[-chars:]
    except FileNotFoundError:
        return ""


process_registry = ProcessRegistry()
