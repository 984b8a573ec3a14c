"""How a tool's command is started: in the sandbox, with the limits, without the secrets.

``launch_for`` gathers what ``terminal`` and ``background`` both need: the argv prefix
that puts the command in the sandbox (empty without one), the scrubbed environment and
the limits. ``terminal.sandbox: bwrap`` makes a missing sandbox a refusal, not a
silent fallback. No command starts where the workspace would be the home or ``/``
(``view.workspace_problem``).

In the sandbox a repository's ``.git/config`` is read-only, so ``git config`` without a
scope writes a scratch file of the command's own (``GIT_CONFIG``, in its private
``/tmp``; so do npm's and the XDG caches when the home's are not writable); the home's
``~/.gitconfig`` is hidden, so the user's name and e-mail from it are handed to git as
``GIT_AUTHOR_*``/``GIT_COMMITTER_*`` (commits still work).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.tools import workspaces
from hermes.tools.guards import disk, sandbox, view
from hermes.tools.guards.environment import command_environment
from hermes.tools.guards.limits import Limits, limits_of
from hermes.tools.registry import ToolError

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext


@dataclass(frozen=True)
class Launch:
    prefix: tuple[str, ...]
    env: dict[str, str]
    limits: Limits
    # Where the command may write: checked for git's code-running parts after it (git_inert).
    writable_roots: tuple[Path, ...] = ()
    # The command's /tmp on disk (removed when it ends), and the disk it may fill.
    scratch: Path | None = None
    disk_watch: disk.Watch | None = None

    def argv(self, command: str) -> list[str]:
        return [*self.prefix, shell_path(), "-c", command]


def shell_path() -> str:
    return shutil.which("bash") or "/bin/sh"


def launch_for(ctx: ToolContext, cwd: Path) -> Launch:
    """How to start a command in ``cwd`` for ``ctx``; ToolError when it may not start."""
    problem = view.workspace_problem(ctx)
    if problem:
        raise ToolError(problem)
    mode = sandbox.mode_of(ctx)
    env = command_environment(ctx)
    scratch = None
    if mode.sandboxed:
        _check_visible(ctx, cwd)
        scratch = disk.make_scratch(ctx.hermes_home)
        prefix = tuple(sandbox.command_prefix(ctx, cwd, scratch))
        env = {**_scratch_caches(ctx), **_git_identity(str(Path.home())), **env}
    elif sandbox.required(ctx):
        raise ToolError(
            f"Refused: terminal.sandbox is bwrap but there is no sandbox here ({mode.detail}); "
            "no command runs. Ask the user to install bubblewrap or change terminal.sandbox."
        )
    else:
        prefix = ()
    roots = tuple(view.writable_roots(ctx))
    return Launch(prefix, env, limits_of(ctx), roots, scratch, disk.watch(ctx, scratch))


# Caches tools write in the home, moved to the command's /tmp where the home is read-only.
_CACHES = {".cache": "XDG_CACHE_HOME", ".npm": "npm_config_cache"}


def _scratch_caches(ctx: ToolContext) -> dict[str, str]:
    table = view.rules(ctx)
    env = {"GIT_CONFIG": "/tmp/.gitconfig"}
    for name, variable in _CACHES.items():
        if view.rule_for(Path.home() / name, table).access != view.WRITE:
            env[variable] = f"/tmp/{name}"
    return env


@functools.cache
def _git_identity(home: str) -> dict[str, str]:
    """The git name and e-mail of the user of ``home`` (its settings are hidden in the
    sandbox)."""
    found: dict[str, str] = {}
    for key, names in (("user.name", "NAME"), ("user.email", "EMAIL")):
        try:
            value = subprocess.run(
                ["git", "config", "--global", key],
                env={**os.environ, "HOME": home},
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
                stdin=subprocess.DEVNULL,
            ).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if value:
            found |= {f"GIT_AUTHOR_{names}": value, f"GIT_COMMITTER_{names}": value}
    return found


def _check_visible(ctx: ToolContext, cwd: Path) -> None:
    home = Path(ctx.hermes_home).resolve()
    real = cwd.resolve()
    own = workspaces.carved_out(ctx)  # a gateway user's workspace in $HERMES_HOME/workspaces
    if own is not None and (real == own or own in real.parents):
        return
    if real == home or home in real.parents:
        raise ToolError(
            f"Refused: {cwd} is inside hermes's home ({ctx.hermes_home}), which commands "
            "cannot see; work in another folder."
        )
