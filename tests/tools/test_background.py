"""Background processes with real processes: lifecycle, exactly-once events, lost detection."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from hermes.tools import CompletionEvent, EventBus, ToolContext, drain_events
from hermes.tools.processes import background, events
from hermes.tools.processes.store import ProcessRecord, ProcessStore
from tests.tools.helpers import running_with


def _started_id(result: str) -> str:
    match = re.search(r"Started background process (proc_\w+)", result)
    assert match, result
    return match.group(1)


def _wait_until(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_background_start_poll_log_wait(call: Callable[..., str], home: Path) -> None:
    result = call("terminal", command="echo one; sleep 0.3; echo two; exit 4", background=True)
    pid = _started_id(result)
    assert "running" in call("process", action="poll", id=pid) or "exited" in call(
        "process", action="poll", id=pid
    )
    waited = call("process", action="wait", id=pid, timeout=20)
    assert f"Process {pid}: exited with code 4" in waited
    assert "one\ntwo" in waited
    assert call("process", action="log", id=pid, lines=1).endswith("two")
    listing = call("process", action="list")
    assert pid in listing and "exited with code 4" in listing
    record = json.loads((home / "processes" / f"{pid}.json").read_text())
    assert record["exit_code"] == 4 and record["status"] == "exited"
    assert oct((home / "processes" / f"{pid}.json").stat().st_mode & 0o777) == "0o600"


def test_wait_times_out_and_kill_stops_the_group(call: Callable[..., str], home: Path) -> None:
    pid = _started_id(call("terminal", command="sleep 60.0314 & wait", background=True))
    assert call("process", action="wait", id=pid, timeout=0.2).startswith(
        "Still running after waiting 0.2s"
    )
    record = ProcessStore(home).load(pid)
    killed = call("process", action="kill", id=pid)
    assert f"Process {pid}: killed" in killed
    assert not background.pid_alive(record.pid, record.pid_create_time)
    _wait_until(lambda: not running_with("sleep 60.0314"))


def test_process_errors_are_clear(call: Callable[..., str]) -> None:
    assert call("process", action="poll").startswith(
        "Error: process action 'poll' needs the process 'id'"
    )
    assert call("process", action="log", id="proc_nothere").startswith(
        "Error: no background process with id 'proc_nothere'"
    )
    assert call("process", action="poll", id="../../etc/passwd").startswith(
        "Error: no background process"
    )
    assert call("process", action="list").startswith("No background processes.")


def test_completion_event_is_delivered_exactly_once(
    call: Callable[..., str], ctx: ToolContext, home: Path, received: list[CompletionEvent]
) -> None:
    result = call(
        "terminal",
        command="echo working; sleep 0.4; echo finished",
        background=True,
        notify_on_complete=True,
    )
    pid = _started_id(result)
    assert "one message in this conversation" in result

    # Others look at the process, read its log and drain events while it exits: none of
    # that may consume, repeat or steal the event.
    stop = threading.Event()
    drained: list[CompletionEvent] = []
    failures: list[BaseException] = []

    def hammer(action: str) -> None:
        try:
            while not stop.is_set():
                if action == "drain":
                    drained.extend(drain_events(home))
                else:
                    call("process", action=action, id=pid)
        except BaseException as exc:  # surfaced below; a thread's exception would be lost
            failures.append(exc)

    threads = [
        threading.Thread(target=hammer, args=(a,))
        for a in ("poll", "log", "poll", "drain", "drain")
    ]
    for thread in threads:
        thread.start()
    try:
        assert "exited with code 0" in call("process", action="wait", id=pid, timeout=20)
        _wait_until(lambda: any(e.process_id == pid for e in received))
        time.sleep(0.3)  # give a duplicate every chance to show up
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not failures
    mine = [e for e in received if e.process_id == pid]
    assert len(mine) == 1
    event = mine[0]
    assert event.conversation_id == "conv-root"  # the conversation, not the segment
    assert event.session_id == "conv-root-seg-2"
    assert event.exit_code == 0 and event.status == "exited"
    assert event.output_tail == "working\nfinished\n"
    assert "finished with exit code 0" in event.describe()
    assert [e for e in drained + drain_events(home) if e.process_id == pid] == []
    call("process", action="log", id=pid)
    assert [e for e in received if e.process_id == pid] == [event]
    # A subscriber that cannot take an event now gives it back; one drain gets it again.
    events.spool_event(home, event)
    assert drain_events(home) == [event]
    assert drain_events(home) == []


def test_two_owners_in_one_process_hear_only_their_own_processes(
    call: Callable[..., str], make_ctx: Callable[..., ToolContext], home: Path
) -> None:
    heard: dict[str, list[CompletionEvent]] = {"one": [], "two": []}
    buses = {name: EventBus() for name in heard}
    for name, bus in buses.items():
        bus.subscribe(heard[name].append)
    started = {
        name: _started_id(
            call(
                "terminal",
                make_ctx(conversation_id=f"conv-{name}", event_bus=bus),
                command="exit 0",
                background=True,
                notify_on_complete=True,
            )
        )
        for name, bus in buses.items()
    }
    _wait_until(lambda: all(heard.values()))
    time.sleep(0.3)  # give a second delivery every chance to show up
    assert {name: [e.process_id for e in got] for name, got in heard.items()} == {
        name: [pid] for name, pid in started.items()
    }
    assert drain_events(home) == []


def test_an_event_nobody_on_its_bus_takes_is_spooled(
    call: Callable[..., str], ctx: ToolContext, home: Path, bus: EventBus
) -> None:
    def refuse(event: CompletionEvent) -> None:
        raise RuntimeError("cannot take it now")

    bus.subscribe(refuse)
    pid = _started_id(call("terminal", command="exit 3", background=True, notify_on_complete=True))
    call("process", action="wait", id=pid, timeout=20)
    _wait_until(lambda: bool(list(ProcessStore(home).events_dir().glob("*.json"))))
    assert [(e.process_id, e.exit_code) for e in drain_events(home)] == [(pid, 3)]


def test_without_subscribers_one_drain_gets_the_event(call: Callable[..., str], home: Path) -> None:
    pid = _started_id(call("terminal", command="exit 2", background=True, notify_on_complete=True))
    results: list[CompletionEvent] = []
    barrier = threading.Barrier(4)
    deadline = time.monotonic() + 15

    def drain() -> None:
        # Drain in a loop while the process ends and the event is spooled; the event is
        # delivered after the exit is recorded, so it may arrive a moment after `wait`.
        barrier.wait()
        while not results and time.monotonic() < deadline:
            results.extend(drain_events(home))
            time.sleep(0.01)

    threads = [threading.Thread(target=drain) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    time.sleep(0.2)
    events = results + drain_events(home)
    assert [(e.process_id, e.exit_code, e.conversation_id) for e in events] == [
        (pid, 2, "conv-root")
    ]


def test_no_event_without_notify(
    call: Callable[..., str], home: Path, received: list[CompletionEvent]
) -> None:
    pid = _started_id(call("terminal", command="true", background=True))
    call("process", action="wait", id=pid, timeout=20)
    assert drain_events(home) == []
    assert [e for e in received if e.process_id == pid] == []


def test_many_threads_finishing_the_same_process_make_one_event(
    home: Path, bus: EventBus, received: list[CompletionEvent]
) -> None:
    store = ProcessStore(home).ensure()
    store.save(
        ProcessRecord(
            id="proc_race", command="make", pid=1, notify_on_complete=True, conversation_id="c1"
        )
    )
    barrier = threading.Barrier(8)

    def finish(code: int) -> None:
        barrier.wait()
        background.finish(store, "proc_race", code, event_bus=bus)

    threads = [threading.Thread(target=finish, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(received) == 1
    assert store.load("proc_race").exit_code == received[0].exit_code


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_an_exit_recorded_by_a_live_owner_is_left_for_its_owner_to_announce(
    home: Path, bus: EventBus, received: list[CompletionEvent]
) -> None:
    # The window between an owner recording the exit and claiming the event: a drain
    # elsewhere must not take the event from the owner's subscribers, unless the owner
    # died in that window (then it would be lost without the drain).
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        store = ProcessStore(home).ensure()
        store.save(
            ProcessRecord(
                id="proc_owned",
                command="make",
                pid=_dead_pid(),
                owner_pid=owner.pid,
                owner_create_time=psutil.Process(owner.pid).create_time(),
                notify_on_complete=True,
                conversation_id="c7",
                status="exited",
                exit_code=0,
                finished_at=time.time(),
            )
        )
        for _ in range(3):
            assert drain_events(home) == []
            assert background.refresh_all(home, bus)[0].status == "exited"
        assert received == [] and not store.notified_path("proc_owned").exists()
    finally:
        owner.kill()
        owner.wait()
    announced = drain_events(home)
    assert [(e.process_id, e.exit_code, e.conversation_id) for e in announced] == [
        ("proc_owned", 0, "c7")
    ]
    assert drain_events(home) == [] and received == []


def test_a_process_whose_pid_is_gone_is_lost(call: Callable[..., str], home: Path) -> None:
    store = ProcessStore(home).ensure()
    store.save(
        ProcessRecord(
            id="proc_dead",
            command="make build",
            pid=_dead_pid(),
            started_at=time.time() - 60,
            notify_on_complete=True,
            conversation_id="c9",
        )
    )
    assert "lost" in call("process", action="poll", id="proc_dead")
    assert store.load("proc_dead").status == "lost"
    assert "proc_dead  lost" in call("process", action="list")
    events = drain_events(home)
    assert [(e.process_id, e.status, e.exit_code, e.conversation_id) for e in events] == [
        ("proc_dead", "lost", None, "c9")
    ]


def test_a_reused_pid_does_not_count_as_alive(call: Callable[..., str], home: Path) -> None:
    # Our own pid is alive, but it was created at another time: the recorded process is gone.
    me = psutil.Process()
    store = ProcessStore(home).ensure()
    store.save(
        ProcessRecord(
            id="proc_reused", command="serve", pid=me.pid, pid_create_time=me.create_time() - 3600
        )
    )
    assert "lost" in call("process", action="poll", id="proc_reused")
    # The same pid with its real create time is a live process, not lost.
    store.save(
        ProcessRecord(
            id="proc_alive", command="serve", pid=me.pid, pid_create_time=me.create_time()
        )
    )
    assert "running" in call("process", action="poll", id="proc_alive")
    store.record_path("proc_alive").unlink()  # it is pytest itself: not for the cleanup to kill


HOST_SCRIPT = """
import json, sys
from pathlib import Path
from hermes.tools import ToolContext, default_registry
ctx = ToolContext(hermes_home=Path(sys.argv[1]), cwd=Path(sys.argv[1]).parent, conversation_id="conv-host", session_id="seg-host")
args = {"command": "sleep 0.5; echo survived; exit 7", "background": True, "notify_on_complete": True}
print(default_registry().dispatch("terminal", json.dumps(args), ctx))
"""


def test_a_process_outlives_the_hermes_process_that_started_it(home: Path) -> None:
    host = subprocess.run(
        [sys.executable, "-c", HOST_SCRIPT, str(home)],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ,
    )
    assert host.returncode == 0, host.stderr
    pid = _started_id(host.stdout)
    record = background.wait(home, pid, 20)
    assert (record.status, record.exit_code) == ("exited", 7)
    events = drain_events(home) + drain_events(home)
    assert [(e.process_id, e.exit_code, e.conversation_id) for e in events] == [
        (pid, 7, "conv-host")
    ]
    assert "survived" in events[0].output_tail


def test_a_gateway_conversation_sees_only_its_own_processes(
    make_ctx: Callable[..., ToolContext], call: Callable[..., str]
) -> None:
    alice = make_ctx(source="telegram", user_id="42", conversation_id="conv-42", session_id="s-42")
    bob = make_ctx(source="telegram", user_id="7", conversation_id="conv-7", session_id="s-7")
    pid = _started_id(call("terminal", alice, command="sleep 30.8181", background=True))
    assert pid in call("process", alice, action="list")
    assert pid not in call("process", bob, action="list")
    for action in ("poll", "log", "kill"):
        assert call("process", bob, action=action, id=pid).startswith(
            f"Error: no background process with id '{pid}'"
        )
    assert "running" in call("process", alice, action="poll", id=pid)
    assert "killed" in call("process", alice, action="kill", id=pid)
