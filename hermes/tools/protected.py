"""Paths the agent must not change on its own, and files it must never read.

A write to hermes's own home (config, ``.env``, the state store, logs, the API key
file), to ``~/.ssh``, to a shell start-up file or to the hermes checkout itself could
switch the agent's safety off or hand the machine to a stranger, so it needs approval
on every surface: an interactive one asks the user, any other refuses. ``.env`` and
the API key file hold secrets and are never readable by the file tools. Every check
runs on the path with symlinks resolved (``os.path.realpath``), so a link elsewhere
cannot lead around it. ``tools.workspace``, when set, is a root outside which the file
tools refuse to read or write at all; on a gateway each user's own workspace is that root
(``workspaces``), and one kept in ``$HERMES_HOME/workspaces`` is the one part of
hermes's home its user's tools reach.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.tools import workspaces
from hermes.tools.registry import ToolError
from hermes.tools.sandbox import CREDENTIALS

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext

SECRET_NAMES = (".env", "api_key")
_STARTUP_FILES = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
    ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".kshrc", ".cshrc", ".tcshrc",
)  # fmt: skip
_CHECKOUT = Path(__file__).resolve().parents[2]  # hermes/tools/ -> the package's parent


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def secret_reason(path: Path, ctx: ToolContext) -> str | None:
    """Why ``path`` may never be read by a tool, or None.

    All of hermes's home (``.env``, ``api_key``, ``config.yaml`` with its keys and tokens,
    the store with every user's messages), the user's credential stores (``~/.ssh``
    ...) and a store file configured elsewhere: what the sandbox hides from commands."""
    real = _real(path)
    if _inside(real, _real(ctx.hermes_home)) and not _in_own_workspace(real, ctx):
        return f"{path} is in hermes's home, which holds its secrets and is never readable by tools"
    user_home = _real(Path.home())
    for name in CREDENTIALS:
        if _inside(real, _real(user_home / name)):
            return f"{path} holds login credentials (~/{name}) and is never readable by tools"
    for store in _store_files(ctx):
        if real == store:
            return f"{path} is hermes's store and is never readable by tools"
    return None


def _store_files(ctx: ToolContext) -> list[Path]:
    try:
        url = ctx.setting("state.url")
    except KeyError:
        return []
    if not url or "://" in str(url) or "=" in str(url):
        return []
    base = _real(Path(str(url)).expanduser())
    return [Path(f"{base}{suffix}") for suffix in ("", "-wal", "-shm", "-journal", ".turns")]


def protected_reason(path: Path, ctx: ToolContext) -> str | None:
    """Why writing ``path`` needs approval, or None when it is an ordinary file."""
    real = _real(path)
    user_home = _real(Path.home())
    if _inside(real, _real(ctx.hermes_home)) and not _in_own_workspace(real, ctx):
        return f"writes inside hermes's own home ({ctx.hermes_home}: config, keys, state, logs)"
    if _inside(real, user_home / ".ssh"):
        return "writes to ~/.ssh (login keys)"
    if real.parent == user_home and real.name in _STARTUP_FILES:
        return f"writes a shell start-up file (~/{real.name})"
    if (_CHECKOUT / ".git").exists() and _inside(real, _CHECKOUT):
        return f"writes inside the hermes checkout itself ({_CHECKOUT})"
    return None


def check_workspace(path: Path, ctx: ToolContext) -> None:
    """Raise a ToolError when ``tools.workspace`` is set and ``path`` lies outside it."""
    root = _workspace(ctx)
    if root is not None and not _inside(_real(path), root):
        raise ToolError(
            f"Refused: {path} is outside the workspace (tools.workspace); work on files "
            "inside it, or ask the user to widen tools.workspace in config.yaml."
        )


def authorize_read(path: Path, ctx: ToolContext) -> None:
    """Raise a ToolError when a tool may not read ``path``."""
    check_workspace(path, ctx)
    reason = secret_reason(path, ctx)
    if reason:
        raise ToolError(f"Refused: {reason}. Ask the user for what you need from it.")


def readable(path: Path, ctx: ToolContext) -> bool:
    """Whether a tool may read ``path`` (links resolved): inside the workspace, not a secret."""
    root = _workspace(ctx)
    if root is not None and not _inside(_real(path), root):
        return False
    return secret_reason(path, ctx) is None


def authorize_write(path: Path, ctx: ToolContext) -> None:
    """Raise a ToolError unless writing ``path`` is ordinary or the user approved it."""
    check_workspace(path, ctx)
    reason = protected_reason(path, ctx)
    if reason is None:
        return
    if ctx.approve is None or not ctx.interactive:
        raise ToolError(
            f"Refused: this {reason}, so it needs approval, and nobody can approve it on this "
            f"surface ({ctx.surface}). Leave {path} alone, or ask the user to change it themselves."
        )
    try:
        approved = bool(ctx.approve(f"write {path}", reason))
    except Exception as exc:  # a broken prompt must not let the write through
        raise ToolError(f"Refused: this {reason} and asking for approval failed ({exc}).") from exc
    if not approved:
        raise ToolError(
            f"Refused: this {reason}; the user declined to approve it. Ask the user how to proceed."
        )


def _workspace(ctx: ToolContext) -> Path | None:
    return workspaces.boundary(ctx)


def _in_own_workspace(real: Path, ctx: ToolContext) -> bool:
    """``real`` lies in the gateway user's workspace kept in ``$HERMES_HOME/workspaces``."""
    own = workspaces.carved_out(ctx)
    return own is not None and _inside(real, own)
