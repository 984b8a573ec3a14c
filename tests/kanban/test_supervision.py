"""hermes's dispatcher watching the workers it starts (hermes/kanban/supervision.py), on a
real board with real ``hermes -p builder kanban work`` workers, whose turn hangs on the
fake model: a worker killed by a signal is a crash, counted once and blocked at the
limit; a worker past its task's runtime is stopped; what exits is reaped. Workers are
stopped by pid at the end."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import psutil
import pytest
from hermes_cli import kanban_db as kb

from hermes import profiles
from hermes.testing import llm_server as fake

T = TypeVar("T")
HANG = fake.hang(120.0)  # the worker's turn waits on the model until it is stopped


@pytest.fixture
def board(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    kb.init_db()
    return home


@pytest.fixture
def builder(board: Path, fake_llm: fake.FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HERMES_BASE_URL", fake_llm.url)
    monkeypatch.setenv("HERMES_MODEL", fake.DEFAULT_MODEL)
    profiles.create("builder")
    return "builder"


@pytest.fixture
def workers() -> Iterator[list[int]]:
    """The pids of the workers a test started; any still running is killed and reaped."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)


def wait_until(condition: Callable[[], T], what: str) -> T:
    deadline = time.monotonic() + 60
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return value


def exited(pid: int) -> bool:
    """Whether the process has stopped running (gone, or a zombie not reaped yet)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def worker_pid(conn: sqlite3.Connection, task_id: str) -> int:
    task = kb.get_task(conn, task_id)
    assert task is not None and task.worker_pid
    return task.worker_pid


def start_worker(conn: sqlite3.Connection, task_id: str, workers: list[int]) -> int:
    """One tick that starts the task's worker; its pid."""
    result = kb.dispatch_once(conn)
    assert [s[0] for s in result.spawned] == [task_id]
    workers.append(worker_pid(conn, task_id))
    return workers[-1]


def watch_only(conn: sqlite3.Connection) -> kb.DispatchResult:
    """A tick that watches the workers and starts none (``max_spawn=0``)."""
    return kb.dispatch_once(conn, max_spawn=0, failure_limit=2)


def heartbeat_of(conn: sqlite3.Connection, task_id: str) -> int | None:
    task = kb.get_task(conn, task_id)
    return task.last_heartbeat_at if task else None


def kinds(conn: sqlite3.Connection, task_id: str) -> list[str]:
    return [e.kind for e in kb.list_events(conn, task_id)]


def test_a_killed_worker_is_a_crash_counted_once_then_blocked_at_the_limit(
    board: Path,
    builder: str,
    fake_llm: fake.FakeLLMServer,
    workers: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HERMES_KANBAN_CRASH_GRACE_SECONDS", "0")
    fake_llm.script(HANG, HANG)
    with kb.connect_closing() as conn:
        task_id = kb.create_task(conn, title="Long job", assignee=builder)

        first = start_worker(conn, task_id, workers)
        os.kill(first, signal.SIGKILL)
        wait_until(lambda: exited(first), "the killed worker to exit")
        crash = watch_only(conn)
        after_crash = kb.get_task(conn, task_id)
        again = watch_only(conn)

        second = start_worker(conn, task_id, workers)
        os.kill(second, signal.SIGKILL)
        wait_until(lambda: exited(second), "the second worker to exit")
        limit = watch_only(conn)
        blocked = kb.get_task(conn, task_id)
        runs = kb.list_runs(conn, task_id)
        events = kb.list_events(conn, task_id)

    assert crash.crashed == [task_id] and crash.auto_blocked == []
    assert after_crash is not None
    assert (after_crash.status, after_crash.worker_pid, after_crash.claim_lock) == (
        "ready",
        None,
        None,
    )
    assert after_crash.consecutive_failures == 1
    assert again.crashed == []  # counted once
    assert limit.crashed == [task_id] and limit.auto_blocked == [task_id]
    assert blocked is not None and blocked.status == "blocked"
    assert [(r.outcome, r.ended_at is not None) for r in runs] == [
        ("crashed", True),
        ("crashed", True),
    ]
    assert runs[0].error == f"pid {first} killed by signal 9 (SIGKILL)"
    crashed = [e for e in events if e.kind == "crashed"]
    assert [e.payload["pid"] for e in crashed if e.payload] == [first, second]
    assert crashed[0].payload == {
        "pid": first,
        "claimer": kb._claimer_id(),
        "exit_kind": "signaled",
        "exit_code": 9,
    }
    assert [e.kind for e in events].count("gave_up") == 1
    assert not psutil.pid_exists(first) and not psutil.pid_exists(second)  # reaped


def test_a_worker_past_its_max_runtime_is_stopped_and_its_task_put_back(
    board: Path, builder: str, fake_llm: fake.FakeLLMServer, workers: list[int]
) -> None:
    fake_llm.script(HANG)
    with kb.connect_closing() as conn:
        task_id = kb.create_task(conn, title="Bounded", assignee=builder, max_runtime_seconds=1)
        pid = start_worker(conn, task_id, workers)
        timed_out = wait_until(lambda: watch_only(conn).timed_out, "the runtime limit")
        stopped = exited(pid)
        task = kb.get_task(conn, task_id)
        runs = kb.list_runs(conn, task_id)
        watch_only(conn)  # the next tick reaps it
        events = kinds(conn, task_id)
    assert timed_out == [task_id]
    assert stopped
    assert task is not None and (task.status, task.worker_pid) == ("ready", None)
    assert task.consecutive_failures == 1
    assert [r.outcome for r in runs] == ["timed_out"]
    assert events.count("timed_out") == 1 and "crashed" not in events
    assert not psutil.pid_exists(pid)


def test_the_dispatcher_reaps_only_the_workers_it_started(board: Path) -> None:
    """A process that dispatches also runs children of its own: their exit codes stay
    theirs (0.19's reaper takes every child, and ``wait`` then reports 0)."""
    other = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    try:
        wait_until(lambda: exited(other.pid), "the other child to exit")
        with kb.connect_closing() as conn:
            kb.dispatch_once(conn)
        assert other.wait(timeout=30) == 3
    finally:
        with contextlib.suppress(OSError):
            other.kill()
        other.wait(timeout=30)


def test_a_worker_in_its_turn_beats_so_the_stale_check_leaves_it_alone(
    board: Path, builder: str, fake_llm: fake.FakeLLMServer, workers: list[int]
) -> None:
    fake_llm.script(HANG)
    with kb.connect_closing() as conn:
        task_id = kb.create_task(conn, title="Slow but alive", assignee=builder)
        pid = start_worker(conn, task_id, workers)
        beat = wait_until(lambda: heartbeat_of(conn, task_id), "the worker's heartbeat")
        # Its attempt started two hours ago, as if the turn had been that long.
        conn.execute(
            "UPDATE task_runs SET started_at = started_at - 7200 "
            "WHERE id = (SELECT current_run_id FROM tasks WHERE id = ?)",
            (task_id,),
        )
        result = kb.dispatch_once(conn, max_spawn=0, stale_timeout_seconds=3600)
        task = kb.get_task(conn, task_id)
        events = kinds(conn, task_id)
    assert beat is not None and result.stale == []
    assert task is not None and (task.status, task.worker_pid) == ("running", pid)
    assert "heartbeat" not in events  # the worker's beats stay out of the board's feed
    assert not exited(pid)


def test_a_worker_that_stops_at_a_rate_limit_is_requeued_without_a_failure(
    board: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller's workers, real processes: one exits with 0.19's rate-limit code (75), the
    other with 3. The first is no crash and counts no failure; the second is a crash."""
    monkeypatch.setenv("HERMES_KANBAN_CRASH_GRACE_SECONDS", "0")
    started: list[subprocess.Popen[bytes]] = []

    def spawn(task: kb.Task, workspace: str) -> int:
        code = kb.KANBAN_RATE_LIMIT_EXIT_CODE if task.title == "Throttled" else 3
        started.append(subprocess.Popen([sys.executable, "-c", f"raise SystemExit({code})"]))
        return started[-1].pid

    try:
        with kb.connect_closing() as conn:
            throttled = kb.create_task(conn, title="Throttled", assignee="builder")
            failing = kb.create_task(conn, title="Failing", assignee="builder")
            assert len(kb.dispatch_once(conn, spawn_fn=spawn).spawned) == 2
            pids = {task_id: worker_pid(conn, task_id) for task_id in (throttled, failing)}
            for pid in pids.values():
                wait_until(lambda pid=pid: exited(pid), "the workers to exit")
            result = kb.dispatch_once(conn, spawn_fn=spawn, max_spawn=0)
            waiting, crashed = kb.get_task(conn, throttled), kb.get_task(conn, failing)
            throttled_runs, failing_runs = (
                kb.list_runs(conn, throttled),
                kb.list_runs(conn, failing),
            )
    finally:
        for process in started:
            with contextlib.suppress(OSError):
                process.kill()
            process.wait(timeout=30)
    assert result.rate_limited == [throttled] and result.crashed == [failing]
    assert waiting is not None and (waiting.status, waiting.consecutive_failures) == ("ready", 0)
    assert "rate-limited" in (waiting.last_failure_error or "")
    assert [r.outcome for r in throttled_runs] == ["rate_limited"]
    assert crashed is not None and (crashed.status, crashed.consecutive_failures) == ("ready", 1)
    assert [(r.outcome, r.error) for r in failing_runs] == [
        ("crashed", f"pid {pids[failing]} exited with code 3")
    ]
