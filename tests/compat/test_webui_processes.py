"""hermes-webui's background-process panel and wake-up drain, as it calls
``tools.process_registry`` (api/background_process.py, api/streaming.py).

The processes are real: a web UI turn's ``terminal`` call (background, notify on
complete) starts them through hermes's tool, in the sandbox, on a real home and store.
The fake model is the only fake.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hermes.tools.processes import background, events
from hermes.tools.processes.store import ProcessRecord, ProcessStore
from hermes_state import SessionDB
from run_agent import AIAgent
from tests.fakes import llm_server as fake
from tests.tools.helpers import running_with


@pytest.fixture
def db(hermes_home: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=hermes_home / "state.db") as store:
        yield store
    for record in ProcessStore(hermes_home).all():
        if not record.finished:
            background.kill(hermes_home, record.id, grace=0.5)


def start_in_a_webui_turn(
    fake_llm: fake.FakeLLMServer,
    db: SessionDB,
    session_id: str,
    command: str,
    how: dict[str, object] | None = None,
) -> str:
    """A web UI turn whose model starts ``command`` in the background (``how``: the
    terminal call's options, notify on complete by default); its process id."""
    options = how if how is not None else {"notify_on_complete": True}
    fake_llm.script(
        fake.tool_call("terminal", {"command": command, "background": True, **options}),
        fake.text("Started it."),
    )
    agent = AIAgent(
        model=fake.DEFAULT_MODEL,
        base_url=fake_llm.url,
        api_key="k",
        platform="webui",
        quiet_mode=True,
        enabled_toolsets=["terminal"],
        session_id=session_id,
        session_db=db,
    )
    result = agent.run_conversation(user_message="run it", task_id=session_id)
    started = "\n".join(str(m.get("content")) for m in result["messages"] if m["role"] == "tool")
    match = re.search(r"(proc_\w+)", started)
    assert match, started
    return match.group(1)


def wait_until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_a_finished_process_is_listed_and_its_event_drained_once(
    fake_llm: fake.FakeLLMServer, db: SessionDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools.process_registry import format_process_notification, process_registry

    monkeypatch.chdir(tmp_path)
    pid = start_in_a_webui_turn(fake_llm, db, "webui-one", "echo built-42; exit 3")
    wait_until(lambda: bool((proc := process_registry.get(pid)) and proc.exited))

    # The panel (recover_processes_for_webui): rows, then each process by id.
    [row] = [r for r in process_registry.list_sessions() if r["session_id"] == pid]
    assert row["status"] == "exited" and row["exit_code"] == 3
    assert row["command"] == "echo built-42; exit 3" and row["notify_on_complete"] is True
    proc = process_registry.get(pid)
    assert proc is not None
    assert (proc.session_key, proc.exit_code, proc.completion_reason) == ("webui-one", 3, "exited")
    assert "built-42" in proc.output_buffer
    assert process_registry.poll(pid)["status"] == "exited"

    # The drain thread: completion_queue.get(timeout=1.0), as _drain_loop reads it.
    queue_ = process_registry.completion_queue
    evt = queue_.get(timeout=10.0)
    assert evt["type"] == "completion" and evt["session_id"] == pid
    assert (evt["session_key"], evt["exit_code"]) == ("webui-one", 3)
    assert "built-42" in evt["output"] and isinstance(evt["completed_at"], float)
    note = format_process_notification(evt)
    assert note is not None and note.startswith(f"[IMPORTANT: Background process {pid} exited")
    assert "(exit code 3)." in note
    stopped = format_process_notification({**evt, "exit_code": -15, "completion_reason": "killed"})
    assert f"{pid} terminated by Hermes (exit code -15, SIGTERM)." in (stopped or "")
    # Exactly once: nothing more for the next-turn drain (get_nowait until Empty).
    with pytest.raises(queue.Empty):
        queue_.get_nowait()

    # hermes-webui marks what it delivered in the registry's private pair.
    assert not process_registry.is_completion_consumed(pid)
    with process_registry._lock:
        process_registry._completion_consumed.add(pid)
    assert process_registry.is_completion_consumed(pid)


def test_an_event_put_back_waits_for_the_next_taker(
    fake_llm: fake.FakeLLMServer, db: SessionDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools.process_registry import process_registry

    monkeypatch.chdir(tmp_path)
    pid = start_in_a_webui_turn(fake_llm, db, "webui-other-tab", "true")
    queue_ = process_registry.completion_queue
    evt = queue_.get(timeout=15.0)
    # The next-turn drain of another session skips it and puts it back.
    queue_.put(evt)
    assert not queue_.empty()
    again = queue_.get_nowait()
    assert (again["session_id"], again["session_key"], again["exit_code"]) == (
        pid,
        "webui-other-tab",
        0,
    )
    with pytest.raises(queue.Empty):
        queue_.get(timeout=0.3)


def test_a_watch_pattern_match_reaches_the_drain_as_0_19s_watch_match(
    fake_llm: fake.FakeLLMServer, db: SessionDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server started with watch_patterns: its READY line comes through
    ``completion_queue`` as 0.19's ``watch_match``, once (the second match falls inside
    WATCH_MIN_INTERVAL_SECONDS), and the panel's row carries its patterns."""
    from tools.process_registry import (
        WATCH_MIN_INTERVAL_SECONDS,
        format_process_notification,
        process_registry,
    )

    monkeypatch.chdir(tmp_path)
    command = "echo booting; echo 'app READY on 8080'; echo 'READY again'; sleep 60.0419"
    pid = start_in_a_webui_turn(
        fake_llm, db, "webui-watch", command, how={"watch_patterns": ["READY"]}
    )
    queue_ = process_registry.completion_queue
    evt = queue_.get(timeout=15.0)
    assert (evt["type"], evt["session_id"], evt["session_key"]) == (
        "watch_match",
        pid,
        "webui-watch",
    )
    assert evt["pattern"] == "READY" and evt["output"].startswith("app READY on 8080")
    note = format_process_notification(evt)
    assert note is not None
    assert note.startswith(f'[IMPORTANT: Background process {pid} matched watch pattern "READY"')
    assert f"Command: {command}" in note
    dropped = format_process_notification({**evt, "suppressed": 2})
    assert "(2 earlier matches were suppressed by rate limit)]" in (dropped or "")

    [row] = [r for r in process_registry.list_sessions() if r["session_id"] == pid]
    assert row["watch_patterns"] == ["READY"] and row["watch_hit"] is True
    assert "notify_on_complete" not in row and row["status"] == "running"
    assert WATCH_MIN_INTERVAL_SECONDS == 15
    process_registry.kill_process(pid)
    # Nothing more: the second READY was in the same notice or inside the interval, and
    # no completion was asked for.
    with pytest.raises(queue.Empty):
        queue_.get(timeout=0.5)


def test_kill_process_stops_it_and_answers_as_0_19(
    fake_llm: fake.FakeLLMServer,
    db: SessionDB,
    hermes_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tools.process_registry import process_registry

    monkeypatch.chdir(tmp_path)
    pid = start_in_a_webui_turn(fake_llm, db, "webui-kill", "sleep 60.0271")
    running = process_registry.poll(pid)
    assert running["status"] == "running" and running["session_id"] == pid
    assert process_registry.count_running() == 1

    killed = process_registry.kill_process(pid)
    assert killed["status"] == "killed" and killed["completion_reason"] == "killed"
    assert killed["termination_source"] == "process.kill"
    record = ProcessStore(hermes_home).load(pid)
    assert record is not None and record.finished
    assert not background.pid_alive(record.pid, record.pid_create_time)
    wait_until(lambda: not running_with("sleep 60.0271"))  # its whole group, sandboxed too
    assert process_registry.is_completion_consumed(pid)  # its output is in the answer
    assert process_registry.kill_process(pid)["status"] == "already_exited"
    assert process_registry.kill_process("proc_nothere") == {
        "status": "not_found",
        "error": "No process with ID proc_nothere",
    }
    assert process_registry.get("../../etc/passwd") is None


def test_a_gateway_conversations_event_stays_for_the_gateway(
    db: SessionDB, hermes_home: Path
) -> None:
    from tools.process_registry import process_registry

    db.create_session("tg-chat", source="telegram", session_key="telegram:dm:42")
    event = events.CompletionEvent(
        process_id="proc_0a0b0c0d",
        conversation_id="tg-chat",
        command="make",
        exit_code=0,
        output_tail="ok",
        finished_at=time.time(),
        session_id="tg-chat",
    )
    events.spool_event(hermes_home, event)
    assert process_registry.completion_queue.empty()
    with pytest.raises(queue.Empty):
        process_registry.completion_queue.get_nowait()
    assert [e.process_id for e in events.take_spooled(hermes_home)] == ["proc_0a0b0c0d"]


def test_each_call_reads_its_own_home(
    fake_llm: fake.FakeLLMServer, db: SessionDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_constants import reset_hermes_home_override, set_hermes_home_override
    from tools.process_registry import process_registry

    monkeypatch.chdir(tmp_path)
    pid = start_in_a_webui_turn(fake_llm, db, "webui-home", "true")
    other = tmp_path / "profiles" / "coder"
    other.mkdir(parents=True)
    token = set_hermes_home_override(other)
    try:
        assert process_registry.list_sessions() == []
        assert process_registry.get(pid) is None
        with pytest.raises(queue.Empty):
            process_registry.completion_queue.get_nowait()
    finally:
        reset_hermes_home_override(token)
    assert [r["session_id"] for r in process_registry.list_sessions()] == [pid]
    # Started by this process: nothing a restart left behind to recover.
    assert process_registry.recover_from_checkpoint() == 0


STARTER = """
import json, os, sys
from pathlib import Path
from hermes.tools import ToolContext, default_registry
ctx = ToolContext(hermes_home=Path(sys.argv[1]), cwd=Path(sys.argv[2]), source="webui",
                  conversation_id="webui-before-restart", session_id="webui-before-restart")
args = {"command": "sleep 1.5; echo outlived", "background": True, "notify_on_complete": True}
print(default_registry().dispatch("terminal", json.dumps(args), ctx), flush=True)
os._exit(0)  # the web UI process goes away; its background process does not
"""


def test_a_process_outliving_the_webui_that_started_it_is_recovered_and_heard(
    hermes_home: Path, tmp_path: Path
) -> None:
    from tools.process_registry import process_registry

    started = subprocess.run(
        [sys.executable, "-c", STARTER, str(hermes_home), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HERMES_HOME": str(hermes_home)},
    )
    match = re.search(r"(proc_\w+)", started.stdout)
    assert match, started.stdout + started.stderr
    pid = match.group(1)
    try:
        # After a restart the web UI recovers what the previous process left running.
        assert process_registry.recover_from_checkpoint() == 1
        record = ProcessStore(hermes_home).load(pid)
        assert record is not None
        wait_until(lambda: not background.pid_alive(record.pid, record.pid_create_time))
        # Nobody watched it end: the queue notices and hands its event out once.
        evt = process_registry.completion_queue.get(timeout=10.0)
    finally:
        background.kill(hermes_home, pid, grace=0.5)
    assert (evt["session_id"], evt["session_key"], evt["exit_code"]) == (
        pid,
        "webui-before-restart",
        0,
    )
    assert "outlived" in evt["output"]
    with pytest.raises(queue.Empty):
        process_registry.completion_queue.get_nowait()


def test_a_long_log_is_carried_to_max_output_chars_and_uptime_told_as_0_19(
    fake_llm: fake.FakeLLMServer, db: SessionDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tail of a process's log a ProcessSession carries is MAX_OUTPUT_CHARS long, its
    newest output last; ``format_uptime_short`` says an uptime as 0.19's /status does."""
    from tools.process_registry import MAX_OUTPUT_CHARS, format_uptime_short, process_registry

    monkeypatch.chdir(tmp_path)
    command = f"yes abcdefgh | head -c {MAX_OUTPUT_CHARS + 5000}; echo; echo LAST-LINE"
    pid = start_in_a_webui_turn(fake_llm, db, "webui-long", command)
    wait_until(lambda: bool((proc := process_registry.get(pid)) and proc.exited))
    proc = process_registry.get(pid)
    assert proc is not None and proc.max_output_chars == MAX_OUTPUT_CHARS
    assert len(proc.output_buffer) == MAX_OUTPUT_CHARS
    assert proc.output_buffer.endswith("LAST-LINE\n")

    told = [format_uptime_short(s) for s in (-3, 0, 59, 60, 185, 3599, 3600, 7625, 90061)]
    assert told == ["0s", "0s", "59s", "1m 0s", "3m 5s", "59m 59s", "1h 0m", "2h 7m", "25h 1m"]


def test_the_process_tool_schema_and_file_requirements_are_hermess_own() -> None:
    """PROCESS_SCHEMA is the process tool the model is given (0.19's shape: name,
    description, parameters); hermes's file tools need no terminal backend."""
    from tools import check_file_requirements
    from tools.process_registry import PROCESS_SCHEMA

    from hermes.tools import default_registry

    (given,) = default_registry().schemas(["process"])
    assert given["function"] == PROCESS_SCHEMA and PROCESS_SCHEMA["name"] == "process"
    assert set(PROCESS_SCHEMA["parameters"]["properties"]) >= {"action", "id"}
    assert check_file_requirements() is True
    assert {"read_file", "write_file", "patch"} <= set(default_registry().names())


def _finished(process_id: str, started_ago: float) -> ProcessRecord:
    started = time.time() - started_ago
    return ProcessRecord(
        id=process_id,
        command=f"echo {process_id}",
        pid=1,
        started_at=started,
        status="exited",
        exit_code=0,
        finished_at=started + 1,
    )


def test_the_panel_forgets_finished_processes_as_0_19s_table_does(
    hermes_home: Path, tmp_path: Path
) -> None:
    """A finished process leaves the view FINISHED_TTL_SECONDS after it started, and no
    more than MAX_PROCESSES are listed (the oldest finished ones left out, never a
    running one); the records stay on disk."""
    from tools.process_registry import FINISHED_TTL_SECONDS, MAX_PROCESSES, process_registry

    assert (FINISHED_TTL_SECONDS, MAX_PROCESSES) == (1800, 64)
    store = ProcessStore(hermes_home).ensure()
    store.save(_finished("proc_expired", FINISHED_TTL_SECONDS + 60))
    store.save(_finished("proc_recent", FINISHED_TTL_SECONDS - 60))
    assert [r["session_id"] for r in process_registry.list_sessions()] == ["proc_recent"]
    assert process_registry.get("proc_expired") is None
    assert process_registry.poll("proc_expired")["status"] == "not_found"
    assert process_registry.get("proc_recent") is not None
    assert store.load("proc_expired") is not None  # the record stays

    # A running process (a real one) older than all of them, and more finished ones
    # than the cap leaves room for.
    sleeper = subprocess.Popen(["sleep", "60.0677"])
    try:
        running = ProcessRecord(
            id="proc_running",
            command="sleep 60.0677",
            pid=sleeper.pid,
            pid_create_time=background.create_time(sleeper.pid),
            started_at=time.time() - 1000,
        )
        store.save(running)
        for n in range(MAX_PROCESSES + 1):
            store.save(_finished(f"proc_f{n:03d}", 900 - n))  # proc_f000 is the oldest
        listed = [r["session_id"] for r in process_registry.list_sessions()]
        assert len(listed) == MAX_PROCESSES and listed[0] == "proc_running"
        left_out = {"proc_recent", "proc_f000", "proc_f001"}  # the three oldest finished
        assert not left_out & set(listed)
        assert process_registry.get("proc_f000") is None
        assert process_registry.get("proc_f002") is not None
        assert process_registry.count_running() == 1
    finally:
        sleeper.kill()
        sleeper.wait()


ZERO_NINETEEN_SPAWNS = """
import os, sys
from tools.process_registry import process_registry as registry
session = registry.spawn_local("sleep 60.0733", cwd=sys.argv[1], session_key="webui-019")
session.notify_on_complete = True
registry._write_checkpoint()
print(session.id, session.pid, flush=True)
os._exit(0)  # 0.19 goes away (the user switches to hermes); its process does not
"""


def test_a_process_0_19_left_running_is_adopted_from_its_checkpoint(
    hermes_agent_python: Path, hermes_home: Path, tmp_path: Path
) -> None:
    """A real 0.19 starts a background process and writes processes.json, then stops;
    hermes's recover_from_checkpoint adopts it (listed, polled, killed, its end told),
    once. Entries whose pid is gone, names another process now, or lived in a sandbox
    are not adopted."""
    from tools.process_registry import CHECKPOINT_PATH, process_registry

    assert CHECKPOINT_PATH.name == "processes.json"
    env = {**os.environ, "HERMES_HOME": str(hermes_home), "HERMES_DISABLE_LAZY_INSTALLS": "1"}
    started = subprocess.run(
        [str(hermes_agent_python), "-c", ZERO_NINETEEN_SPAWNS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert started.returncode == 0, started.stderr[-3000:]
    process_id, pid_text = started.stdout.split()
    pid = int(pid_text)
    checkpoint = hermes_home / "processes.json"
    entries = json.loads(checkpoint.read_text())
    [entry] = entries
    assert entry["host_start_time"] is not None
    dead = subprocess.Popen(["true"])
    dead.wait()
    checkpoint.write_text(
        json.dumps(
            [
                *entries,
                {**entry, "session_id": "proc_gone", "pid": dead.pid, "host_start_time": None},
                {**entry, "session_id": "proc_recycled", "host_start_time": 1},
                {**entry, "session_id": "proc_sandboxed", "pid_scope": "sandbox"},
            ]
        )
    )
    try:
        assert process_registry.recover_from_checkpoint() == 1
        assert process_registry.recover_from_checkpoint() == 1  # the same one, once
        assert [p.id for p in ProcessStore(hermes_home).all()] == [process_id]
        [row] = process_registry.list_sessions()
        assert (row["session_id"], row["status"], row["pid"]) == (process_id, "running", pid)
        proc = process_registry.get(process_id)
        assert proc is not None and proc.session_key == "webui-019"
        assert "adopted from Hermes Agent 0.19" in proc.output_buffer
        killed = process_registry.kill_process(process_id, consume_output=False)
        assert killed["status"] == "killed"
        wait_until(lambda: not running_with("sleep 60.0733"))
        evt = process_registry.completion_queue.get(timeout=10.0)
        assert (evt["session_id"], evt["completion_reason"]) == (process_id, "killed")
        assert process_registry.recover_from_checkpoint() == 0
    finally:
        if background.pid_alive(pid, None):
            os.killpg(pid, 9)
