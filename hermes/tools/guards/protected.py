"""What the file tools may read and write, and paths the agent must not change unasked.

The file tools (``read_file``, ``write_file``, ``patch``, ``search_files``) see what a
sandboxed command sees: ``authorize_read`` and ``authorize_file_write`` look the path up
in the one view (``view.py``), symlinks resolved, on every surface and whether or not
the sandbox runs, and a refusal says why in one sentence. No approval widens it.

``protected_reason`` is the parse-based policy's view of the same places for writes (the
terminal without a sandbox, ``approval.py``, which looks reads up in the view itself), and
``authorize_write`` the approval hermes's own managed files need (skills in
``$HERMES_HOME``): an interactive surface asks the user, any other refuses. On a gateway the view is the user's: their own
workspace (``workspaces``, perhaps kept in ``$HERMES_HOME/workspaces``) is writable and
every other user's is hidden.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.tools import workspaces
from hermes.tools.guards import disk, git_inert, view
from hermes.tools.guards.view import SETTINGS, STARTUP_FILES
from hermes.tools.registry import ToolError

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext

_CHECKOUT = Path(__file__).resolve().parents[2]  # hermes/tools/ -> the package's parent


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _in_own_workspace(real: Path, ctx: ToolContext) -> bool:
    """``real`` lies in the gateway user's workspace kept in ``$HERMES_HOME/workspaces``."""
    own = workspaces.carved_out(ctx)
    return own is not None and _inside(real, own)


def protected_reason(path: Path, ctx: ToolContext) -> str | None:
    """Why writing ``path`` needs approval, or None when it is an ordinary file."""
    real = _real(path)
    user_home = _real(Path.home())
    if _inside(real, _real(ctx.hermes_home)) and not _in_own_workspace(real, ctx):
        return f"writes inside hermes's own home ({ctx.hermes_home}: config, keys, state, logs)"
    if _inside(real, user_home / ".ssh"):
        return "writes to ~/.ssh (login keys)"
    for name in (*STARTUP_FILES, *SETTINGS):
        if _inside(real, user_home / name):
            return f"writes a start-up or settings file (~/{name})"
    if (_CHECKOUT / ".git").exists() and _inside(real, _CHECKOUT):
        return f"writes inside the hermes checkout itself ({_CHECKOUT})"
    return None


def authorize_read(path: Path, ctx: ToolContext) -> None:
    """Raise a ToolError when a tool may not read ``path``: it is hidden in the one view."""
    rule = _rule(path, ctx, view.rules(ctx))
    if rule.access == view.HIDDEN:
        raise ToolError(f"Refused: {path} {rule.why}. {_ASK_READ}")


def authorize_file_write(path: Path, ctx: ToolContext) -> None:
    """Raise a ToolError unless the one view makes ``path`` writable."""
    rule = _rule(path, ctx, view.rules(ctx))
    if rule.access != view.WRITE:
        raise ToolError(f"Refused: {path} {rule.why}. {_ASK_WRITE}")
    full = disk.quota_problem(ctx)
    if full:
        raise ToolError(full)
    git = git_inert.write_problem(path, view.writable_roots(ctx))
    if git:
        raise ToolError(
            f"Refused: {path} {git}. Use git itself in the terminal for repository changes."
        )


def visibility(ctx: ToolContext) -> Callable[[Path], bool]:
    """Whether a path is readable in the one view, for many paths (the table made once)."""
    table = view.rules(ctx)
    return lambda path: view.rule_for(path, table).access != view.HIDDEN


_ASK_READ = (
    "Work with files inside the workspace, or ask the user for what you need "
    "(they can list a folder in terminal.readable_paths)."
)
_ASK_WRITE = (
    "Write inside the workspace, or ask the user to change it themselves "
    "(or to list its folder in terminal.writable_paths)."
)


def _rule(path: Path, ctx: ToolContext, table: list[view.Rule]) -> view.Rule:
    problem = view.workspace_problem(ctx)
    if problem:
        raise ToolError(problem)
    return view.rule_for(path, table)


def authorize_write(path: Path, ctx: ToolContext) -> None:
    """Raise a ToolError unless writing ``path`` is ordinary or the user approved it."""
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
