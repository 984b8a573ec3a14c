"""A running gateway keeps $HERMES_HOME/gateway_state.json and gateway.pid as Hermes
Agent 0.19 does (checked with 0.19's own reader), and `hermes gateway status` answers
from them: running or not, pid, platforms, exit code 0 either way (as 0.19). Several
gateways on one home are each reported, and one that fails to start beside a running one
leaves the running one's record alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.gateway.harness import wait_for
from tests.gateway.processes import free_port

pytestmark = pytest.mark.slow  # gateway processes started, killed and restarted

HERMES = str(Path(sys.executable).with_name("hermes"))

# 0.19's own reader: is the gateway this state file describes alive, and which pid?
READ_AS_HERMES_AGENT = """
import json, sys
from pathlib import Path
from gateway.status import get_runtime_status_running_pid, read_runtime_status, _build_runtime_status_record
record = read_runtime_status(Path(sys.argv[1]))
print(json.dumps({"pid": get_runtime_status_running_pid(record),
                  "keys": sorted(_build_runtime_status_record())}))
"""


def status(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HERMES_HOME": str(home)}
    return subprocess.run([HERMES, "gateway", "status", *args], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def as_hermes_agent(python: Path, home: Path) -> dict:
    done = subprocess.run([str(python), "-c", READ_AS_HERMES_AGENT, str(home / "gateway_state.json")],
                          env={**os.environ, "HERMES_HOME": str(home)},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_state_file_and_status_follow_the_gateway_from_start_to_stop(
    hermes_home: Path, config_file: Path, run_gateway, hermes_agent_venv_python
) -> None:
    never = status(hermes_home)
    assert never.returncode == 0 and never.stdout.startswith("Gateway is not running")
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1")
    gateway.wait_ready(port)
    path = hermes_home / "gateway_state.json"
    wait_for(lambda: path.exists() and json.loads(path.read_text())["gateway_state"] == "running")
    state = json.loads(path.read_text())
    assert state["pid"] == gateway.proc.pid and state["kind"] == "hermes-gateway"
    assert state["platforms"]["api_server"]["state"] == "connected"
    assert json.loads((hermes_home / "gateway.pid").read_text())["pid"] == gateway.proc.pid
    seen = as_hermes_agent(hermes_agent_venv_python, hermes_home)
    assert seen["pid"] == gateway.proc.pid  # 0.19 reads it as its own running gateway
    assert set(seen["keys"]) <= set(state)  # every field 0.19 writes is there

    running = status(hermes_home)
    assert running.returncode == 0, running.stdout + running.stderr
    line = running.stdout.strip()
    assert line.startswith(f"Gateway is running (pid {gateway.proc.pid}") and "api_server" in line
    as_json = json.loads(status(hermes_home, "--json").stdout)
    assert as_json["running"] is True and as_json["pid"] == gateway.proc.pid

    assert gateway.terminate() == 0
    stopped = json.loads(path.read_text())
    assert stopped["gateway_state"] == "stopped" and stopped["active_agents"] == 0
    assert not (hermes_home / "gateway.pid").exists()
    assert as_hermes_agent(hermes_agent_venv_python, hermes_home)["pid"] is None
    after = status(hermes_home)
    assert after.returncode == 0 and after.stdout.startswith("Gateway is not running (stopped")


def test_a_gateway_that_died_is_not_running(hermes_home: Path, config_file: Path, run_gateway):
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1")
    gateway.wait_ready(port)
    path = hermes_home / "gateway_state.json"
    wait_for(lambda: path.exists() and json.loads(path.read_text())["gateway_state"] == "running")
    gateway.proc.kill()
    gateway.proc.wait(10)
    dead = status(hermes_home)
    assert dead.returncode == 0
    assert f"pid {gateway.proc.pid} is gone without stopping" in dead.stdout


def test_a_supervisor_keeps_one_record_for_its_workers(
    hermes_home: Path, config_file: Path, run_gateway
) -> None:
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "2")
    gateway.wait_ready(port)
    path = hermes_home / "gateway_state.json"
    wait_for(lambda: path.exists() and json.loads(path.read_text())["gateway_state"] == "running")
    assert json.loads(path.read_text())["pid"] == gateway.proc.pid  # the supervisor's
    assert status(hermes_home).returncode == 0
    assert gateway.terminate() == 0
    assert json.loads(path.read_text())["gateway_state"] == "stopped"
    assert status(hermes_home).stdout.startswith("Gateway is not running (stopped")


READ_PID_AS_HERMES_AGENT = """
from gateway.status import get_running_pid
print(get_running_pid(cleanup_stale=False))
"""


def pid_as_hermes_agent(python: Path, home: Path) -> str:
    done = subprocess.run(
        [str(python), "-c", READ_PID_AS_HERMES_AGENT],
        env={**os.environ, "HERMES_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_a_failed_second_gateway_leaves_the_running_one_reported(
    hermes_home: Path, config_file: Path, run_gateway, hermes_agent_venv_python
) -> None:
    port = free_port()
    first = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1")
    first.wait_ready(port)
    path = hermes_home / "gateway_state.json"
    wait_for(lambda: path.exists() and json.loads(path.read_text())["gateway_state"] == "running")
    # The same port: this one cannot start, and says so in its own record only.
    second = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1")
    assert second.proc.wait(60) != 0
    assert json.loads(path.read_text())["pid"] == first.proc.pid
    assert json.loads(path.read_text())["gateway_state"] == "running"
    assert json.loads((hermes_home / "gateway.pid").read_text())["pid"] == first.proc.pid
    said = status(hermes_home)
    assert said.returncode == 0 and said.stdout.startswith(
        f"Gateway is running (pid {first.proc.pid}"
    )
    assert pid_as_hermes_agent(hermes_agent_venv_python, hermes_home) == str(first.proc.pid)
    assert first.terminate() == 0


def test_two_gateways_on_one_home_are_each_reported(
    hermes_home: Path, config_file: Path, run_gateway
) -> None:
    ports = [free_port(), free_port()]
    gateways = []
    for port in ports:
        gateways.append(run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1"))
        gateways[-1].wait_ready(port)
    pids = [g.proc.pid for g in gateways]
    wait_for(lambda: len(json.loads(status(hermes_home, "--json").stdout)["gateways"]) == 2)
    lines = status(hermes_home).stdout.strip().splitlines()
    assert [line.split("pid ")[1].split(",")[0] for line in lines] == [str(p) for p in pids]
    # The first stops: the second takes over 0.19's files (a reader sees it running).
    assert gateways[0].terminate() == 0
    state = hermes_home / "gateway_state.json"
    wait_for(lambda: json.loads(state.read_text()).get("pid") == pids[1], timeout=30)
    assert json.loads(state.read_text())["gateway_state"] == "running"
    assert json.loads((hermes_home / "gateway.pid").read_text())["pid"] == pids[1]
    assert status(hermes_home).stdout.startswith(f"Gateway is running (pid {pids[1]}")
    assert gateways[1].terminate() == 0
    assert status(hermes_home).stdout.startswith("Gateway is not running (stopped")


def test_restart_stops_the_gateway_and_starts_it_again_as_it_was(
    hermes_home: Path, config_file: Path, run_gateway
) -> None:
    """hermes-agent-mcp's gateway_restart: `hermes gateway restart` as 0.19 has it."""
    port = free_port()
    first = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1")
    first.wait_ready(port)
    state = hermes_home / "gateway_state.json"
    wait_for(lambda: state.exists() and json.loads(state.read_text())["gateway_state"] == "running")
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    done = subprocess.run([HERMES, "gateway", "restart"], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert first.proc.wait(5) == 0  # stopped as on SIGTERM
    new = json.loads(state.read_text())["pid"]
    try:
        assert new != first.proc.pid and f"pid {new} serving" in done.stdout
        assert status(hermes_home).stdout.startswith(f"Gateway is running (pid {new}")
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
    finally:
        os.kill(new, signal.SIGTERM)
        wait_for(lambda: json.loads(state.read_text())["gateway_state"] == "stopped")
    none = subprocess.run([HERMES, "gateway", "restart"], env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert none.returncode == 1 and "No gateway runs on" in none.stderr
