"""Limits on a tool's process tree: file size, memory, process count, and killing all of it.

Every command runs with ``RLIMIT_FSIZE`` at ``terminal.max_file_mb`` (a ``yes`` flood
into a file, or into the output file, dies of SIGXFSZ at that size; the sandbox's
``/tmp`` holds no more either), ``RLIMIT_AS`` at ``terminal.max_memory_mb`` (an
allocation past it fails: Python's ``MemoryError``, C's ``ENOMEM``; every process of
the tree has that cap, as the limit is inherited) and no core dumps. The memory of the
whole command, all its processes together, is held to ``terminal.max_memory_mb`` too by
a ``memory`` cgroup of its own where one can be made (cgroup v1's memory hierarchy, or a
cgroup v2 root with the memory controller): the kernel then kills a process of the tree
past it (``memory_exceeded`` says so). Where none can be made, the cap is per process
only, and ``memory_scope`` says so (``hermes doctor``).
The process count is capped by a ``pids`` cgroup of its own (``terminal.max_processes``)
where one can be made here (cgroup v1's pids hierarchy, or a writable cgroup v2 root):
``RLIMIT_NPROC`` cannot do it, as it counts every process of the user and does not bind
root. The cgroup also finds every process of the tree, ``setsid`` children included, to
kill them all at the end; without one, the sandbox's PID namespace does that.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import resource
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext

log = logging.getLogger(__name__)

_V1_PIDS = Path("/sys/fs/cgroup/pids")
_V1_MEMORY = Path("/sys/fs/cgroup/memory")
_V2_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int
    max_output_bytes: int
    max_processes: int
    max_memory_bytes: int


def limits_of(ctx: ToolContext) -> Limits:
    mb = 1024 * 1024
    return Limits(
        max_file_bytes=int(ctx.setting("terminal.max_file_mb")) * mb,
        max_output_bytes=int(ctx.setting("terminal.max_output_mb")) * mb,
        max_processes=int(ctx.setting("terminal.max_processes")),
        max_memory_bytes=int(ctx.setting("terminal.max_memory_mb")) * mb,
    )


class ProcessGroupCap:
    """A pids cgroup for one command's tree (``path`` None where none can be made), and
    a memory cgroup holding all of it to ``max_memory_bytes`` (``memory``; the same
    cgroup on v2)."""

    def __init__(self, max_processes: int, max_memory_bytes: int = 0) -> None:
        self.path = _make_cgroup(max_processes)
        self.memory = _make_memory_cgroup(self.path, max_memory_bytes)

    def preexec(self, limits: Limits) -> Callable[[], None]:
        """What the child runs before exec: set the rlimits and join the cgroups."""
        joined = {p for p in (self.path, self.memory) if p is not None}
        files = [str(p / "cgroup.procs") for p in joined]
        size, memory = limits.max_file_bytes, limits.max_memory_bytes

        def apply() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            for procs in files:
                with contextlib.suppress(OSError), open(procs, "w") as handle:
                    handle.write(str(os.getpid()))

        return apply

    def memory_exceeded(self) -> bool:
        """Whether the kernel killed a process of the tree at the memory cgroup's limit."""
        if self.memory is None:
            return False
        for name in ("memory.oom_control", "memory.events"):
            with contextlib.suppress(OSError, ValueError):
                for line in (self.memory / name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill" and int(value) > 0:
                        return True
        return False

    def kill_all(self) -> None:
        """SIGKILL every process still in the cgroup (a ``setsid`` child too)."""
        if self.path is None:
            return
        kill_file = self.path / "cgroup.kill"
        if kill_file.exists():
            with contextlib.suppress(OSError):
                kill_file.write_text("1")
                return
        for _ in range(20):  # a fork may race the read; a few rounds catch it
            pids = _pids(self.path)
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        """Kill what is left and remove the cgroups."""
        if self.path is not None:
            self.kill_all()
            _remove(self.path, self.kill_all)
        if self.memory is not None and self.memory != self.path:
            _remove(self.memory, self.kill_all)


def _remove(path: Path, kill_all: Callable[[], None]) -> None:
    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            kill_all()
            _pause()
    log.warning("could not remove the cgroup %s", path)


def _pause() -> None:
    import time

    time.sleep(0.02)


def _pids(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _make_cgroup(max_processes: int) -> Path | None:
    for root in _pids_roots():
        _sweep(root)
        path = _new_cgroup(root, "pids.max", max_processes)
        if path is not None:
            return path
    return None


def _new_cgroup(root: Path, control: str, limit: int, also: str | None = None) -> Path | None:
    """A new cgroup of this process under ``root``, ``limit`` written to its ``control``
    (and to ``also`` where the kernel has it); None, and nothing left, where it fails."""
    path = root / f"hermes-{os.getpid()}-{next(_counter)}"
    try:
        path.mkdir()
    except OSError:
        return None
    try:
        (path / control).write_text(str(limit))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    if also is not None:
        with contextlib.suppress(OSError):
            (path / also).write_text(str(limit))
    return path


def _make_memory_cgroup(pids: Path | None, max_bytes: int) -> Path | None:
    """A cgroup holding the whole tree to ``max_bytes``: the pids one on v2 (one
    hierarchy), a cgroup of v1's memory hierarchy otherwise; None where none can be made."""
    if max_bytes <= 0:
        return None
    if pids is not None and (pids / "memory.max").exists():
        with contextlib.suppress(OSError):
            (pids / "memory.max").write_text(str(max_bytes))
            with contextlib.suppress(OSError):
                (pids / "memory.swap.max").write_text("0")
            return pids
    if not (_V1_MEMORY / "memory.limit_in_bytes").exists():
        return None
    _sweep(_V1_MEMORY)
    # Swap counted too where the kernel counts it.
    swap = "memory.memsw.limit_in_bytes"
    return _new_cgroup(_V1_MEMORY, "memory.limit_in_bytes", max_bytes, also=swap)


@functools.cache
def memory_scope() -> str:
    """What ``terminal.max_memory_mb`` holds here: the whole command, or each process."""
    cap = ProcessGroupCap(1, 1024 * 1024 * 1024)
    try:
        if cap.memory is not None:
            return "the whole command (a memory cgroup)"
        return "each process only (RLIMIT_AS): no memory cgroup can be made here"
    finally:
        cap.close()


def _sweep(root: Path) -> None:
    """Remove the empty cgroups of hermes processes that died before removing them."""
    try:
        names = [p for p in root.iterdir() if p.name.startswith("hermes-")]
    except OSError:
        return
    for path in names:
        owner = path.name.split("-")[1]
        if owner.isdigit() and int(owner) != os.getpid() and not psutil.pid_exists(int(owner)):
            with contextlib.suppress(OSError):
                path.rmdir()  # fails while a process is still in it, as it should


def _pids_roots() -> list[Path]:
    roots = []
    if (_V1_PIDS / "pids.max").exists() or (_V1_PIDS / "tasks").exists():
        roots.append(_V1_PIDS)
    controllers = _V2_ROOT / "cgroup.subtree_control"
    try:
        if "pids" in controllers.read_text().split():
            roots.append(_V2_ROOT)
    except OSError:
        pass
    return roots
