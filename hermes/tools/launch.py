"""How a tool's command is started: in the sandbox, with the limits, without the secrets.

``launch_for`` gathers what ``terminal`` and ``background`` both need: the argv prefix
that puts the command in the sandbox (empty without one), the scrubbed environment and
the limits. ``terminal.sandbox: bwrap`` makes a missing sandbox a refusal, not a
silent fallback.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.tools import sandbox, workspaces
from hermes.tools._environment import command_environment
from hermes.tools._limits import Limits, limits_of
from hermes.tools.registry import ToolError

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext


@dataclass(frozen=True)
class Launch:
    prefix: tuple[str, ...]
    env: dict[str, str]
    limits: Limits

    def argv(self, command: str) -> list[str]:
        return [*self.prefix, shell_path(), "-c", command]


def shell_path() -> str:
    return shutil.which("bash") or "/bin/sh"


def launch_for(ctx: ToolContext, cwd: Path) -> Launch:
    """How to start a command in ``cwd`` for ``ctx``; ToolError when it may not start."""
    mode = sandbox.mode_of(ctx)
    if mode.sandboxed:
        _check_visible(ctx, cwd)
        prefix = tuple(sandbox.command_prefix(ctx, cwd))
    elif sandbox.required(ctx):
        raise ToolError(
            f"Refused: terminal.sandbox is bwrap but there is no sandbox here ({mode.detail}); "
            "no command runs. Ask the user to install bubblewrap or change terminal.sandbox."
        )
    else:
        prefix = ()
    return Launch(prefix, command_environment(ctx), limits_of(ctx))


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
