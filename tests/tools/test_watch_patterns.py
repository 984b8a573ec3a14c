"""Watch patterns of background processes: real processes, their real logs, notices on
the conversation's bus, rate-limited as Hermes Agent 0.19's are.

Time is the test's clock (``WatchLimits(clock=...)``): each process prints one line per
step, and the test sets the time before letting it print the next one, so the rate
limits are driven without waiting a second of them.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from hermes.tools import CompletionEvent, ToolContext
from hermes.tools.guards.launch import launch_for
from hermes.tools.processes import background, watch
from hermes.tools.processes.store import ProcessStore


class StepClock:
    """A clock the test sets; it counts how often the watcher read it (once per look
    that found a matching line)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.reads = 0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            self.reads += 1
            return self.now


def _wait_until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def _stepped_command(steps: int) -> str:
    """Print ``tick <i>`` for each step once the file ``go.<i>`` exists (the first at once)."""
    return (
        f"for i in $(seq 1 {steps}); do "
        'if [ "$i" -gt 1 ]; then while [ ! -e "go.$i" ]; do sleep 0.02; done; fi; '
        'echo "tick $i"; done'
    )


def _start(ctx: ToolContext, command: str, limits: watch.WatchLimits, **options: object) -> str:
    record = background.start(
        ctx.hermes_home,
        command,
        ctx.cwd,
        conversation_id=ctx.conversation_id,
        session_id=ctx.session_id,
        how=launch_for(ctx, ctx.cwd),
        event_bus=ctx.event_bus,
        watch_patterns=["tick"],
        watch_limits=limits,
        **options,  # type: ignore[arg-type]
    )
    return record.id


def test_matches_are_told_at_most_once_an_interval_then_promoted_to_notify(
    ctx: ToolContext, workdir: Path, home: Path, received: list[CompletionEvent]
) -> None:
    clock = StepClock()
    pid = _start(ctx, _stepped_command(7), watch.WatchLimits(clock=clock))
    interval = watch.WATCH_MIN_INTERVAL_SECONDS
    # (when line i is printed): told, dropped (strike 1), told with 1 dropped, dropped
    # (strike 2), told with 1 dropped, dropped (strike 3: patterns off), ignored.
    times = [0, 1, interval + 1, interval + 2, 2 * interval + 2, 2 * interval + 3]
    for step, at in enumerate(times, start=1):
        clock.now = 1000.0 + at
        if step > 1:
            (workdir / f"go.{step}").touch()
        _wait_until(lambda step=step: clock.reads >= step)  # type: ignore[misc]
    clock.now += 100
    (workdir / "go.7").touch()
    background.wait(home, pid, 20)
    _wait_until(lambda: any(e.kind == "completion" for e in received))

    told = [(e.kind, e.output_tail, e.suppressed) for e in received if e.process_id == pid]
    assert told[:4] == [
        ("watch_match", "tick 1", 0),
        ("watch_match", "tick 3", 1),
        ("watch_match", "tick 5", 1),
        ("watch_disabled", "", 1),
    ]
    # Promoted: one message when it ends, and tick 7 told nothing.
    assert [kind for kind, _, _ in told[4:]] == ["completion"]
    assert told[4][1].rstrip().endswith("tick 7")
    assert received[0].pattern == "tick" and received[0].conversation_id == "conv-root"
    assert 'matched watch pattern "tick"' in received[0].describe()
    assert "1 earlier matches were dropped" in received[1].describe()
    assert "one message when it ends" in received[3].describe()
    record = ProcessStore(home).load(pid)
    assert record is not None
    assert (record.watch_hits, record.watch_disabled, record.notify_on_complete) == (3, True, True)


def test_a_clean_interval_clears_the_strikes(
    ctx: ToolContext, workdir: Path, home: Path, received: list[CompletionEvent]
) -> None:
    clock = StepClock()
    pid = _start(ctx, _stepped_command(8), watch.WatchLimits(clock=clock))
    interval = watch.WATCH_MIN_INTERVAL_SECONDS
    # Two strike intervals, then an interval with no drop, then two more strikes: never
    # three in a row, so the patterns stay on.
    times = [0, 1, interval + 1, interval + 2, 3 * interval, 4 * interval, 4 * interval + 1]
    times += [5 * interval + 1]
    for step, at in enumerate(times, start=1):
        clock.now = 1000.0 + at
        if step > 1:
            (workdir / f"go.{step}").touch()
        _wait_until(lambda step=step: clock.reads >= step)  # type: ignore[misc]
    background.wait(home, pid, 20)
    time.sleep(0.3)  # a late notice would show up now

    told = [(e.kind, e.output_tail) for e in received if e.process_id == pid]
    assert told == [
        ("watch_match", "tick 1"),
        ("watch_match", "tick 3"),
        ("watch_match", "tick 5"),
        ("watch_match", "tick 6"),
        ("watch_match", "tick 8"),
    ]
    record = ProcessStore(home).load(pid)
    assert record is not None and not record.watch_disabled and not record.notify_on_complete


def test_the_global_breaker_trips_and_releases(
    make_ctx: Callable[..., ToolContext], home: Path, received: list[CompletionEvent]
) -> None:
    clock = StepClock()
    limits = watch.WatchLimits(clock=clock)
    ctx = make_ctx()
    most = watch.WATCH_GLOBAL_MAX_PER_WINDOW
    pids = [_start(ctx, "echo tick", limits) for _ in range(most + 1)]
    for pid in pids:
        background.wait(home, pid, 20)
    _wait_until(lambda: clock.reads >= most + 1)
    kinds = [e.kind for e in received]
    assert kinds.count("watch_match") == most
    assert kinds.count("watch_overflow_tripped") == 1
    tripped = next(e for e in received if e.kind == "watch_overflow_tripped")
    assert f"more than {most} notices" in tripped.describe()

    # Inside the cooldown every match is dropped; after it, the first one through says
    # how many were dropped.
    clock.now += 1
    dropped = _start(ctx, "echo tick", limits)
    background.wait(home, dropped, 20)
    _wait_until(lambda: clock.reads >= most + 2)
    clock.now += watch.WATCH_GLOBAL_COOLDOWN_SECONDS
    late = _start(ctx, "echo tick", limits)
    background.wait(home, late, 20)
    _wait_until(lambda: any(e.process_id == late for e in received))
    time.sleep(0.3)
    assert [e.process_id for e in received].count(dropped) == 0
    assert [(e.kind, e.suppressed) for e in received if e.process_id == late] == [
        ("watch_overflow_released", 2),
        ("watch_match", 0),
    ]


def test_the_terminal_tool_takes_watch_patterns(
    call: Callable[..., str], home: Path, received: list[CompletionEvent]
) -> None:
    started = call(
        "terminal",
        command="echo starting; echo 'Server READY on 8080'; echo serving",
        background=True,
        watch_patterns=["READY"],
    )
    assert "a line of its output holds one of: 'READY'" in started
    pid = re.search(r"(proc_\w+)", started).group(1)  # type: ignore[union-attr]
    _wait_until(lambda: any(e.process_id == pid for e in received))
    background.wait(home, pid, 20)
    [event] = [e for e in received if e.process_id == pid]
    assert (event.kind, event.pattern, event.output_tail) == (
        "watch_match",
        "READY",
        "Server READY on 8080",
    )
    # Both set: the end wins, the patterns are ignored (0.19's rule).
    both = call(
        "terminal",
        command="echo READY",
        background=True,
        notify_on_complete=True,
        watch_patterns=["READY"],
    )
    assert "watch_patterns ignored" in both
    pid = re.search(r"(proc_\w+)", both).group(1)  # type: ignore[union-attr]
    background.wait(home, pid, 20)
    _wait_until(lambda: any(e.process_id == pid for e in received))
    time.sleep(0.3)
    assert [e.kind for e in received if e.process_id == pid] == ["completion"]
    assert "only applies with background=true" in call(
        "terminal", command="true", watch_patterns=["x"]
    )


def test_notices_nobody_hears_are_spooled_for_a_drain(
    make_ctx: Callable[..., ToolContext], home: Path
) -> None:
    ctx = make_ctx(event_bus=None)
    pid = _start(ctx, "echo tick one; echo tick two", watch.WatchLimits())
    background.wait(home, pid, 20)
    found: list[CompletionEvent] = []
    _wait_until(lambda: bool(found.extend(background.drain_events(home)) or found))
    assert [(e.process_id, e.kind) for e in found] == [(pid, "watch_match")]
    assert found[0].output_tail.startswith("tick one")


def test_the_log_is_read_a_block_at_a_time_and_a_last_unfinished_line_counts(
    tmp_path: Path,
) -> None:
    log = tmp_path / "p.log"
    huge = "READY " + "x" * (2 * watch.LogLines.BLOCK)
    log.write_text(f"one\n{huge}\nlast without newline")
    lines = watch.LogLines(str(log))
    first = lines.new_lines()
    assert first[0] == "one" and first[1].startswith("READY ")
    assert all(len(line) <= watch.LogLines.BLOCK for line in first)
    rest: list[str] = []
    while more := lines.rest():
        rest.extend(more)
    assert rest[-1] == "last without newline"
    assert lines.rest() == []
