"""``$HERMES_HOME/gateway_state.json`` and ``gateway.pid``, written as Hermes Agent 0.19 does.

Tools made for Hermes Agent (agent-deck, dashboards) read whether a gateway runs from
these files, so a running gateway keeps them in 0.19's shape: ``gateway.pid`` holds
``{pid, kind, argv, start_time}`` while it runs; ``gateway_state.json`` holds the same
plus ``gateway_state`` (``starting`` -> ``running`` -> ``draining`` -> ``stopped``, or
``startup_failed``), ``exit_reason``, ``restart_requested``, ``active_agents``,
``platforms`` (``{name: {state, updated_at}}``) and ``updated_at`` (ISO 8601, UTC). At
exit the state file stays, marked ``stopped``; the pid file goes. ``read_status`` tells a
live gateway from a stale file by the pid and its start time.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

STATE_FILE = "gateway_state.json"
PID_FILE = "gateway.pid"
KIND = "hermes-gateway"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def process_start_time(pid: int) -> int | None:
    """A per-process fingerprint against pid reuse: 0.19's, so its readers agree."""
    try:
        # Field 22 of /proc/PID/stat: start time in clock ticks since boot.
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        pass
    try:
        import psutil

        return int(round(psutil.Process(pid).create_time() * 100))
    except Exception:  # no such process, or no way to ask
        return None


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, separators=(",", ":"))
    os.replace(tmp, path)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


class GatewayStateFile:
    """This process's record in HERMES_HOME; every write is atomic and never raises."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.pid = os.getpid()
        self.record: dict[str, Any] = {
            "pid": self.pid,
            "kind": KIND,
            "argv": list(sys.argv),
            "start_time": process_start_time(self.pid),
        }
        self.state: dict[str, Any] = {
            **self.record,
            "gateway_state": "starting",
            "exit_reason": None,
            "restart_requested": False,
            "active_agents": 0,
            "platforms": {},
            "updated_at": _now(),
        }

    def starting(self) -> None:
        self._save(self.home / PID_FILE, self.record)
        self.update(gateway_state="starting")

    def running(self, platforms: list[str]) -> None:
        stamp = _now()
        self.state["platforms"] = {name: {"state": "connected", "updated_at": stamp}
                                   for name in platforms}  # fmt: skip
        self.update(gateway_state="running")

    def update(self, **fields: Any) -> None:
        self.state.update(fields, updated_at=_now())
        self._save(self.home / STATE_FILE, self.state)

    def stopped(self, exit_reason: str | None = None, *, failed: bool = False) -> None:
        stamp = _now()
        for platform in self.state["platforms"].values():
            platform.update(state="disconnected", updated_at=stamp)
        self.update(gateway_state="startup_failed" if failed else "stopped",
                    exit_reason=exit_reason, active_agents=0)  # fmt: skip
        pid_path = self.home / PID_FILE
        found = _read_json(pid_path)
        if found is not None and found.get("pid") == self.pid:  # never another gateway's
            pid_path.unlink(missing_ok=True)

    def _save(self, path: Path, payload: dict[str, Any]) -> None:
        try:
            _write_json(path, payload)
        except OSError:
            pass  # a read-only home: the gateway serves all the same


@dataclass(frozen=True)
class GatewayStatus:
    """What the state file says, checked against the process table."""

    running: bool
    state: dict[str, Any] | None

    @property
    def pid(self) -> int | None:
        pid = (self.state or {}).get("pid")
        return pid if isinstance(pid, int) else None


def read_status(home: Path) -> GatewayStatus:
    """Whether a gateway runs on ``home``: its state file, and that process alive."""
    state = _read_json(Path(home) / STATE_FILE)
    if state is None:
        return GatewayStatus(False, None)
    pid = state.get("pid")
    alive = (
        isinstance(pid, int)
        and state.get("gateway_state") in ("starting", "running", "draining", "degraded")
        and _alive(pid, state.get("start_time"))
    )
    return GatewayStatus(alive, state)


def _alive(pid: int, start_time: Any) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it exists
    return start_time is None or process_start_time(pid) == start_time
