"""The operating-system sandbox every tool process runs in (docs/design.md, invariant 13).

The boundary is the kernel, not a parser: a command line can always say more than a
parser reads (``cd``, links, options, scripts, interpreters), so the terminal's commands
and background processes run under bubblewrap, where

- the file system is what the one view says (``view.py``, the table the file tools
  use too): the system read-only, the user's home hidden but for the workspace and
  ``terminal.readable_paths``, only the workspace and ``terminal.writable_paths``
  writable, start-up and settings files and a repository's ``.git/config``,
  ``hooks/``, ``info/`` read-only whether or not they exist, HERMES_HOME, the store and
  credential stores hidden; ``/tmp`` is a fresh, private folder on disk for each
  command (``disk.py``), held to ``terminal.max_file_mb``;
- the process gets a fresh PID namespace with its own ``/proc`` (nothing of hermes's to
  read or signal), no capabilities, and dies with hermes (``--die-with-parent``); when
  its first process ends, the kernel ends every process left in the namespace, so
  nothing (not even a ``setsid`` child) outlives its command;
- the network is shared or not by ``terminal.network`` (``network_on``: unset, it is on
  in the terminal chat and off for the turns of gateway and API users).

Why bubblewrap rather than Landlock: bubblewrap is a small, audited setuid-free
program packaged by every distribution (Debian ``bubblewrap``) that gives us mount,
PID and network namespaces in one call, so it can hide paths, not only deny writes,
and give the command its own ``/proc``; Landlock only restricts file access, needs a
5.13+ kernel with the LSM enabled (ABI-dependent rules), and leaves ``/proc`` of hermes
and the network (before ABI 4) in reach.

``terminal.sandbox`` says which: ``auto`` (bubblewrap when it works here, else none, said
once at start), ``bwrap`` (required: without it commands are refused), ``off``.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.tools import workspaces
from hermes.tools.guards import view

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext

log = logging.getLogger(__name__)

BWRAP = "bwrap"
SANDBOXED = "bwrap"
NONE = "none"


@dataclass(frozen=True)
class SandboxMode:
    """What runs the tools' processes: ``kind`` is ``bwrap`` or ``none``; ``detail`` says why."""

    kind: str
    detail: str

    @property
    def sandboxed(self) -> bool:
        return self.kind == SANDBOXED

    def describe(self) -> str:
        if self.sandboxed:
            return f"bubblewrap sandbox ({self.detail})"
        return f"no sandbox ({self.detail})"


def setting_of(value: object) -> str:
    """``terminal.sandbox`` as one word (YAML's bare ``off`` arrives as False)."""
    return "off" if value is False else str(value)


def mode_for(setting: object) -> SandboxMode:
    """The sandbox in force for a ``terminal.sandbox`` setting (``auto``, ``bwrap``, ``off``)."""
    if setting_of(setting) == "off":
        return SandboxMode(NONE, "terminal.sandbox is off")
    problem = _probe()
    if problem is None:
        return SandboxMode(SANDBOXED, "bubblewrap with user namespaces")
    return SandboxMode(NONE, problem)


def mode_of(ctx: ToolContext) -> SandboxMode:
    return mode_for(ctx.setting("terminal.sandbox"))


def required(ctx: ToolContext) -> bool:
    """Whether the config demands the sandbox (``bwrap``): then no sandbox means no command."""
    return setting_of(ctx.setting("terminal.sandbox")) == "bwrap"


@functools.cache
def _probe() -> str | None:
    """Why bubblewrap cannot sandbox here, or None when it can (checked once per process)."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux; this is {sys.platform}"
    path = shutil.which(BWRAP)
    if path is None:
        return "bwrap is not installed (Debian/Ubuntu: apt install bubblewrap)"
    try:
        result = subprocess.run(
            # --size (a capped /tmp) is bubblewrap 0.5's: an older one says so here.
            [path, *_ISOLATION, "--ro-bind", "/", "/", "--proc", "/proc"]
            + ["--size", "1048576", "--tmpfs", "/tmp", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start ({exc})"
    if result.returncode != 0:
        reason = result.stderr.decode(errors="replace").strip().splitlines()
        if reason and "--size" in reason[-1]:
            return "bwrap is older than 0.5 and cannot cap /tmp (upgrade bubblewrap)"
        return (
            f"bwrap cannot create namespaces here ({reason[-1] if reason else 'no reason given'})"
        )
    return None


_ISOLATION = (
    "--unshare-all",
    "--unshare-user",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    "--new-session",
)


def say_once(setting: object) -> SandboxMode:
    """The mode in force; when there is no sandbox, say so on stderr (once per process)."""
    mode = mode_for(setting)
    if not mode.sandboxed:
        _warn_once(mode.detail)
    return mode


@functools.cache
def _warn_once(detail: str) -> None:
    print(
        f"hermes: tool commands and MCP servers run WITHOUT a sandbox: {detail}. On surfaces where nobody "
        "can approve, only read-only commands run.",
        file=sys.stderr,
    )


# -- the bubblewrap command line ---------------------------------------------------------


def workspace(ctx: ToolContext) -> Path:
    """The folder tools may write: a gateway user's own, else ``tools.workspace`` if set,
    else the working directory (``workspaces``)."""
    return view.workspace(ctx)


def network_on(ctx: ToolContext) -> bool:
    """Whether the command shares the host's network: ``terminal.network`` when set (a
    list of hosts turns it on whole: nothing filters by host yet), else on in the
    terminal chat and off for a gateway user's turns, a scheduled job's runs and a
    Kanban task's turn (text from strangers drives them)."""
    value = ctx.setting("terminal.network")
    if value is None:
        return not (workspaces.confined(ctx.source) or workspaces.unattended(ctx.source))
    return bool(value)


def command_prefix(ctx: ToolContext, cwd: Path, scratch: Path | None = None) -> list[str]:
    """The bwrap argv that runs a command in ``cwd`` inside the sandbox (then the command):
    the mounts of the one view (``view.rules``), in its order; ``/tmp`` is ``scratch``, a
    folder on disk (``disk.make_scratch``), or else a tmpfs of ``terminal.max_file_mb``."""
    args = [shutil.which(BWRAP) or BWRAP, *_ISOLATION]
    if network_on(ctx):
        args.append("--share-net")
    table = view.rules(ctx)
    tmp_bytes = int(ctx.setting("terminal.max_file_mb")) * 1024 * 1024
    sealed: list[str] = []  # folders made read-only once everything inside is mounted
    for index, rule in enumerate(table):
        if rule.mount in (view.HIDE, view.LOCK) and _unseen(rule.path, table[:index]):
            continue  # inside a hidden folder already: not even its name need show there
        if rule.mount == view.TMP and scratch is not None:
            args += ["--bind", str(scratch), str(rule.path)]
            continue
        args += _mount(rule, table, tmp_bytes, sealed)
    for path in sealed:
        args += ["--remount-ro", path]
    args += ["--chdir", str(cwd), "--"]
    return args


def _unseen(path: Path, earlier: list[view.Rule]) -> bool:
    """Whether ``path`` lies in a hidden folder of the host's already (the home, hermes's
    home): the command's own /tmp gets the empty read-only stand-ins, as writes there
    must fail loudly."""
    rule = view.rule_for(path, earlier)
    return rule.access == view.HIDDEN and rule.mount in (view.HOME, view.HIDE, view.EMPTY)


def _mount(rule: view.Rule, table: list[view.Rule], tmp_bytes: int, sealed: list[str]) -> list[str]:
    path, exists = str(rule.path), os.path.lexists(rule.path)
    if rule.mount == view.EMPTY:  # bubblewrap's root is an empty tmpfs already
        sealed.append(path)  # read-only once the system and the workspace are bound in
        return []
    if rule.mount == view.SYSTEM and os.path.islink(path):
        return ["--symlink", os.readlink(path), path]  # /bin -> usr/bin stays a link
    if rule.mount == view.DEV:
        return ["--dev", path]
    if rule.mount == view.PROC:
        return ["--proc", path]
    if rule.mount == view.TMP:  # --size needs bubblewrap 0.5
        return ["--size", str(tmp_bytes), "--tmpfs", path]
    if rule.mount == view.HOME:
        if not exists:
            return []
        sealed.append(path)  # writable while the binds inside are made, then read-only
        return ["--size", str(_HOME_TMPFS_BYTES), "--tmpfs", path]
    if rule.mount == view.LOCK and not exists:
        return _lock_missing(rule.path, table)
    if not exists:
        return []
    if rule.mount == view.HIDE:
        if _is_folder(rule.path):
            sealed.append(path)  # read-only once a user's workspace inside is bound back
        return _hide(rule.path)
    return ["--bind" if rule.mount == view.RW else "--ro-bind", path, path]


_HOME_TMPFS_BYTES = 1024 * 1024
_FOLDER_NAMES = frozenset(
    {"git", "systemd", "autostart", "bin", "fish", "environment.d", "hooks", "info", "profile.d"}
)


def _lock_missing(path: Path, table: list[view.Rule]) -> list[str]:
    """A start-up or settings path that does not exist: where its folder is writable, an
    empty read-only stand-in is mounted there, so it cannot be created."""
    if view.rule_for(path.parent, table).access != view.WRITE:
        return []  # its folder is read-only or hidden already
    if path.name in _FOLDER_NAMES:
        return ["--perms", "0555", "--tmpfs", str(path), "--remount-ro", str(path)]
    if path.name == "config":  # .git/config missing: not a repository
        return []
    return ["--ro-bind", "/dev/null", str(path)]


def _is_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _hide(path: Path) -> list[str]:
    if _is_folder(path):
        # Empty, and read-only after the binds (``sealed``): a write there fails loudly
        # instead of vanishing with the command.
        return ["--perms", "0555", "--tmpfs", str(path)]
    return ["--ro-bind", "/dev/null", str(path)]
