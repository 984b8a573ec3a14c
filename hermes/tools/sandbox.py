"""The operating-system sandbox every tool process runs in (docs/design.md, invariant 13).

The boundary is the kernel, not a parser: a command line can always say more than a
parser reads (``cd``, links, options, scripts, interpreters), so the terminal's commands
and background processes run under bubblewrap, where

- the whole file system is read-only, and only the workspace (``tools.workspace``, else
  the session's working directory) and the paths in ``terminal.writable_paths`` are
  writable; ``/tmp`` is a fresh, private one for each command;
- HERMES_HOME (config, ``.env``, the store, logs), a SQLite store configured elsewhere
  (and its ``-wal``, ``-shm`` and ``.turns``), ``~/.ssh`` and the other credential
  stores are hidden (an empty directory or file in their place);
- shell start-up files and hermes's own install (its package, its virtualenv, the user
  site-packages) stay read-only even inside a writable workspace;
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
import site
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import hermes
from hermes.tools import workspaces

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext

log = logging.getLogger(__name__)

BWRAP = "bwrap"
SANDBOXED = "bwrap"
NONE = "none"

# Files and folders of the user's home that hold credentials: hidden in the sandbox.
CREDENTIALS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".pgpass",
    ".git-credentials", ".config/gh", ".config/gcloud", ".pypirc",
)  # fmt: skip
STARTUP_FILES = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
    ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".kshrc", ".cshrc", ".tcshrc",
)  # fmt: skip
# Sockets that reach a daemon as whoever runs it: a read-only mount does not stop connect().
_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/postgresql", "/var/run/postgresql")
_STORE_SUFFIXES = ("", "-wal", "-shm", "-journal", ".turns")


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
            [path, *_ISOLATION, "--ro-bind", "/", "/", "--proc", "/proc", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start ({exc})"
    if result.returncode != 0:
        reason = result.stderr.decode(errors="replace").strip().splitlines()
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
    return workspaces.workspace(ctx)


def network_on(ctx: ToolContext) -> bool:
    """Whether the command shares the host's network: ``terminal.network`` when set (a
    list of hosts turns it on whole: nothing filters by host yet), else on in the
    terminal chat and off for a gateway user's turns (text from strangers drives them)."""
    value = ctx.setting("terminal.network")
    if value is None:
        return not workspaces.per_user(ctx.source)
    return bool(value)


def command_prefix(ctx: ToolContext, cwd: Path) -> list[str]:
    """The bwrap argv that runs a command in ``cwd`` inside the sandbox (then the command)."""
    home = Path.home()
    args = [shutil.which(BWRAP) or BWRAP, *_ISOLATION]
    if network_on(ctx):
        args.append("--share-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in _existing([workspace(ctx), *_configured(ctx, "terminal.writable_paths")]):
        if path != Path("/"):  # a workspace of / would make the whole system writable
            args += ["--bind", str(path), str(path)]
    for path in _existing(_read_only_paths(home)):
        args += ["--ro-bind", str(path), str(path)]
    hidden = _existing(_hidden_paths(ctx, home))
    for path in hidden:
        args += _hide(path)
    # A gateway user's workspace inside a hidden folder ($HERMES_HOME/workspaces, the
    # other users' workspaces) is bound back, before the folder above it turns read-only.
    for path in _existing([p for p in [workspaces.carved_out(ctx)] if p is not None]):
        args += ["--bind", str(path), str(path)]
    for path in hidden:
        if _is_folder(path):
            # Empty and read-only: a write there fails loudly, not vanishing with the command.
            args += ["--remount-ro", str(path)]
    args += ["--chdir", str(cwd), "--"]
    return args


def _hide(path: Path) -> list[str]:
    if _is_folder(path):
        return ["--perms", "0555", "--tmpfs", str(path)]  # made read-only after the binds
    return ["--ro-bind", "/dev/null", str(path)]


def _is_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _read_only_paths(home: Path) -> list[Path]:
    package = Path(hermes.__file__).resolve().parent
    paths = [package, Path(sys.prefix), Path(sys.base_prefix)]
    paths += [Path(p) for p in site.getsitepackages()]
    paths.append(Path(site.getusersitepackages()))
    if (package.parent / ".git").exists():
        paths.append(package.parent)  # a checkout: its code and hooks run as hermes
    paths += [home / name for name in STARTUP_FILES]
    return paths


def _hidden_paths(ctx: ToolContext, home: Path) -> list[Path]:
    paths = [ctx.hermes_home, *(home / name for name in CREDENTIALS)]
    others = workspaces.others(ctx)  # every gateway user's workspace: only one's own is seen
    if others is not None:
        paths.append(others)
    paths += [Path(p) for p in _SOCKETS]
    paths += _store_files(ctx)
    paths += _configured(ctx, "terminal.hidden_paths")
    return paths


def _store_files(ctx: ToolContext) -> list[Path]:
    """A SQLite store configured outside HERMES_HOME, and the files beside it."""
    url = ctx.setting("state.url")
    if not url or "://" in str(url) or "=" in str(url):
        return []
    base = Path(str(url)).expanduser()
    return [Path(f"{base}{suffix}") for suffix in _STORE_SUFFIXES]


def _configured(ctx: ToolContext, key: str) -> list[Path]:
    return [Path(str(p)).expanduser() for p in ctx.setting(key) or []]


def _existing(paths: Iterable[Path]) -> list[Path]:
    """Real, de-duplicated, existing paths (bwrap cannot mount onto a missing one, and
    follows links itself)."""
    seen: dict[str, Path] = {}
    for path in paths:
        absolute = Path(os.path.realpath(path))
        if os.path.lexists(absolute) and str(absolute) not in seen:
            seen[str(absolute)] = absolute
    return list(seen.values())
