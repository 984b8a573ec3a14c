"""`hermes gateway start|stop|status` as Hermes Agent 0.19 has them (issue 56): start
runs one in the background, status names where its API listens, stop ends it (0.19's
words when none runs), and a second start is refused while one runs. A running gateway
that keeps its start-time configuration says so when config.yaml changes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import yaml

from tests.gateway.harness import wait_for
from tests.gateway.processes import free_port

pytestmark = pytest.mark.slow  # gateway processes started and stopped
HERMES = str(Path(sys.executable).parent / "hermes")


def hermes(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HERMES_HOME": str(home)}
    return subprocess.run([HERMES, "gateway", *args], env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip


def test_start_status_stop(hermes_home: Path, config_file: Path) -> None:
    port = free_port()
    started = hermes(hermes_home, "start", "--api-server", f"127.0.0.1:{port}", "--workers", "1")
    assert started.returncode == 0, started.stderr
    pid = int(started.stdout.split("(pid ")[1].split(")")[0])
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 200
        status = hermes(hermes_home, "status").stdout
        assert status.startswith(f"Gateway is running (pid {pid}")
        assert f"API at http://127.0.0.1:{port}/v1" in status

        again = hermes(hermes_home, "start", "--api-server", f"127.0.0.1:{free_port()}")
        assert again.returncode != 0 and "Traceback" not in again.stderr
        assert f"A gateway already runs on {hermes_home} (pid {pid})" in again.stderr

        stopped = hermes(hermes_home, "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.strip() == f"✓ Stopped gateway for this profile (pid {pid})"
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        assert hermes(hermes_home, "status").stdout.startswith("Gateway is not running")
    finally:
        if psutil.pid_exists(pid):
            os.kill(pid, signal.SIGKILL)
    none = hermes(hermes_home, "stop")
    assert none.returncode == 0 and none.stdout.strip() == "✗ No gateway running for this profile"


def test_a_changed_config_is_said_to_need_a_restart(
    hermes_home: Path, config_file: Path, run_gateway: Any
) -> None:
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1")
    gateway.wait_ready(port)
    wait_for(lambda: hermes(hermes_home, "status").stdout.startswith("Gateway is running"))
    assert "config.yaml changed" not in hermes(hermes_home, "status").stdout

    config = yaml.safe_load(config_file.read_text())
    config.setdefault("gateway", {})["max_concurrent_turns"] = 3
    config_file.write_text(yaml.safe_dump(config))

    said = "config.yaml changed since it started (gateway.max_concurrent_turns): restart it"
    wait_for(lambda: said in hermes(hermes_home, "status").stdout, timeout=30, interval=0.5)
    assert "changed since the gateway started (gateway.max_concurrent_turns)" in gateway.output()
    doctor = subprocess.run([HERMES, "doctor", "--offline"], capture_output=True, text=True,
                            env={**os.environ, "HERMES_HOME": str(hermes_home)}, timeout=120)  # fmt: skip
    assert "gateway.max_concurrent_turns changed since it started." in doctor.stdout
    assert "Fix: restart it to apply them (`hermes gateway restart`)." in doctor.stdout
    assert gateway.terminate() == 0
