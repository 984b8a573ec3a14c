"""Limits of a tool's process tree, on the sandboxed path and the fallback path.

An output flood is killed at ``terminal.max_output_mb``, a file stops growing at
``terminal.max_file_mb``, a process count cap holds a fork storm, a blocking read (a
FIFO) cannot hold a turn past its timeout, and the user's /stop (``ctx.cancel``) kills a
running command at once. The interactive CLI approves everything here, so the fallback
path runs the same commands.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hermes.tools import ToolContext
from tests.tools.helpers import still_running_with

# Both sandbox settings run the same command lines, which running_with() looks for among
# all the host's processes: under -n the two must not run at once.
pytestmark = pytest.mark.xdist_group("host-wide-process-markers")


@pytest.fixture(params=["bwrap", "off"])
def sandbox_setting(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def cli(make_ctx: Callable[..., ToolContext]) -> Callable[..., ToolContext]:
    def make(config: dict[str, object] | None = None) -> ToolContext:
        ctx = make_ctx(config)
        ctx.interactive, ctx.approve = True, lambda command, reason: True
        return ctx

    return make


def test_an_output_flood_is_killed(
    call: Callable[..., str], cli: Callable[..., ToolContext]
) -> None:
    ctx = cli({"terminal.max_output_mb": 1, "terminal.timeout": 60})
    result = call("terminal", ctx, command="yes flood-8812")
    assert result.startswith("Killed: the command wrote more than 1 MB of output")
    assert still_running_with("yes flood-8812") == []


def test_a_file_stops_growing_at_the_disk_cap(
    call: Callable[..., str], cli: Callable[..., ToolContext], workdir: Path
) -> None:
    ctx = cli({"terminal.max_file_mb": 1})
    result = call("terminal", ctx, command="yes > big.txt; echo status=$?")
    assert "status=153" in result  # 128 + SIGXFSZ
    assert (workdir / "big.txt").stat().st_size <= 1024 * 1024


FORK_STORM = """
import os, time
forked = 0
for _ in range(60):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30.5151)
        os._exit(0)
    forked += 1
print("forked", forked)
"""


def test_a_fork_storm_meets_the_process_cap(
    call: Callable[..., str], cli: Callable[..., ToolContext], workdir: Path
) -> None:
    (workdir / "storm.py").write_text(FORK_STORM, encoding="utf-8")
    ctx = cli({"terminal.max_processes": 20, "terminal.timeout": 60})
    result = call("terminal", ctx, command="python3 storm.py")
    forked = int(result.split("forked ")[1].split()[0])
    assert 0 < forked < 20, result
    assert still_running_with("sleep 30.5151") == [] and still_running_with("storm.py") == []


def test_a_blocking_read_cannot_hold_the_turn(
    call: Callable[..., str], cli: Callable[..., ToolContext]
) -> None:
    ctx = cli({"terminal.timeout": 1})
    result = call("terminal", ctx, command="mkfifo pipe && cat pipe")
    assert result.startswith("Timed out after 1s; the command was killed")


def test_stop_kills_a_running_command(
    call: Callable[..., str], cli: Callable[..., ToolContext]
) -> None:
    ctx = cli({"terminal.timeout": 120})
    ctx.cancel = threading.Event()
    timer = threading.Timer(0.5, ctx.cancel.set)
    timer.start()
    try:
        result = call("terminal", ctx, command="echo before; sleep 100.7171")
    finally:
        timer.cancel()
    assert result.startswith("Stopped by the user; the command was killed")
    assert "before" in result
    assert still_running_with("sleep 100.7171") == []


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


@pytest.mark.parametrize("sandbox_setting", ["bwrap"])
def test_the_network_is_off_when_configured(
    call: Callable[..., str], cli: Callable[..., ToolContext], listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    probe = (
        'python3 -c \'import socket,sys; socket.create_connection(("127.0.0.1", '
        f'{port}), timeout=2); print("connected")\''
    )
    assert "connected" in call("terminal", cli({"terminal.network": True}), command=probe)
    closed = call("terminal", cli({"terminal.network": False}), command=probe)
    assert "connected" not in closed and not closed.startswith("Exit code: 0")
