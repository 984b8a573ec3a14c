"""The disk a command may fill: its own ``/tmp``, and the user's workspace.

A sandboxed command's ``/tmp`` is a fresh folder on disk (``scratch``, in
``$HERMES_HOME/sandbox-tmp/``, bound over ``/tmp`` and removed when the command ends), not
RAM: at most ``terminal.max_file_mb`` in all. A gateway user's or a job's workspace holds
at most ``tools.workspace_quota_mb``. No file-system quota is needed for either: while a
command runs, ``Watch.passed`` looks (its ``/tmp`` ten times a second, the workspace once),
and the command is killed when one is passed, with one sentence saying which (a burst
between two looks may pass it by what it wrote meanwhile, each file still capped by
``RLIMIT_FSIZE``); the file tools refuse to write into
a workspace at its quota (``quota_problem``); a command may still remove files there.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from hermes.tools import workspaces

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext

SCRATCH = "sandbox-tmp"
_MB = 1024 * 1024
_EVERY_SECONDS = 1.0
_counter = itertools.count()


@dataclass
class Watch:
    """What one command may fill, looked at no more than once a second."""

    scratch: Path | None
    scratch_bytes: int
    workspace: Path | None
    quota_bytes: int | None
    # What the workspace may reach: its quota, or what it held at the start when that was
    # more (a command that only removes files, rm, is never killed for the quota).
    allowed_bytes: int = 0
    _next: float = field(default=0.0)

    def passed(self) -> str | None:
        """One sentence when the command passed a limit (then it must be killed), else None.
        The small ``/tmp`` is looked at on every call, the workspace once a second."""
        if (
            self.scratch is not None
            and usage(self.scratch, self.scratch_bytes) > self.scratch_bytes
        ):
            return (
                f"Killed: the command's /tmp passed {self.scratch_bytes // _MB} MB "
                "(terminal.max_file_mb); write large files in the workspace."
            )
        now = time.monotonic()
        if now < self._next:
            return None
        self._next = now + _EVERY_SECONDS
        mine, quota = self.workspace, self.quota_bytes
        if (
            mine is not None
            and quota is not None
            and usage(mine, self.allowed_bytes) > self.allowed_bytes
        ):
            return quota_sentence("Killed: the workspace passed", quota)
        return None


def quota_sentence(start: str, quota_bytes: int) -> str:
    return (
        f"{start} its quota of {quota_bytes // _MB} MB (tools.workspace_quota_mb); remove "
        "files there (rm still runs), or ask the operator to raise the quota."
    )


def quota_bytes(ctx: ToolContext) -> int | None:
    """The quota of the turn's workspace: a gateway user's or a job's (None: no quota)."""
    value = ctx.setting("tools.workspace_quota_mb")
    if value is None or not workspaces.confined(ctx.source):
        return None
    return int(value) * _MB


def quota_problem(ctx: ToolContext, adding: int = 0) -> str | None:
    """Why nothing more may be written in the workspace (it is at its quota), or None."""
    quota = quota_bytes(ctx)
    if quota is None:
        return None
    if usage(Path(os.path.realpath(ctx.cwd)), quota) + adding > quota:
        return quota_sentence("Refused: the workspace is at", quota)
    return None


def watch(ctx: ToolContext, scratch: Path | None) -> Watch:
    quota = quota_bytes(ctx)
    mine = Path(os.path.realpath(ctx.cwd)) if quota is not None else None
    held = usage(mine, quota) if mine is not None and quota is not None else 0
    allowed = max(quota or 0, held)
    return Watch(scratch, int(ctx.setting("terminal.max_file_mb")) * _MB, mine, quota, allowed)


def usage(folder: Path, enough: int | None = None) -> int:
    """Bytes of disk the files under ``folder`` take (links not followed); the count
    stops once past ``enough``."""
    total = 0
    pending = [folder]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += st.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
        if enough is not None and total > enough:
            return total
    return total


def make_scratch(hermes_home: Path) -> Path:
    """A fresh, private folder for one command's ``/tmp``."""
    holder = Path(hermes_home) / SCRATCH
    holder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _sweep(holder)
    path = holder / f"hermes-{os.getpid()}-{next(_counter)}"
    path.mkdir(mode=0o700)
    return path


def remove_scratch(path: Path | None) -> None:
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)


def _sweep(holder: Path) -> None:
    """Remove the folders of hermes processes that died before removing them."""
    with contextlib.suppress(OSError):
        for path in holder.iterdir():
            owner = path.name.split("-")[1] if path.name.count("-") >= 2 else ""
            if owner.isdigit() and int(owner) != os.getpid() and not psutil.pid_exists(int(owner)):
                shutil.rmtree(path, ignore_errors=True)
