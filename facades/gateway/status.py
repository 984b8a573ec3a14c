"""Hermes Agent 0.19's ``gateway.status``: whether a gateway runs, over hermes.gateway.state_file.

A running gateway keeps ``gateway_state.json`` and ``gateway.pid`` in its home in 0.19's
shape; these calls read them and check the recorded process (its pid and start time).
``get_running_pid`` removes a ``gateway.pid`` no live gateway holds ``gateway.lock`` for,
as 0.19 does (hermes's gateway takes that lock before it writes the pid file).

0.19's writers are here too, for a process that runs as a gateway of its own on the home
(hermes's gateway writes the same files through hermes.gateway.state_file):
``write_pid_file``, ``remove_pid_file``, ``write_runtime_status``, the runtime lock
(``gateway.lock``), the machine-wide scoped locks that keep two gateways off one bot
token (``$HERMES_GATEWAY_LOCK_DIR``, else ``~/.local/state/hermes/gateway-locks``), and
the ``--replace`` takeover and planned-stop markers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, NamedTuple

from hermes_constants import get_hermes_home, get_process_hermes_home

from hermes.gateway import state_file

__all__ = [
    "StormInfo",
    "acquire_gateway_runtime_lock",
    "acquire_scoped_lock",
    "clear_planned_stop_marker",
    "clear_takeover_marker",
    "consume_planned_stop_marker_for_self",
    "consume_takeover_marker_for_self",
    "derive_gateway_busy",
    "derive_gateway_drainable",
    "get_process_start_time",
    "get_running_pid",
    "get_running_pid_cached",
    "get_runtime_status_running_pid",
    "is_gateway_running",
    "is_gateway_runtime_lock_active",
    "looks_like_gateway_command_line",
    "looks_like_gateway_runtime_command_line",
    "parse_active_agents",
    "planned_stop_marker_targets_self",
    "read_runtime_status",
    "record_start_and_check_storm",
    "release_all_scoped_locks",
    "release_gateway_runtime_lock",
    "release_scoped_lock",
    "remove_pid_file",
    "terminate_pid",
    "write_pid_file",
    "write_planned_stop_marker",
    "write_runtime_status",
    "write_takeover_marker",
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
    """The pid of the gateway running on this home (or the home of ``pid_path``), or None.
    With ``cleanup_stale``, a ``gateway.pid`` (and ``gateway.lock``) no live process holds
    the lock for is removed, so the next gateway starts on a clean home."""
    home = Path(pid_path or _get_pid_path()).parent
    status = state_file.read_status(home)
    if status.running:
        return status.pid
    if cleanup_stale and not is_gateway_runtime_lock_active(home / state_file.LOCK_FILE):
        for stale in (home / _PID_FILE, home / state_file.LOCK_FILE):
            try:
                stale.unlink(missing_ok=True)
            except OSError:
                pass
    return None


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


# --- 0.19's writers, for a process that is a gateway of its own ----------------------

_UNSET: Any = object()  # "leave as recorded", distinct from None ("clear it")
_runtime_lock: IO[str] | None = None  # this process's hold on gateway.lock
_TAKEOVER_MARKER = ".gateway-takeover.json"
_PLANNED_STOP_MARKER = ".gateway-planned-stop.json"
_MARKER_TTL_SECONDS = 60  # an older marker is stale


def _own_home() -> Path:
    """The home this process runs as a gateway of: ``$HERMES_HOME``, never a context's
    override (a request for another profile must not move the gateway's own files)."""
    return get_process_hermes_home()


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _get_process_start_time(pid: int) -> int | None:
    return state_file.process_start_time(pid)


def get_process_start_time(pid: int) -> int | None:
    """A process's start time, the fingerprint that tells it from a later one with its pid."""
    return _get_process_start_time(pid)


def _own_record() -> dict[str, Any]:
    pid = os.getpid()
    return {
        "pid": pid,
        "kind": _GATEWAY_KIND,
        "argv": list(sys.argv),
        "start_time": _get_process_start_time(pid),
    }


def write_pid_file() -> None:
    """Record this process in ``gateway.pid``; ``FileExistsError`` when one is there
    already (two gateways racing to start: exactly one wins)."""
    path = _own_home() / _PID_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(_own_record(), handle)


def remove_pid_file() -> None:
    """Remove ``gateway.pid`` if it is this process's (never a successor's)."""
    path = _own_home() / _PID_FILE
    record = state_file.read_json(path)
    if record is not None and record.get("pid") == os.getpid():
        path.unlink(missing_ok=True)


def write_runtime_status(
    *,
    gateway_state: Any = _UNSET,
    exit_reason: Any = _UNSET,
    restart_requested: Any = _UNSET,
    active_agents: Any = _UNSET,
    platform: Any = _UNSET,
    platform_state: Any = _UNSET,
    error_code: Any = _UNSET,
    error_message: Any = _UNSET,
    served_profiles: Any = _UNSET,
) -> None:
    """Bring ``gateway_state.json`` up to date as this process: its pid, argv and start
    time always; each field given (``None`` clears one), the others as recorded (so a
    turn's ``active_agents`` leaves the state alone)."""
    path = _own_home() / _RUNTIME_STATUS_FILE
    payload = state_file.read_json(path) or {"platforms": {}}
    payload.update(_own_record(), updated_at=_now())
    fields = {
        "gateway_state": gateway_state,
        "exit_reason": exit_reason,
        "restart_requested": restart_requested
        if restart_requested is _UNSET
        else bool(restart_requested),
        "active_agents": active_agents
        if active_agents is _UNSET
        else parse_active_agents(active_agents),
        "served_profiles": served_profiles
        if served_profiles is _UNSET
        else list(served_profiles or []),
    }
    payload.update({key: value for key, value in fields.items() if value is not _UNSET})
    if platform is not _UNSET:
        platforms = payload.setdefault("platforms", {})
        entry = platforms.get(platform) or {}
        for key, value in (
            ("state", platform_state),
            ("error_code", error_code),
            ("error_message", error_message),
        ):
            if value is not _UNSET:
                entry[key] = value
        platforms[platform] = {**entry, "updated_at": _now()}
    path.parent.mkdir(parents=True, exist_ok=True)
    state_file.write_json(path, payload)


def acquire_gateway_runtime_lock() -> bool:
    """Hold ``gateway.lock`` for this process's life (the kernel drops it when the process
    dies); False when another process holds it."""
    global _runtime_lock
    if _runtime_lock is None:
        _runtime_lock = state_file.hold_lock(_own_home() / state_file.LOCK_FILE, _own_record())
    return _runtime_lock is not None


def release_gateway_runtime_lock() -> None:
    global _runtime_lock
    if _runtime_lock is not None:
        _runtime_lock.close()  # closing drops the lock
        _runtime_lock = None


def is_gateway_runtime_lock_active(lock_path: Path | None = None) -> bool:
    """Whether a live process holds ``gateway.lock`` (this home's, or ``lock_path``)."""
    path = Path(lock_path) if lock_path is not None else _own_home() / state_file.LOCK_FILE
    if _runtime_lock is not None and path == _own_home() / state_file.LOCK_FILE:
        return True
    return state_file.lock_held(path)


def _lock_dir() -> Path:
    override = os.environ.get("HERMES_GATEWAY_LOCK_DIR")
    if override:
        return Path(override)
    state_home = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state_home / "hermes" / "gateway-locks"


def _scope_lock_path(scope: str, identity: str) -> Path:
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]
    return _lock_dir() / f"{scope}-{digest}.lock"


def _record_is_live(record: dict[str, Any]) -> bool:
    """The process a record names still runs (the same one: its start time agrees)."""
    pid = record.get("pid")
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    recorded, current = record.get("start_time"), _get_process_start_time(pid)
    return recorded is None or current is None or recorded == current


def acquire_scoped_lock(
    scope: str, identity: str, metadata: dict[str, Any] | None = None
) -> tuple[bool, dict[str, Any] | None]:
    """Claim ``scope`` + ``identity`` (a bot token: only its hash is written) for this
    process on this machine, so two gateways never poll one bot. ``(True, None)`` when
    claimed; ``(False, holder)`` when a live process holds it. An empty, unreadable or
    dead holder's file is taken over."""
    path = _scope_lock_path(scope, identity)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        **_own_record(),
        "scope": scope,
        "identity_hash": path.stem.rsplit("-", 1)[1],
        "metadata": metadata or {},
        "updated_at": _now(),
    }
    existing = state_file.read_json(path)
    if existing is not None:
        mine = existing.get("pid") == os.getpid()
        if mine and existing.get("start_time") == record["start_time"]:
            state_file.write_json(path, record)
            return True, existing
        if _record_is_live(existing):
            return False, existing
    path.unlink(missing_ok=True)  # a dead holder's, or a file cut short
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False, state_file.read_json(path)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    return True, None


def release_scoped_lock(scope: str, identity: str) -> None:
    """Give up a scoped lock this process holds (never another's)."""
    path = _scope_lock_path(scope, identity)
    record = state_file.read_json(path)
    ours = _own_record()
    if record and (record.get("pid"), record.get("start_time")) == (
        ours["pid"],
        ours["start_time"],
    ):
        path.unlink(missing_ok=True)


def release_all_scoped_locks(
    *, owner_pid: int | None = None, owner_start_time: int | None = None
) -> int:
    """Remove the scoped locks of the gateway ``owner_pid`` (started at
    ``owner_start_time``, so a later process with its pid keeps its own), or every one
    when no owner is named; how many were removed."""
    folder = _lock_dir()
    removed = 0
    for path in folder.glob("*.lock") if folder.is_dir() else ():
        if owner_pid is not None:
            record = state_file.read_json(path) or {}
            if record.get("pid") != owner_pid:
                continue
            if owner_start_time is not None and record.get("start_time") != owner_start_time:
                continue
        try:
            path.unlink(missing_ok=True)
            removed += 1
        except OSError:
            pass
    return removed


def _write_marker(name: str, target_pid: int, writer: dict[str, Any]) -> bool:
    record = {
        "target_pid": target_pid,
        "target_start_time": _get_process_start_time(target_pid),
        **writer,
        "written_at": _now(),
    }
    try:
        state_file.write_json(_own_home() / name, record)
    except OSError:
        return False
    return True


def _consume_marker(name: str) -> bool:
    """Whether the marker names this very process (its pid and start time), fresh and
    from this home; a marker is used once: it goes unless it is another home's."""
    path = _own_home() / name
    record = _fresh_marker(path)
    if record is None:
        return False
    home = record.get("replacer_hermes_home")
    if home is not None and home != str(_own_home()):
        return False
    path.unlink(missing_ok=True)
    return _names_this_process(record)


def _fresh_marker(path: Path) -> dict[str, Any] | None:
    """The marker at ``path`` if it names a pid and is fresh; a stale or broken one is
    removed."""
    record = state_file.read_json(path)
    if record is None:
        return None
    try:
        written = datetime.fromisoformat(str(record.get("written_at")))
        fresh = (datetime.now(UTC) - written).total_seconds() <= _MARKER_TTL_SECONDS
    except (TypeError, ValueError):
        fresh = False
    if not isinstance(record.get("target_pid"), int) or not fresh:
        path.unlink(missing_ok=True)
        return None
    return record


def _names_this_process(record: dict[str, Any]) -> bool:
    """Whether the marker's pid (and start time, when it has one) is this process's."""
    recorded, ours = record.get("target_start_time"), _get_process_start_time(os.getpid())
    return record["target_pid"] == os.getpid() and (
        recorded is None or ours is None or recorded == ours
    )


def write_takeover_marker(target_pid: int) -> bool:
    """Say that this process replaces the gateway ``target_pid`` (``--replace``), so its
    exit on the coming SIGTERM is planned; False when it could not be written."""
    writer = {"replacer_pid": os.getpid(), "replacer_hermes_home": str(_own_home())}
    return _write_marker(_TAKEOVER_MARKER, target_pid, writer)


def consume_takeover_marker_for_self() -> bool:
    return _consume_marker(_TAKEOVER_MARKER)


def clear_takeover_marker() -> None:
    (_own_home() / _TAKEOVER_MARKER).unlink(missing_ok=True)


def write_planned_stop_marker(target_pid: int) -> bool:
    """Say that the gateway ``target_pid`` is being stopped on purpose."""
    return _write_marker(_PLANNED_STOP_MARKER, target_pid, {"stopper_pid": os.getpid()})


def consume_planned_stop_marker_for_self() -> bool:
    return _consume_marker(_PLANNED_STOP_MARKER)


def clear_planned_stop_marker() -> None:
    (_own_home() / _PLANNED_STOP_MARKER).unlink(missing_ok=True)


def planned_stop_marker_targets_self() -> bool:
    """Whether a fresh planned-stop marker names this process; unlike ``consume_...`` it
    leaves such a marker in place (a stale or broken one is removed)."""
    record = _fresh_marker(_own_home() / _PLANNED_STOP_MARKER)
    return record is not None and _names_this_process(record)


def get_running_pid_cached(
    pid_path: Path | None = None, *, cleanup_stale: bool = True, ttl_seconds: float = 1.0
) -> int | None:
    """``get_running_pid`` for a status page polled many times a second: the answer of
    the last ``ttl_seconds``, while the gateway's files are unchanged."""
    home = Path(pid_path or _get_pid_path()).parent
    if ttl_seconds <= 0:
        return get_running_pid(pid_path, cleanup_stale=cleanup_stale)
    key = (str(home), cleanup_stale)
    stamp = _files_stamp(home)
    now = time.monotonic()
    held = _PID_CACHE.get(key)
    if held is not None and now - held[0] <= ttl_seconds and held[1] == stamp:
        return held[2]
    pid = get_running_pid(pid_path, cleanup_stale=cleanup_stale)
    _PID_CACHE[key] = (time.monotonic(), _files_stamp(home), pid)
    return pid


_PID_CACHE: dict[tuple[str, bool], tuple[float, tuple[Any, ...], int | None]] = {}


def _files_stamp(home: Path) -> tuple[Any, ...]:
    stamps: list[Any] = []
    for name in (_PID_FILE, state_file.LOCK_FILE, _RUNTIME_STATUS_FILE):
        try:
            info = (home / name).stat()
            stamps.append((info.st_mtime_ns, info.st_size))
        except OSError:
            stamps.append(None)
    return tuple(stamps)


def _gateway_subcommand(command: str | None) -> str | None:
    """The ``gateway`` subcommand a command line runs (``run`` for a bare ``gateway`` or a
    gateway entry point), None when it is no hermes gateway command; ``--profile``/``-p``
    and their values are skipped wherever they stand."""
    if not command:
        return None
    try:
        words = shlex.split(command, posix=False)
    except ValueError:
        words = command.split()
    tokens = [word.strip("\"'").replace("\\", "/").lower() for word in words]
    for token in tokens:
        if token.endswith("gateway/run.py") or token.rsplit("/", 1)[-1] in (
            "hermes-gateway",
            "hermes-gateway.exe",
        ):
            return "run"
    names = {token.rsplit("/", 1)[-1] for token in tokens}
    joined = " ".join(tokens)
    if not (names & {"hermes", "hermes.exe"} or "hermes_cli" in joined or "-m hermes" in joined):
        return None
    kept: list[str] = []
    skip = False
    for token in tokens:
        if skip:
            skip = False
        elif token in ("--profile", "-p"):
            skip = True
        elif not token.startswith(("--profile=", "-p=")):
            kept.append(token)
    if "gateway" not in kept:
        return None
    after = kept[kept.index("gateway") + 1 :]
    return after[0] if after else "run"


def looks_like_gateway_command_line(command: str | None) -> bool:
    """Whether ``command`` runs a gateway (``hermes gateway run``, ``hermes -p x gateway``),
    not another ``gateway`` subcommand (``status``, ``stop``) or a program merely so named."""
    return _gateway_subcommand(command) == "run"


def looks_like_gateway_runtime_command_line(command: str | None) -> bool:
    """``looks_like_gateway_command_line``, or ``gateway restart`` (0.19 runs the gateway
    in that process where no service manager restarts it)."""
    return _gateway_subcommand(command) in ("run", "restart")


def terminate_pid(pid: int, *, force: bool = False) -> None:
    """Ask the process ``pid`` to stop (SIGTERM), or with ``force`` kill it (SIGKILL)."""
    os.kill(pid, signal.SIGKILL if force else signal.SIGTERM)


class StormInfo(NamedTuple):
    """Too many gateway starts: ``count`` within ``window_s`` seconds; wait ``backoff_s``."""

    count: int  # type: ignore[assignment]  # 0.19's field name; it hides tuple.count
    window_s: float
    backoff_s: float


def record_start_and_check_storm(
    max_starts: int = 5, window_s: float = 120.0, *, backoff_cap_s: float = 300.0
) -> StormInfo | None:
    """Note a gateway start in the home's ``gateway-starts.log`` (the last 40 or so) and say
    whether more than ``max_starts`` came within ``window_s`` (a restart loop): then a
    backoff doubling with each start over, at most ``backoff_cap_s``. Never raises."""
    path = _own_home() / "gateway-starts.log"
    now = time.time()
    try:
        held = path.read_text(encoding="utf-8").split() if path.exists() else []
        starts = [float(word) for word in held if _is_number(word)] + [now]
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = starts[-max(max_starts * 4, 40) :]
        state_file.write_text_atomic(path, "\n".join(repr(s) for s in kept) + "\n")
    except OSError:
        return None
    recent = [start for start in starts if now - start <= window_s]
    if len(recent) <= max_starts:
        return None
    backoff = min(backoff_cap_s, 5.0 * 2 ** min(len(recent) - max_starts, 6))
    return StormInfo(len(recent), window_s, backoff)


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True
