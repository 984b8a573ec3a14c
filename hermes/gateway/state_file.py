"""``$HERMES_HOME/gateway_state.json`` and ``gateway.pid``, written as Hermes Agent 0.19 does.

Tools made for Hermes Agent (agent-deck, dashboards) read whether a gateway runs from
these files, so a running gateway keeps them in 0.19's shape: ``gateway.pid`` holds
``{pid, kind, argv, start_time}`` while it runs; ``gateway_state.json`` holds the same
plus ``gateway_state`` (``starting`` -> ``running`` -> ``draining`` -> ``stopped``, or
``startup_failed``), ``exit_reason``, ``restart_requested``, ``active_agents``,
``platforms`` (``{name: {state, updated_at}}``) and ``updated_at`` (ISO 8601, UTC). At
exit the state file stays, marked ``stopped``; the pid file goes. ``read_status`` tells a
live gateway from a stale file by the pid and its start time.

Only one gateway of a home writes those two files (the one holding ``gateway.lock``);
every gateway also keeps its own record in ``gateways/``, so several on one home are
each reported (``running_gateways``) and a second one that fails never clears the
first one's state.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

STATE_FILE = "gateway_state.json"
PID_FILE = "gateway.pid"
LOCK_FILE = "gateway.lock"  # 0.19's runtime lock: held by the gateway that writes the two above
GATEWAYS_DIR = "gateways"  # one record per running gateway: gateways/<pid>.json and .lock
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


def write_json(path: Path, payload: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(payload, separators=(",", ":")))


def write_text_atomic(path: Path, text: str) -> None:
    """``text`` as the whole of ``path`` (0600): readers see the old file or the new one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


class GatewayStateFile:
    """This process's records in HERMES_HOME; every write is atomic and never raises.

    Several gateways may serve one home (other ports, another PostgreSQL host's peers),
    and a second one may fail to start beside a running one. So each keeps its own
    record, ``gateways/<pid>.json``, under a lock it holds while it lives
    (``gateways/<pid>.lock``: the kernel drops it when the process dies, so a reader
    tells a live record from a stale one without trusting pids). Only the gateway that
    holds ``gateway.lock`` (0.19's runtime lock, which 0.19's readers probe) writes
    ``gateway.pid`` and ``gateway_state.json``; a second gateway never touches them, and
    takes them over only when the holder is gone.
    """

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
        self._alive: IO[str] | None = None  # our lock on gateways/<pid>.lock
        self._primary: IO[str] | None = None  # our lock on gateway.lock, when we hold it

    @property
    def primary(self) -> bool:
        """Whether this gateway writes 0.19's files (``gateway.pid``, the state file)."""
        return self._primary is not None

    def starting(self) -> None:
        _prune_stale(self.home)
        self._alive = hold_lock(self.home / GATEWAYS_DIR / f"{self.pid}.lock", self.record)
        self.update(gateway_state="starting")

    def running(self, platforms: list[str], api_url: str | None = None) -> None:
        """Serving ``platforms``; ``api_url``: where the HTTP API listens (``http://host:port``)."""
        stamp = _now()
        self.state["platforms"] = {
            name: {"state": "connected", "updated_at": stamp} for name in platforms
        }
        self.update(gateway_state="running", api_url=api_url)

    def update(self, **fields: Any) -> None:
        self.state.update(fields, updated_at=_now())
        self._save(self.home / GATEWAYS_DIR / f"{self.pid}.json", self.state)
        if self._primary is None and self.state["gateway_state"] not in ENDED:
            self._take_primary()
        if self._primary is not None:
            self._save(self.home / STATE_FILE, self.state)

    def stopped(self, exit_reason: str | None = None, *, failed: bool = False) -> None:
        stamp = _now()
        for platform in self.state["platforms"].values():
            platform.update(state="disconnected", updated_at=stamp)
        ended = "startup_failed" if failed else "stopped"
        self.update(gateway_state=ended, exit_reason=exit_reason, active_agents=0)
        if self._primary is not None:
            pid_path = self.home / PID_FILE
            found = read_json(pid_path)
            if found is not None and found.get("pid") == self.pid:  # never another's
                pid_path.unlink(missing_ok=True)
            _release(self._primary)
            self._primary = None
        _release(self._alive)
        self._alive = None

    def refresh(self) -> None:
        """Take over 0.19's files when the gateway that wrote them is gone."""
        if self._primary is None and self.state["gateway_state"] not in ENDED:
            self.update()

    def _take_primary(self) -> None:
        self._primary = hold_lock(self.home / LOCK_FILE, self.record)
        if self._primary is not None:
            self._save(self.home / PID_FILE, self.record)

    def _save(self, path: Path, payload: dict[str, Any]) -> None:
        try:
            path.parent.mkdir(mode=0o700, exist_ok=True)
            write_json(path, payload)
        except OSError:
            pass  # a read-only home: the gateway serves all the same


ENDED = ("stopped", "startup_failed")


def hold_lock(path: Path, record: dict[str, Any]) -> IO[str] | None:
    """Take ``path``'s lock for this process's lifetime, with ``record`` in it; None
    when another process holds it (or the home is read-only)."""
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held until stopped
    except OSError:
        return None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    json.dump(record, handle)
    handle.flush()
    return handle


def _release(handle: IO[str] | None) -> None:
    if handle is not None:
        handle.close()  # closing drops the lock
    return None


def lock_held(path: Path) -> bool:
    """Whether a live process holds ``path``'s lock."""
    try:
        with open(path, encoding="utf-8") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return True
            return False
    except OSError:
        return False


def _prune_stale(home: Path) -> None:
    """Drop the records of gateways that are gone (their lock is free)."""
    folder = home / GATEWAYS_DIR
    for lock in folder.glob("*.lock") if folder.is_dir() else ():
        if not lock_held(lock):
            for path in (lock, lock.with_suffix(".json")):
                try:
                    path.unlink(missing_ok=True)
                except OSError:
                    pass


def running_gateways(home: Path) -> list[dict[str, Any]]:
    """The records of every gateway alive on ``home``, oldest first."""
    folder = Path(home) / GATEWAYS_DIR
    found = []
    for lock in sorted(folder.glob("*.lock")) if folder.is_dir() else ():
        record = read_json(lock.with_suffix(".json"))
        if record is not None and record.get("gateway_state") not in ENDED and lock_held(lock):
            found.append(record)
    return sorted(found, key=lambda r: (r.get("start_time") or 0, r.get("pid") or 0))


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
    state = read_json(Path(home) / STATE_FILE)
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


def served_platforms(home: Path) -> set[str]:
    """The platforms the gateways running on ``home`` serve now."""
    return {name for gateway in running_gateways(home) for name in gateway.get("platforms") or {}}


def describe_gateway(running: bool, state: dict[str, Any]) -> str:
    """One sentence on a gateway: running (pid, state, platforms, API) or not, and why."""
    platforms = state.get("platforms") or {}
    names = ", ".join(
        f"{name} ({info.get('state', '?')})" if isinstance(info, dict) else str(name)
        for name, info in sorted(platforms.items())
    )
    if running:
        busy = state.get("active_agents") or 0
        where = f"; API at {state['api_url']}/v1" if state.get("api_url") else ""
        line = (
            f"Gateway is running (pid {state.get('pid')}, {state.get('gateway_state')}, "
            f"{busy} turn{'' if busy == 1 else 's'} running) — platforms: {names or 'none'}"
            f"{where}."
        )
        store = state.get("store") or {}
        if store.get("state") == "unreachable":
            line += f" Its store is unreachable, so it refuses requests: {store.get('error')}"
        if state.get("config_changed"):
            keys = ", ".join(state["config_changed"])
            line += (
                f" config.yaml changed since it started ({keys}): restart it to apply "
                "(`hermes gateway restart`)."
            )
        return line
    if not state:
        return "Gateway is not running (it has never run on this HERMES_HOME)."
    last = state.get("gateway_state")
    if last in ("stopped", "startup_failed"):
        why = f": {state['exit_reason']}" if state.get("exit_reason") else ""
        return f"Gateway is not running ({last} at {state.get('updated_at')}{why})."
    return (
        f"Gateway is not running: pid {state.get('pid')} is gone without stopping "
        f"(last {last} at {state.get('updated_at')})."
    )
