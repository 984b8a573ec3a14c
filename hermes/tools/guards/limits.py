"""Limits on a tool's process tree: file size, memory, process count, and killing all of it.

Every command runs with ``RLIMIT_FSIZE`` at ``terminal.max_file_mb`` (a ``yes`` flood
into a file, or into the output file, dies of SIGXFSZ at that size; the sandbox's
``/tmp`` holds no more either), ``RLIMIT_AS`` at ``terminal.max_memory_mb`` (an
allocation past it fails: Python's ``MemoryError``, C's ``ENOMEM``; every process of
the tree has that cap, as the limit is inherited) and no core dumps.
The process count is capped by a ``pids`` cgroup of its own (``terminal.max_processes``)
where one can be made here (cgroup v1's pids hierarchy, or a writable cgroup v2 root):
``RLIMIT_NPROC`` cannot do it, as it counts every process of the user and does not bind
root. The cgroup also finds every process of the tree, ``setsid`` children included, to
kill them all at the end; without one, the sandbox's PID namespace does that.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import resource
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext

log = logging.getLogger(__name__)

_V1_PIDS = Path("/sys/fs/cgroup/pids")
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
    """A pids cgroup for one command's tree (``path`` None where none can be made)."""

    def __init__(self, max_processes: int) -> None:
        self.path = _make_cgroup(max_processes)

    def preexec(self, limits: Limits) -> Callable[[], None]:
        """What the child runs before exec: set the rlimits and join the cgroup."""
        procs = str(self.path / "cgroup.procs") if self.path else None
        size, memory = limits.max_file_bytes, limits.max_memory_bytes

        def apply() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if procs is not None:
                with contextlib.suppress(OSError), open(procs, "w") as handle:
                    handle.write(str(os.getpid()))

        return apply

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
        """Kill what is left and remove the cgroup."""
        if self.path is None:
            return
        self.kill_all()
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                self.kill_all()
                _pause()
        log.warning("could not remove the cgroup %s", self.path)


def _pause() -> None:
    import time

    time.sleep(0.02)


def _pids(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _make_cgroup(max_processes: int) -> Path | None:
    name = f"hermes-{os.getpid()}-{next(_counter)}"
    for root in _pids_roots():
        _sweep(root)
        path = root / name
        try:
            path.mkdir()
        except OSError:
            continue
        try:
            (path / "pids.max").write_text(str(max_processes))
            return path
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
    return None


def _sweep(root: Path) -> None:
    """Remove the empty cgroups of hermes processes that died before removing them."""
    try:
        names = [p for p in root.iterdir() if p.name.startswith("hermes-")]
    except OSError:
        return
    for path in names:
        owner = path.name.split("-")[1]
        if owner.isdigit() and int(owner) != os.getpid() and not _alive(int(owner)):
            with contextlib.suppress(OSError):
                path.rmdir()  # fails while a process is still in it, as it should


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


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
