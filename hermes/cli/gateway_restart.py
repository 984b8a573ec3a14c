"""`hermes gateway restart`: stop each gateway of a home, then start it again as it was;
`hermes gateway start` and `stop`: one in the background, and stopping them.

A gateway runs in the foreground of whoever started it (a terminal, systemd, a
container), so a restart from another shell sends it SIGTERM (a graceful stop: running
turns finish, queued input stays in the store for the next start), waits for it to be
gone, and starts the same command line again, in its old folder, detached, with its
output appended to ``logs/gateway.log``. A gateway under a service manager that restarts
it by itself is then one more process: restart it with that manager instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

from hermes.errors import HermesError
from hermes.gateway.state_file import read_status, running_gateways


def restart_gateways(home: Path, timeout: float) -> Iterator[str]:
    """Restart every gateway running on ``home``; one line said per gateway."""
    found = _running(home)
    if not found:
        raise HermesError(
            f"No gateway runs on {home} to restart; start one with `hermes gateway run`."
        )
    for record in found:
        yield _restart(home, record, timeout)


def start_gateway(home: Path, command: list[str], timeout: float) -> str:
    """Start ``command`` (a `gateway run`) detached, in this folder; wait until it serves."""
    running = _running(home)
    if running:
        pids = ", ".join(str(r.get("pid")) for r in running)
        raise HermesError(
            f"A gateway already runs on {home} (pid {pids}); use `hermes gateway restart`, "
            "or `hermes gateway stop` first."
        )
    pid = _start(home, command, os.getcwd())
    try:
        _wait_serving(home, pid, timeout)
    except HermesError:
        raise HermesError(
            f"The gateway started in the background (pid {pid}) is not serving (it failed, "
            f"or is still starting after {timeout:.0f} s); see {home / 'logs' / 'gateway.log'}."
        ) from None
    return f"✓ Gateway started (pid {pid}); its log is {home / 'logs' / 'gateway.log'}."


def stop_gateways(home: Path, timeout: float) -> Iterator[str]:
    """Stop every gateway running on ``home`` as SIGTERM does; one line said per gateway
    (0.19's words when none runs)."""
    found = _running(home)
    if not found:
        yield "✗ No gateway running for this profile"
        return
    for record in found:
        pid = int(record["pid"])
        try:
            process = psutil.Process(pid)
            os.kill(pid, signal.SIGTERM)
        except (psutil.Error, ProcessLookupError):
            yield f"✓ Stopped gateway for this profile (pid {pid} was already gone)"
            continue
        if not _ends(process, timeout):
            raise HermesError(
                f"The gateway (pid {pid}) did not stop within {timeout:.0f} s (turns still "
                "running?); run `hermes gateway stop` again to interrupt them."
            )
        yield f"✓ Stopped gateway for this profile (pid {pid})"


def _running(home: Path) -> list[dict[str, Any]]:
    live = running_gateways(home)
    if live:
        return live
    found = read_status(home)  # a gateway of an older hermes keeps only the state file
    return [found.state] if found.running and found.state else []


def _restart(home: Path, record: dict[str, Any], timeout: float) -> str:
    pid = int(record["pid"])
    try:
        process = psutil.Process(pid)
        folder = process.cwd()
    except psutil.Error as exc:
        raise HermesError(f"Cannot restart the gateway (pid {pid}): {exc}.") from exc
    command = [sys.executable, "-m", "hermes", *list(record.get("argv") or [])[1:]]
    os.kill(pid, signal.SIGTERM)
    if not _ends(process, timeout):
        raise HermesError(
            f"The gateway (pid {pid}) did not stop within {timeout:.0f} s (turns still "
            "running?); nothing was started. Try again, or raise --timeout."
        )
    new = _start(home, command, folder)
    _wait_serving(home, new, timeout)
    return f"Restarted the gateway: pid {pid} stopped, pid {new} serving."


def _ends(process: psutil.Process, timeout: float) -> bool:
    """Whether ``process`` is gone within ``timeout`` (a zombie its parent has not
    reaped yet is gone: it serves nothing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(process):
            return True
        time.sleep(0.1)
    return False


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _pid_alive(pid: int) -> bool:
    try:
        return _alive(psutil.Process(pid))
    except psutil.NoSuchProcess:
        return False


def _start(home: Path, command: list[str], folder: str) -> int:
    logs = home / "logs"
    logs.mkdir(mode=0o700, exist_ok=True)
    with open(logs / "gateway.log", "ab") as log:
        started = subprocess.Popen(
            command,
            cwd=folder,
            env={**os.environ, "HERMES_HOME": str(home)},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this command and its terminal
        )
    return started.pid


def _wait_serving(home: Path, pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(
            r.get("pid") == pid and r.get("gateway_state") == "running"
            for r in running_gateways(home)
        ):
            return
        if not _pid_alive(pid):
            raise HermesError(
                f"The gateway stopped, but its new start (pid {pid}) failed; see "
                f"{home / 'logs' / 'gateway.log'}."
            )
        time.sleep(0.2)
    raise HermesError(
        f"The gateway was started again (pid {pid}) but is not serving after {timeout:.0f} s; "
        f"see {home / 'logs' / 'gateway.log'}."
    )
