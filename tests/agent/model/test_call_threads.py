"""The threads model calls run in: kept between calls, never shared while busy, daemons
that let a process exit, and forgotten by a forked child."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from hermes.agent.model import call_threads
from hermes.agent.model.call_threads import run_in_thread


def _run(work) -> int:
    """Run ``work`` in a call thread and wait; the ident of the thread it ran in."""
    done = threading.Event()
    seen: list[int] = []

    def job() -> None:
        seen.append(threading.get_ident())
        work()
        done.set()

    run_in_thread(job)
    assert done.wait(10)
    return seen[0]


def test_a_finished_call_leaves_its_thread_for_the_next() -> None:
    first = _run(lambda: None)
    threading.Event().wait(0.05)  # let the thread put itself back among the idle
    assert all(_run(lambda: None) == first for _ in range(20))


def test_a_busy_thread_is_not_given_the_next_call() -> None:
    release = threading.Event()
    busy_started = threading.Event()
    busy: list[int] = []

    def stuck() -> None:
        busy.append(threading.get_ident())
        busy_started.set()
        release.wait(30)

    run_in_thread(stuck)  # an abandoned call, say
    assert busy_started.wait(10)
    try:
        other = _run(lambda: None)  # would hang if it waited behind ``stuck``
        assert other != busy[0]
    finally:
        release.set()


def test_no_more_than_keep_threads_wait_idle() -> None:
    release = threading.Event()
    started = threading.Semaphore(0)
    count = call_threads.KEEP + 5

    def hold() -> None:
        started.release()
        release.wait(30)

    for _ in range(count):
        run_in_thread(hold)
    for _ in range(count):
        assert started.acquire(timeout=10)
    release.set()
    for _ in range(200):  # the threads return themselves (or end) as they finish
        if len(call_threads._idle) == call_threads.KEEP:
            break
        threading.Event().wait(0.02)
    assert len(call_threads._idle) == call_threads.KEEP


def test_a_process_exits_while_a_call_still_runs() -> None:
    script = (
        "import threading\n"
        "from hermes.agent.model.call_threads import run_in_thread\n"
        "started = threading.Event()\n"
        "run_in_thread(lambda: (started.set(), threading.Event().wait(600)))\n"
        "started.wait(10)\n"
        "print('leaving')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "leaving"


def test_a_forked_child_starts_its_own_threads() -> None:
    _run(lambda: None)  # the parent keeps an idle thread, which the child lacks
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a call must run, not wait on a thread that is not there
        try:
            done = threading.Event()
            run_in_thread(done.set)
            os.write(write, b"ran" if done.wait(10) else b"hung")
        finally:
            os._exit(0)
    os.close(write)
    try:
        answer = os.read(read, 16)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    assert answer == b"ran"
