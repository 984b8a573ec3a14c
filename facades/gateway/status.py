"""Hermes Agent 0.19's ``gateway.status``: whether a gateway runs, over hermes.gateway.state_file.

A running gateway keeps ``gateway_state.json`` and ``gateway.pid`` in its home in 0.19's
shape; these calls read them and check the recorded process (its pid and start time).
They only read: nothing here removes a stale file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_constants import get_hermes_home

from hermes.gateway import state_file

__all__ = [
    "derive_gateway_busy",
    "derive_gateway_drainable",
    "get_running_pid",
    "get_runtime_status_running_pid",
    "is_gateway_running",
    "parse_active_agents",
    "read_runtime_status",
]

_GATEWAY_KIND = state_file.KIND
_RUNTIME_STATUS_FILE = state_file.STATE_FILE
_PID_FILE = state_file.PID_FILE


def _get_pid_path() -> Path:
    return get_hermes_home() / _PID_FILE


def _get_runtime_status_path() -> Path:
    return get_hermes_home() / _RUNTIME_STATUS_FILE


def read_runtime_status(path: Path | None = None) -> dict[str, Any] | None:
    """``gateway_state.json`` of this home (or the one at ``path``); None when absent."""
    return state_file.read_status(Path(path or _get_runtime_status_path()).parent).state


def get_running_pid(pid_path: Path | None = None, *, cleanup_stale: bool = True) -> int | None:
    """The pid of the gateway running on this home (or the home of ``pid_path``), or None."""
    status = state_file.read_status(Path(pid_path or _get_pid_path()).parent)
    return status.pid if status.running else None


def get_runtime_status_running_pid(
    runtime: dict[str, Any] | None, *, expected_home: Path | None = None
) -> int | None:
    """The pid a state record names, if that gateway still runs."""
    if not isinstance(runtime, dict):
        return None
    home = Path(expected_home) if expected_home is not None else get_hermes_home()
    status = state_file.read_status(home)
    return status.pid if status.running and status.pid == runtime.get("pid") else None


def is_gateway_running() -> bool:
    return get_running_pid() is not None


def parse_active_agents(raw: Any) -> int:
    """A recorded ``active_agents`` as a count: never negative, 0 when it is not a number."""
    try:
        return max(0, int(raw))
    except (TypeError, ValueError):
        return 0


def derive_gateway_busy(*, gateway_running: bool, gateway_state: Any, active_agents: Any) -> bool:
    """A live gateway in the ``running`` state with a turn under way; False when unknown."""
    return derive_gateway_drainable(
        gateway_running=gateway_running, gateway_state=gateway_state
    ) and (parse_active_agents(active_agents) > 0)


def derive_gateway_drainable(*, gateway_running: bool, gateway_state: Any) -> bool:
    """A live gateway in the ``running`` state (one a drain can be asked of)."""
    return bool(gateway_running) and gateway_state == "running"
