"""Starting, watching, judging and stopping background processes.

A background command runs under a tiny supervisor (a bare ``python -c`` script) in its
own session and process group, with stdout and stderr going to its log file. The
supervisor writes the command's exit code to ``<id>.exit`` when it ends, so the exit
is known even if the hermes process that started it has gone. The process is owned by
this host: it outlives the agent object (a watcher thread of this module, not the
agent, waits for it) and, detached from the terminal, survives Ctrl-C in the REPL.

With watch patterns, the watcher thread also reads the log as it grows and tells the
conversation of each matching line, within the rate limits of ``watch.py``; only the
hermes process that started it watches its patterns (its completion is heard by anyone).

A record that says "running" is checked on every look: if its pid is gone, or now
belongs to another process (the create time differs, e.g. after a reboot), and no exit
was recorded anywhere, it is reported ``lost``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from hermes.tools.guards import git_inert
from hermes.tools.guards.disk import remove_scratch
from hermes.tools.guards.launch import Launch
from hermes.tools.guards.limits import ProcessGroupCap
from hermes.tools.processes import events, watch
from hermes.tools.processes.store import (
    EXITED,
    KILLED,
    LOST,
    ProcessRecord,
    ProcessStore,
    new_process_id,
)

log = logging.getLogger(__name__)

# Runs with ``python -I -S`` so it starts in milliseconds and imports nothing of ours.
# It forwards termination signals to the command and records its exit code atomically.
SUPERVISOR = r"""
import json, os, signal, subprocess, sys
exit_path, argv, limit = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])
child = subprocess.Popen(argv)
def forward(signum, frame):
    try:
        child.send_signal(signum)
    except OSError:
        pass
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, forward)
try:
    code = child.wait(timeout=limit or None)
except subprocess.TimeoutExpired:
    print(f"[hermes: ended at its time limit of {limit:g} s (terminal.background_timeout); "
          "ask the user to raise it, or set it to 0, for a process that must keep running]", flush=True)
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)  # the command's group; ours forwards it
        code = child.wait(timeout=2)
    except (OSError, subprocess.TimeoutExpired):
        child.kill()
        code = child.wait()
with os.fdopen(os.open(exit_path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
    handle.write(str(code))
os.replace(exit_path + ".tmp", exit_path)
sys.exit(code if code >= 0 else 128 - code)
"""

_CREATE_TIME_TOLERANCE = 1.0  # seconds; a reused pid started later than that
_POLL_INTERVAL = 0.05
_WATCH_INTERVAL = 0.2  # how often the log of a process with watch patterns is read

# (hermes_home, process id) of the processes this hermes process is waiting for.
_watched: set[tuple[str, str]] = set()
_watched_lock = threading.Lock()


def start(
    hermes_home: Path,
    command: str,
    cwd: Path,
    *,
    notify_on_complete: bool = False,
    conversation_id: str | None = None,
    session_id: str | None = None,
    how: Launch,
    event_bus: events.EventBus | None = None,
    time_limit: float = 0,
    watch_patterns: Sequence[str] = (),
    watch_limits: watch.WatchLimits | None = None,
) -> ProcessRecord:
    """Start ``command`` in the background as ``how`` says (sandbox, environment,
    limits); its record at once. Its supervisor ends it after ``time_limit`` seconds
    (0: never), even when the hermes process that started it is gone.

    Its watcher hands the completion event, and the notices of ``watch_patterns``
    (within ``watch_limits``, this process's by default), to ``event_bus`` (spooled
    without one)."""
    store = ProcessStore(hermes_home).ensure()
    process_id = new_process_id()
    log_fd = os.open(store.log_path(process_id), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    cap = ProcessGroupCap(how.limits.max_processes, how.limits.max_memory_bytes)
    git_before = git_inert.baseline(how.writable_roots)
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                "-c",
                SUPERVISOR,
                str(store.exit_path(process_id)),
                json.dumps(how.argv(command)),
                str(time_limit),
            ],
            cwd=cwd,
            env=how.env,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=cap.preexec(how.limits),
        )
    except BaseException:
        cap.close()
        remove_scratch(how.scratch)
        store.log_path(process_id).unlink(missing_ok=True)  # no record will ever point at it
        raise
    finally:
        os.close(log_fd)
    me = psutil.Process()
    record = ProcessRecord(
        id=process_id,
        command=command,
        pid=proc.pid,
        cwd=str(cwd),
        pid_create_time=create_time(proc.pid),
        host=socket.gethostname(),
        owner_pid=me.pid,
        owner_create_time=me.create_time(),
        started_at=time.time(),
        notify_on_complete=notify_on_complete,
        conversation_id=conversation_id,
        session_id=session_id,
        watch_patterns=[p for p in watch_patterns if p],
    )
    store.save(record)  # before the watcher starts, so it always finds the record
    patterns = watch.PatternWatch(record.watch_patterns, watch_limits)
    key = (str(store.dir), process_id)
    with _watched_lock:
        _watched.add(key)
    thread = threading.Thread(
        target=_watch,
        args=(store, process_id, proc, key, event_bus, cap, git_before, how, patterns),
        name=f"hermes-{process_id}",
        daemon=True,
    )
    thread.start()
    return record


def _watch(
    store: ProcessStore,
    process_id: str,
    proc: subprocess.Popen[bytes],
    key: tuple[str, str],
    event_bus: events.EventBus | None,
    cap: ProcessGroupCap,
    git_before: git_inert.Baseline,
    how: Launch,
    patterns: watch.PatternWatch,
) -> None:
    try:
        output = PatternOutput(store, process_id, patterns, event_bus)
        code = _wait_within_disk(store, process_id, proc, how, output)
        output.look(ended=True)  # what it printed last is matched too
        cap.close()  # what the command left behind (a setsid child) ends with it
        remove_scratch(how.scratch)
        for done in git_inert.disarm(git_before):
            log.warning("background process %s: made inert: %s", process_id, done)
        recorded = store.read_exit_code(process_id)
        # The supervisor's file holds the command's own code (negative for a signal);
        # without it (supervisor killed) the supervisor's code is the best we know.
        finish(store, process_id, code if recorded is None else recorded, event_bus=event_bus)
    except Exception:
        log.exception("Watching background process %s failed", process_id)
    finally:
        cap.close()
        remove_scratch(how.scratch)
        with _watched_lock:
            _watched.discard(key)


class PatternOutput:
    """The watch patterns of one process, fed from its log by its watcher thread."""

    def __init__(
        self,
        store: ProcessStore,
        process_id: str,
        patterns: watch.PatternWatch,
        event_bus: events.EventBus | None,
    ) -> None:
        self.store, self.process_id, self.patterns = store, process_id, patterns
        self.event_bus = event_bus
        self.lines = watch.LogLines(str(store.log_path(process_id)))

    @property
    def active(self) -> bool:
        return bool(self.patterns.patterns) and not self.patterns.disabled

    def look(self, *, ended: bool = False) -> None:
        """Match the lines printed since the last look (a block of them; all once the
        process has ended); tell what is due."""
        while self.active:
            lines = self.lines.rest() if ended else self.lines.new_lines()
            if not lines:
                return
            for notice in self.patterns.feed(lines):
                self._tell(notice)
            if not ended:
                return

    def _tell(self, notice: watch.Notice) -> None:
        if notice.kind == watch.WATCH_MATCH:
            record = self.store.update(self.process_id, watch_hits=self.patterns.hits)
        elif notice.kind == watch.WATCH_DISABLED:
            # Promoted before the exit is recorded, so the completion event is produced.
            record = self.store.update(
                self.process_id, watch_disabled=True, notify_on_complete=True
            )
        else:
            record = self.store.load(self.process_id)
        if record is not None:
            events.emit_notice(self.store.dir.parent, record, notice, self.event_bus)


def _wait_within_disk(
    store: ProcessStore,
    process_id: str,
    proc: subprocess.Popen[bytes],
    how: Launch,
    output: PatternOutput,
) -> int:
    """Wait for the process, matching its output to its watch patterns as it comes;
    kill its group when it passes a disk limit (its /tmp, the workspace's quota),
    saying so in its log."""
    while True:
        try:
            return proc.wait(timeout=_WATCH_INTERVAL if output.active else 1.0)
        except subprocess.TimeoutExpired:
            pass
        output.look()
        passed = how.disk_watch.passed() if how.disk_watch else None
        if passed:
            with open(store.log_path(process_id), "a", encoding="utf-8") as log_file:
                log_file.write(f"\n[hermes: {passed}]\n")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return proc.wait()


def finish(
    store: ProcessStore,
    process_id: str,
    exit_code: int | None,
    status: str | None = None,
    *,
    event_bus: events.EventBus | None = None,
) -> ProcessRecord | None:
    """Record the end of a process (first caller wins) and produce its event once (for
    ``event_bus``, see ``events.emit_once``)."""
    current = store.load(process_id)
    if current is None:
        return None
    if status is None:
        status = KILLED if current.kill_requested else EXITED
    record, _ = store.finish(process_id, exit_code, status, time.time())
    if record is not None and record.finished:
        # Also when another caller recorded it: if that caller died before producing
        # the event, this produces it; the claim file keeps it to one.
        events.emit_once(store.dir.parent, record, event_bus)
    return record


def refresh(
    store: ProcessStore, record: ProcessRecord, event_bus: events.EventBus | None = None
) -> ProcessRecord:
    """The record, updated if its process ended without anyone recording it (an event
    this produces goes to ``event_bus``)."""
    if record.finished:
        # Recorded but maybe not yet claimed: the recorder produces the event for its own
        # bus a moment later, unless it died half-way; only then is the event ours to claim.
        if not (_is_watched(store, record.id) or _owner_alive(record)):
            events.emit_once(store.dir.parent, record, event_bus)
        return record
    if record.host not in (None, socket.gethostname()):
        return record  # another machine's process: we cannot look at it
    if _is_watched(store, record.id) or pid_alive(record.pid, record.pid_create_time):
        return record
    if _owner_alive(record):
        return record  # its owner's watcher is about to record the real exit
    code = store.read_exit_code(record.id)
    if code is not None:
        return finish(store, record.id, code, event_bus=event_bus) or record
    status = KILLED if record.kill_requested else LOST
    return finish(store, record.id, None, status, event_bus=event_bus) or record


def refresh_all(hermes_home: Path, event_bus: events.EventBus | None = None) -> list[ProcessRecord]:
    store = ProcessStore(hermes_home)
    return [refresh(store, record, event_bus) for record in store.all()]


def drain_events(hermes_home: Path) -> list[events.CompletionEvent]:
    """Take the spooled completion events of this HERMES_HOME, oldest first.

    First notices processes that ended while no hermes process watched them, so their
    events are produced too. Each event is returned by exactly one call, in one process.
    """
    refresh_all(Path(hermes_home))
    return events.take_spooled(hermes_home)


def load(
    hermes_home: Path, process_id: str, event_bus: events.EventBus | None = None
) -> ProcessRecord | None:
    store = ProcessStore(hermes_home)
    record = store.load(process_id)
    return refresh(store, record, event_bus) if record else None


def wait(
    hermes_home: Path,
    process_id: str,
    timeout: float,
    event_bus: events.EventBus | None = None,
) -> ProcessRecord | None:
    """Wait up to ``timeout`` seconds for the process to end; returns its latest record."""
    deadline = time.monotonic() + max(0.0, timeout)
    while True:
        record = load(hermes_home, process_id, event_bus)
        if record is None or record.finished or time.monotonic() >= deadline:
            return record
        time.sleep(min(_POLL_INTERVAL, max(0.0, deadline - time.monotonic())))


def kill(
    hermes_home: Path,
    process_id: str,
    grace: float = 3.0,
    event_bus: events.EventBus | None = None,
) -> ProcessRecord | None:
    """Stop the process's whole group: SIGTERM, then SIGKILL after ``grace`` seconds."""
    store = ProcessStore(hermes_home)
    record = load(hermes_home, process_id, event_bus)
    if record is None or record.finished:
        return record
    store.update(process_id, kill_requested=True)
    for sig, patience in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        if pid_alive(record.pid, record.pid_create_time):
            _signal_group(record.pid, sig)
        record = wait(hermes_home, process_id, patience, event_bus) or record
        if record.finished:
            return record
    # Still not recorded: nobody is watching it and it left no exit file.
    return finish(store, process_id, -signal.SIGKILL, KILLED, event_bus=event_bus)


def running_of(
    hermes_home: Path, conversations: set[str], *, owner_pid: int | None = None
) -> list[ProcessRecord]:
    """The running processes a chat may stop (``/stop``): those started in one of
    ``conversations`` (conversation or segment ids), and, with ``owner_pid``, those
    that process started (the terminal chat's, whatever conversation they were for)."""

    def ours(record: ProcessRecord) -> bool:
        started_in = {record.conversation_id, record.session_id} & conversations
        return bool(started_in) or (owner_pid is not None and record.owner_pid == owner_pid)

    return [r for r in refresh_all(hermes_home) if not r.finished and ours(r)]


def kill_running(
    hermes_home: Path,
    conversations: set[str],
    *,
    owner_pid: int | None = None,
    event_bus: events.EventBus | None = None,
) -> list[ProcessRecord]:
    """Stop what ``running_of`` finds; the records of the processes stopped."""
    stopped = []
    for record in running_of(hermes_home, conversations, owner_pid=owner_pid):
        ended = kill(hermes_home, record.id, event_bus=event_bus)
        if ended is not None:
            stopped.append(ended)
    return stopped


# Set in a foreground command's environment (inherited by all it starts) to its record's
# id: a command whose hermes process died before its pid was recorded is still found.
RUN_MARKER = "HERMES_TOOL_RUN"


def record_foreground(hermes_home: Path, command: str, conversation_id: str | None) -> str:
    """Note a foreground command about to start (``started`` once it has a pid,
    ``forget_foreground`` when it ends), so that if this process dies with it, a later
    start ends it (``end_orphaned``); start it with ``RUN_MARKER`` = the returned id."""
    me = psutil.Process()
    record = ProcessRecord(
        id=new_process_id(),
        command=command,
        pid=0,
        host=socket.gethostname(),
        owner_pid=me.pid,
        owner_create_time=me.create_time(),
        started_at=time.time(),
        conversation_id=conversation_id,
    )
    ProcessStore(hermes_home).save_foreground(record)
    return record.id


def started(hermes_home: Path, process_id: str, pid: int) -> None:
    store = ProcessStore(hermes_home)
    record = next((r for r in store.all_foreground() if r.id == process_id), None)
    if record is not None:
        record.pid, record.pid_create_time = pid, create_time(pid)
        store.save_foreground(record)


def forget_foreground(hermes_home: Path, process_id: str) -> None:
    ProcessStore(hermes_home).drop_foreground(process_id)


def end_orphaned(hermes_home: Path) -> list[ProcessRecord]:
    """End the foreground commands of this host whose hermes process died while they
    ran (their turn is gone, nobody will read their result): their whole process group,
    and anything else carrying their ``RUN_MARKER``, SIGTERM then SIGKILL. Returns the
    records of those that were still running."""
    store = ProcessStore(hermes_home)
    dead = [
        r
        for r in store.all_foreground()
        if r.host in (None, socket.gethostname())
        and r.owner_pid != os.getpid()  # ours: still running in another thread
        and not _owner_alive(r)
    ]
    if not dead:
        return []
    marked = _marked_processes({r.id for r in dead})
    ended = []
    for record in dead:
        procs = marked.get(record.id, [])
        if record.pid and pid_alive(record.pid, record.pid_create_time):
            _signal_group(record.pid, signal.SIGTERM)
            procs = [*procs, psutil.Process(record.pid)]
        if procs:
            _end(procs)
            ended.append(record)
            log.info("ended %s of a turn whose process died", record.command)
        store.drop_foreground(record.id)
    return ended


def _marked_processes(ids: set[str]) -> dict[str, list[psutil.Process]]:
    """The live processes whose environment carries one of ``ids`` as ``RUN_MARKER``."""
    found: dict[str, list[psutil.Process]] = {}
    for proc in psutil.process_iter():
        try:
            mark = proc.environ().get(RUN_MARKER)
        except psutil.Error:
            continue
        if mark in ids:
            found.setdefault(mark, []).append(proc)
    return found


def _end(procs: list[psutil.Process]) -> None:
    for proc in procs:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=2.0)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=2.0)


def pid_alive(pid: int, create_time: float | None) -> bool:
    """Whether ``pid`` is the same live process (not a zombie, not a reused pid)."""
    try:
        proc = psutil.Process(pid)
        if (
            create_time is not None
            and abs(proc.create_time() - create_time) > _CREATE_TIME_TOLERANCE
        ):
            return False
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # it exists, it just is not ours to inspect


def _owner_alive(record: ProcessRecord) -> bool:
    if record.owner_pid is None or record.owner_pid == os.getpid():
        return False  # we own it yet do not watch it: nobody else will record it
    return pid_alive(record.owner_pid, record.owner_create_time)


def _is_watched(store: ProcessStore, process_id: str) -> bool:
    with _watched_lock:
        return (str(store.dir), process_id) in _watched


def create_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _signal_group(pid: int, sig: int) -> None:
    if pid in (os.getpid(), os.getpgrp()):
        return  # a record pointing at ourselves (a reused pid) must never take us down
    try:
        os.killpg(pid, sig)  # started with start_new_session, so its group id is its pid
    except ProcessLookupError:
        pass
    except PermissionError:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
