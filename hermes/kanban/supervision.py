"""Watching the workers a dispatcher started, as 0.19 does: each tick reaps the workers
that exited, puts back a task whose claim expired (unless its worker is alive and still
working), whose worker stopped showing progress, whose worker died, or whose attempt ran
past its ``max_runtime_seconds``; and counts the failures that block a task at its limit.

A worker is ``hermes -p ASSIGNEE kanban work TASK`` (or what the caller's ``spawn_fn``
started), its pid on the task. Only claims made on this host are judged by pid: a pid
from another host means nothing here.

The probes that ask the operating system (``pid_alive``, ``terminate_worker``,
``record_worker_exit``) are passed in by keyword, so 0.19's ``hermes_cli.kanban_db``
can hand over the ones a tool or test put in its place.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import psutil

from hermes.kanban.db import write_txn
from hermes.kanban.flow import back_to_ready, claim_ttl_seconds, claimer_id
from hermes.kanban.records import DispatchResult
from hermes.kanban.tasks import DEFAULT_FAILURE_LIMIT, append_event, close_run, task_fields

# A freshly started worker may not be visible yet: no crash is judged this soon.
DEFAULT_CRASH_GRACE_SECONDS = 30
# A live worker whose heartbeat is older than this is wedged: its claim is not extended.
DEFAULT_CLAIM_HEARTBEAT_MAX_STALE_SECONDS = 60 * 60
# A worker that survives termination keeps its claim this much longer (no duplicate).
RECLAIM_DEFER_GRACE_SECONDS = 120
# ``detect_stale_running``: no heartbeat for this long counts as no progress.
STALE_HEARTBEAT_GAP_SECONDS = 60 * 60
# This many crashes with the same error in one tick are the system's fault, not the
# task's: each is blocked at its first failure.
SYSTEMIC_CRASH_COUNT = 3
# A worker's exit code for "stopped at a provider's rate limit" (sysexits' EX_TEMPFAIL).
KANBAN_RATE_LIMIT_EXIT_CODE = 75
# What a worker's terminal commands leave of its task's max runtime, to report or block the
# task before the runtime's limit stops the worker.
KANBAN_TERMINAL_TIMEOUT_GRACE_SECONDS = 30
# How long a SIGTERMed worker has to stop before SIGKILL.
TERMINATE_WAIT_SECONDS = 5.0

PidAlive = Callable[[int | None], bool]
SignalFn = Callable[[int, int], Any]
Terminate = Callable[..., dict[str, Any]]
RecordExit = Callable[[int, int], None]

# Exit statuses of reaped workers, by pid, until a tick reads them (bounded: pids cycle).
_EXITS_MAX = 4096
_exits: dict[int, int] = {}
# The workers this process started and has not reaped yet.
_started: set[int] = set()
_lock = threading.Lock()


def worker_terminal_timeout(max_runtime_seconds: Any, current: Any) -> int | None:
    """The terminal timeout a worker's commands get under a task's max runtime: the
    runtime less ``KANBAN_TERMINAL_TIMEOUT_GRACE_SECONDS`` (at least 1s) when that is
    longer than ``current`` (so a long build is not cut off by the usual terminal
    default first); ``None`` to keep ``current`` (no runtime, or ``current`` is longer)."""
    try:
        runtime = int(max_runtime_seconds)
    except (TypeError, ValueError):
        return None
    if runtime <= 0:
        return None
    wanted = max(1, runtime - KANBAN_TERMINAL_TIMEOUT_GRACE_SECONDS)
    try:
        have = float(current) if current is not None else 0.0
    except (TypeError, ValueError):
        have = 0.0
    return wanted if wanted > have else None


def crash_grace_seconds() -> int:
    """``HERMES_KANBAN_CRASH_GRACE_SECONDS`` (0 or more), else 30."""
    raw = os.environ.get("HERMES_KANBAN_CRASH_GRACE_SECONDS", "").strip()
    try:
        value = int(raw) if raw else -1
    except ValueError:
        value = -1
    return value if value >= 0 else DEFAULT_CRASH_GRACE_SECONDS


def this_host(claim_lock: str | None) -> bool:
    """Whether a claim (``host:who``) was made on this host."""
    host = claimer_id().split(":", 1)[0]
    return bool(claim_lock) and str(claim_lock).startswith(f"{host}:")


def pid_alive(pid: int | None) -> bool:
    """Whether ``pid`` runs on this host; an exited child not reaped yet (a zombie) is
    not running."""
    if not pid or pid <= 0:
        return False
    try:
        return bool(psutil.Process(int(pid)).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:  # gone (or a zombie psutil cannot read)
        return False
    except psutil.AccessDenied:  # someone else's process: it exists
        return True


def signal_worker(pid: int, sig: int) -> None:
    """Signal a worker and what it started: a worker leads its own session (it is started
    with ``start_new_session``), so its process group goes with it."""
    with contextlib.suppress(OSError):
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
            return
    os.kill(pid, sig)


def _kill_if_still_alive(pid: int, kill: SignalFn, alive: PidAlive) -> bool:
    """After SIGTERM: a few seconds to stop, then SIGKILL; whether SIGKILL was sent."""
    deadline = time.monotonic() + TERMINATE_WAIT_SECONDS
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if not alive(pid):
        return False
    try:
        kill(pid, signal.SIGKILL)
    except OSError:
        return False
    return True


def terminate_worker(
    pid: int | None,
    claim_lock: str | None,
    *,
    signal_fn: SignalFn | None = None,
    pid_alive: PidAlive = pid_alive,
) -> dict[str, Any]:
    """Stop a claim's worker if it runs on this host; what was done, as 0.19 reports it in
    the ``reclaimed`` event (``host_local``, ``termination_attempted``, ``terminated``,
    ``sigkill``)."""
    info: dict[str, Any] = {
        "prev_pid": int(pid) if pid else None,
        "host_local": False,
        "termination_attempted": False,
        "terminated": False,
        "sigkill": False,
    }
    if not pid or pid <= 0 or not this_host(claim_lock):
        return info
    info["host_local"] = True
    info["termination_attempted"] = True
    kill = signal_fn or signal_worker
    try:
        kill(int(pid), signal.SIGTERM)
    except ProcessLookupError:
        info["terminated"] = True  # already gone
        return info
    except OSError:
        return info
    info["sigkill"] = _kill_if_still_alive(int(pid), kill, pid_alive)
    info["terminated"] = not pid_alive(pid)
    return info


def survived(termination: dict[str, Any]) -> bool:
    """Whether our own worker is still alive after we tried to stop it: releasing its claim
    would start a second worker beside it."""
    return bool(
        termination.get("termination_attempted")
        and termination.get("host_local")
        and not termination.get("terminated")
    )


def _hold_claim(
    conn: sqlite3.Connection,
    task_id: str,
    claim_lock: str | None,
    expires: int,
    event: str,
    payload: dict[str, Any],
) -> bool:
    """Move a running claim's expiry to ``expires`` (task and run) with an event."""
    with write_txn(conn):
        held = conn.execute(
            "UPDATE tasks SET claim_expires = ? "
            "WHERE id = ? AND status = 'running' AND claim_lock IS ?",
            (expires, task_id, claim_lock),
        ).rowcount
        if held != 1:
            return False
        run_id = task_fields(conn, task_id, "current_run_id")["current_run_id"]
        if run_id is not None:
            conn.execute("UPDATE task_runs SET claim_expires = ? WHERE id = ?", (expires, run_id))
        append_event(conn, task_id, event, payload, run_id=run_id)
    return True


def _defer(
    conn: sqlite3.Connection,
    task_id: str,
    claim_lock: str | None,
    now: int,
    termination: dict[str, Any],
    reason: str,
) -> None:
    expires = now + RECLAIM_DEFER_GRACE_SECONDS
    payload = {"reason": reason, "claim_lock": claim_lock, "claim_expires_now": expires}
    _hold_claim(conn, task_id, claim_lock, expires, "reclaim_deferred", payload | termination)


def _int_or_none(value: Any) -> int | None:
    return int(value) if value is not None else None


def release_stale_claims(
    conn: sqlite3.Connection,
    *,
    signal_fn: SignalFn | None = None,
    pid_alive: PidAlive = pid_alive,
    terminate: Terminate = terminate_worker,
) -> int:
    """Put back to ``ready`` each running task whose claim expired, closing its run as
    ``reclaimed``; how many. A claim whose worker on this host is alive and not wedged
    (heartbeat within the hour) is extended instead (``claim_extended``); one whose
    worker survives being stopped is held a little longer (``reclaim_deferred``)."""
    now = int(time.time())
    released = 0
    stale = conn.execute(
        "SELECT id, claim_lock, worker_pid, claim_expires, last_heartbeat_at FROM tasks "
        "WHERE status = 'running' AND claim_expires IS NOT NULL AND claim_expires < ?",
        (now,),
    ).fetchall()
    for row in stale:
        lock, pid, beat = row["claim_lock"], row["worker_pid"], row["last_heartbeat_at"]
        host_local = this_host(lock)
        wedged = beat is not None and now - int(beat) > DEFAULT_CLAIM_HEARTBEAT_MAX_STALE_SECONDS
        if host_local and pid and not wedged and pid_alive(pid):
            expires = now + claim_ttl_seconds()
            payload = {
                "reason": "pid_alive",
                "worker_pid": int(pid),
                "claim_lock": lock,
                "claim_expires_was": int(row["claim_expires"]),
                "claim_expires_now": expires,
                "last_heartbeat_at": _int_or_none(beat),
            }
            _hold_claim(conn, row["id"], lock, expires, "claim_extended", payload)
            continue
        termination = terminate(pid, lock, signal_fn=signal_fn)
        if survived(termination):
            _defer(conn, row["id"], lock, now, termination, "ttl_expired_worker_alive")
            continue
        with write_txn(conn):
            if not back_to_ready(
                conn,
                row["id"],
                where=" AND claim_lock IS ? AND claim_expires IS NOT NULL AND claim_expires < ?",
                params=(lock, now),
            ):
                continue
            run_id = close_run(
                conn,
                row["id"],
                outcome="reclaimed",
                summary="claim expired (no heartbeat)",
                error=f"stale_lock={lock}",
                metadata=termination,
            )
            payload = {
                "stale_lock": lock,
                "worker_pid": _int_or_none(pid),
                "claim_expires": int(row["claim_expires"]),
                "last_heartbeat_at": _int_or_none(beat),
                "now": now,
                "host_local": host_local,
                "heartbeat_stale": wedged,
            }
            append_event(conn, row["id"], "reclaimed", payload | termination, run_id=run_id)
            released += 1
    return released


def heartbeat_worker(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    note: str | None = None,
    expected_run_id: int | None = None,
    quiet: bool = False,
) -> bool:
    """A running task's worker says it is making progress: ``last_heartbeat_at`` on the
    task and its run, and a ``heartbeat`` event unless ``quiet`` (hermes's own worker
    beats every minute of its turn, too often for the board's feed). Whether the task
    was running (in ``expected_run_id``, when given)."""
    now = int(time.time())
    query = "UPDATE tasks SET last_heartbeat_at = ? WHERE id = ? AND status = 'running'"
    params: list[Any] = [now, task_id]
    if expected_run_id is not None:
        query += " AND current_run_id = ?"
        params.append(int(expected_run_id))
    with write_txn(conn):
        if conn.execute(query, params).rowcount != 1:
            return False
        run_id = task_fields(conn, task_id, "current_run_id")["current_run_id"]
        if run_id is not None:
            conn.execute("UPDATE task_runs SET last_heartbeat_at = ? WHERE id = ?", (now, run_id))
        if not quiet:
            append_event(
                conn, task_id, "heartbeat", {"note": note} if note else None, run_id=run_id
            )
    return True


def _running_since(conn: sqlite3.Connection, extra_where: str = "") -> list[sqlite3.Row]:
    """Running tasks with the start of their current attempt (the run's start; the task's
    ``started_at`` is its first attempt's)."""
    return conn.execute(
        "SELECT t.id, t.worker_pid, t.claim_lock, t.last_heartbeat_at, t.max_runtime_seconds, "
        "COALESCE(r.started_at, t.started_at) AS attempt_started "
        "FROM tasks t LEFT JOIN task_runs r ON r.id = t.current_run_id "
        "WHERE t.status = 'running'" + extra_where
    ).fetchall()


def detect_stale_running(
    conn: sqlite3.Connection,
    *,
    stale_timeout_seconds: int = 0,
    signal_fn: SignalFn | None = None,
    terminate: Terminate = terminate_worker,
) -> list[str]:
    """Put back to ``ready`` each task running longer than ``stale_timeout_seconds`` with
    no heartbeat in the last hour, stopping its worker (run ``stale``, a ``stale`` event,
    no failure counted: a long task is not a failed one); their ids. 0 turns it off."""
    if stale_timeout_seconds <= 0:
        return []
    now = int(time.time())
    reclaimed: list[str] = []
    for row in _running_since(conn):
        if row["attempt_started"] is None:
            continue
        elapsed = now - int(row["attempt_started"])
        beat = row["last_heartbeat_at"]
        beat_age = now - int(beat) if beat is not None else None
        if elapsed < stale_timeout_seconds or (
            beat_age is not None and beat_age < STALE_HEARTBEAT_GAP_SECONDS
        ):
            continue
        task_id, lock, pid = row["id"], row["claim_lock"], row["worker_pid"]
        termination = terminate(pid, lock, signal_fn=signal_fn)
        if survived(termination):
            _defer(conn, task_id, lock, now, termination, "heartbeat_stale_worker_alive")
            continue
        with write_txn(conn):
            if not back_to_ready(
                conn, task_id, where=" AND claim_lock IS ?", params=(lock,), forget_heartbeat=True
            ):
                continue
            payload = {
                "elapsed_seconds": elapsed,
                "last_heartbeat_at": _int_or_none(beat),
                "heartbeat_age_seconds": beat_age,
                "timeout_seconds": stale_timeout_seconds,
                "pid": _int_or_none(pid),
            } | termination
            silence = f"no heartbeat for {beat_age}s" if beat_age is not None else "no heartbeat"
            run_id = close_run(
                conn,
                task_id,
                outcome="stale",
                error=f"{silence} after {elapsed}s running",
                metadata=payload,
            )
            append_event(conn, task_id, "stale", payload, run_id=run_id)
            reclaimed.append(task_id)
    return reclaimed


def record_failure(
    conn: sqlite3.Connection,
    task_id: str,
    error: str,
    *,
    outcome: str,
    failure_limit: int | None = None,
    release_claim: bool = False,
    end_run: bool = False,
    details: dict[str, Any] | None = None,
) -> bool:
    """Count a failed attempt (``spawn_failed``, ``crashed``, ``timed_out``); at the task's
    limit (its ``max_retries``, else ``failure_limit``) it is blocked with a ``gave_up``
    event (``details`` added to it). ``release_claim`` sends a running task back to
    ``ready``; ``end_run`` closes its run with an event. Whether it was blocked."""
    error = error[:500]
    with write_txn(conn):
        row = task_fields(conn, task_id, "consecutive_failures", "max_retries")
        if row is None:
            return False
        failures = int(row["consecutive_failures"] or 0) + 1
        own = row["max_retries"] is not None
        limit = int(row["max_retries"] if own else (failure_limit or DEFAULT_FAILURE_LIMIT))
        gave_up = failures >= limit
        status = "blocked" if gave_up else ("ready" if release_claim else None)
        claim = ", claim_lock = NULL, claim_expires = NULL, worker_pid = NULL"
        conn.execute(
            "UPDATE tasks SET consecutive_failures = ?, last_failure_error = ?"
            + (", status = ?" if status else "")
            + (claim if release_claim else "")
            + " WHERE id = ?",
            (failures, error, *([status] if status else []), task_id),
        )
        run_id = None
        if end_run:
            run_id = close_run(
                conn,
                task_id,
                outcome="gave_up" if gave_up else outcome,
                error=error,
                metadata={"failures": failures},
            )
        if gave_up:
            payload = {
                "failures": failures,
                "effective_limit": limit,
                "limit_source": "task" if own else "dispatcher",
                "error": error,
                "trigger_outcome": outcome,
            }
            append_event(conn, task_id, "gave_up", payload | (details or {}), run_id=run_id)
        elif end_run:
            append_event(
                conn, task_id, outcome, {"error": error, "failures": failures}, run_id=run_id
            )
    return gave_up


def enforce_max_runtime(
    conn: sqlite3.Connection,
    *,
    signal_fn: SignalFn | None = None,
    pid_alive: PidAlive = pid_alive,
) -> list[str]:
    """Stop each worker on this host whose attempt ran past its task's
    ``max_runtime_seconds`` (SIGTERM, then SIGKILL) and put the task back to ``ready``
    (run and event ``timed_out``, a failure counted); their ids."""
    now = int(time.time())
    timed_out: list[str] = []
    rows = _running_since(
        conn, " AND t.max_runtime_seconds IS NOT NULL AND t.worker_pid IS NOT NULL"
    )
    for row in rows:
        if row["attempt_started"] is None or not this_host(row["claim_lock"]):
            continue
        elapsed, limit = now - int(row["attempt_started"]), int(row["max_runtime_seconds"])
        if elapsed < limit:
            continue
        task_id, pid, lock = row["id"], int(row["worker_pid"]), row["claim_lock"]
        kill = signal_fn or signal_worker
        with contextlib.suppress(OSError):
            kill(pid, signal.SIGTERM)
        sigkill = _kill_if_still_alive(pid, kill, pid_alive)
        error = f"elapsed {elapsed}s > limit {limit}s"
        with write_txn(conn):
            if not back_to_ready(
                conn,
                task_id,
                where=" AND worker_pid = ? AND claim_lock IS ?",
                params=(pid, lock),
                forget_heartbeat=True,
            ):
                continue
            payload = {
                "pid": pid,
                "elapsed_seconds": elapsed,
                "limit_seconds": limit,
                "sigkill": sigkill,
            }
            run_id = close_run(conn, task_id, outcome="timed_out", error=error, metadata=payload)
            append_event(conn, task_id, "timed_out", payload, run_id=run_id)
        timed_out.append(task_id)
        record_failure(
            conn, task_id, error, outcome="timed_out", details={"pid": pid, "sigkill": sigkill}
        )
    return timed_out


def watch(pid: int) -> None:
    """Remember a worker this process started, to reap it when it exits."""
    with _lock:
        _started.add(int(pid))


def record_worker_exit(pid: int, raw_status: int) -> None:
    """Keep a reaped worker's exit status (``os.waitpid``'s) for the crash check."""
    if not pid or pid <= 0:
        return
    with _lock:
        _exits[int(pid)] = int(raw_status)
        while len(_exits) > _EXITS_MAX:
            _exits.pop(next(iter(_exits)))


def reap_worker_zombies(*, record_exit: RecordExit = record_worker_exit) -> list[int]:
    """0.19's reaper: collect every exited child of this process, keeping each exit
    status; the pids. Nothing on Windows."""
    reaped: list[int] = []
    if os.name == "nt":
        return reaped
    try:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            record_exit(pid, status)
            reaped.append(pid)
    except OSError:
        pass
    return reaped


def reap_started_workers(*, record_exit: RecordExit = record_worker_exit) -> list[int]:
    """Collect the exited workers this process started, and only those (the dispatcher's
    reaper: a process that runs other children keeps their exit codes); the pids."""
    reaped: list[int] = []
    if os.name == "nt":
        return reaped
    with _lock:
        pids = sorted(_started)
    for pid in pids:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child, or reaped elsewhere
            done, status = -1, None
        except OSError:
            continue
        if done == 0:
            continue  # still running
        with _lock:
            _started.discard(pid)
        if status is not None:
            record_exit(pid, status)
            reaped.append(pid)
    return reaped


def classify_exit(pid: int) -> tuple[str, int | None]:
    """How a reaped worker ended: ``signaled`` (the signal), ``rate_limited`` (it stopped
    at a provider's rate limit, exit code ``KANBAN_RATE_LIMIT_EXIT_CODE``), ``clean_exit``
    (0, its task still running), ``nonzero_exit`` (the code), or ``unknown`` (not reaped
    here)."""
    with _lock:
        raw = _exits.get(int(pid))
    if raw is not None and os.WIFSIGNALED(raw):
        return "signaled", os.WTERMSIG(raw)
    if raw is not None and os.WIFEXITED(raw):
        code = os.WEXITSTATUS(raw)
        if code == KANBAN_RATE_LIMIT_EXIT_CODE:
            return "rate_limited", code
        return ("clean_exit" if code == 0 else "nonzero_exit"), code
    return "unknown", None


def _death(pid: int) -> tuple[str, str, dict[str, Any]]:
    """A dead worker's end (``classify_exit``), the error its run gets and the event's
    extra fields; its exit status is used up."""
    kind, code = classify_exit(pid)
    with _lock:
        _exits.pop(int(pid), None)
    if kind == "signaled" and code is not None:
        try:
            name = signal.Signals(code).name
        except ValueError:
            name = "unknown"
        error = f"pid {pid} killed by signal {code} ({name})"
    elif kind == "rate_limited":
        error = f"pid {pid} exited rate-limited (quota wall): requeued without counting a failure"
    elif kind == "clean_exit":
        error = f"pid {pid} exited (code 0) without completing or blocking its task"
    elif kind == "nonzero_exit":
        error = f"pid {pid} exited with code {code}"
    else:
        return kind, f"pid {pid} not alive", {}
    return kind, error, {"exit_kind": kind, "exit_code": code}


def fingerprint(error: str) -> str:
    """An error with its pids and timestamps taken out, to tell one cause crashing many
    tasks from many causes."""
    text = re.sub(r"\bpid \d+\b", "pid N", error[:80])
    return re.sub(r"\b\d{10,}\b", "<TS>", text).lower().strip()


def detect_crashed_workers(
    conn: sqlite3.Connection,
    *,
    pid_alive: PidAlive = pid_alive,
    failure_limit: int | None = None,
    auto_blocked: list[str] | None = None,
    rate_limited: list[str] | None = None,
) -> list[str]:
    """Put back to ``ready`` each running task whose worker on this host is dead (run and
    event ``crashed``, a failure counted; blocked at the limit, or at once when
    ``SYSTEMIC_CRASH_COUNT`` tasks crashed with the same error); their ids. A worker
    started less than ``HERMES_KANBAN_CRASH_GRACE_SECONDS`` ago is not judged. Tasks
    blocked go in ``auto_blocked``. A worker that stopped at a rate limit is no crash:
    its task goes back with no failure counted (run and event ``rate_limited``, the
    error kept for the respawn guard), listed in ``rate_limited``."""
    crashed: list[tuple[str, int, str | None, str]] = []
    grace = crash_grace_seconds()
    rows = conn.execute(
        "SELECT id, worker_pid, claim_lock, started_at FROM tasks "
        "WHERE status = 'running' AND worker_pid IS NOT NULL"
    ).fetchall()
    for row in rows:
        lock, pid = row["claim_lock"], int(row["worker_pid"])
        if not this_host(lock):
            continue
        if row["started_at"] is not None and time.time() - int(row["started_at"]) < grace:
            continue
        if pid_alive(pid):
            continue
        kind, error, exit_fields = _death(pid)
        outcome = "rate_limited" if kind == "rate_limited" else "crashed"
        with write_txn(conn):
            if not back_to_ready(
                conn, row["id"], where=" AND worker_pid = ? AND claim_lock IS ?", params=(pid, lock)
            ):
                continue
            payload = {"pid": pid, "claimer": lock} | exit_fields
            run_id = close_run(conn, row["id"], outcome=outcome, error=error, metadata=payload)
            append_event(conn, row["id"], outcome, payload, run_id=run_id)
            if outcome == "rate_limited":
                conn.execute(
                    "UPDATE tasks SET last_failure_error = ? WHERE id = ?", (error, row["id"])
                )
        if outcome == "rate_limited":
            if rate_limited is not None:
                rate_limited.append(row["id"])
            continue
        crashed.append((row["id"], pid, lock, error))
    causes = Counter(fingerprint(error) for *_, error in crashed)
    for task_id, pid, lock, error in crashed:
        systemic = causes[fingerprint(error)] >= SYSTEMIC_CRASH_COUNT
        blocked = record_failure(
            conn,
            task_id,
            error,
            outcome="crashed",
            failure_limit=1 if systemic else failure_limit,
            details={"pid": pid, "claimer": lock},
        )
        if blocked and auto_blocked is not None:
            auto_blocked.append(task_id)
    return [task_id for task_id, *_ in crashed]


def supervise(
    conn: sqlite3.Connection,
    result: DispatchResult,
    *,
    stale_timeout_seconds: int = 0,
    failure_limit: int | None = None,
) -> None:
    """The supervision part of a dispatcher tick, in 0.19's order, into ``result``: reap
    the workers this process started, then expired claims, stale, crashed and timed-out
    workers."""
    reap_started_workers()
    result.reclaimed = release_stale_claims(conn)
    result.stale = detect_stale_running(conn, stale_timeout_seconds=stale_timeout_seconds)
    result.crashed = detect_crashed_workers(
        conn,
        failure_limit=failure_limit,
        auto_blocked=result.auto_blocked,
        rate_limited=result.rate_limited,
    )
    result.timed_out = enforce_max_runtime(conn)
