"""How a stdio MCP server is started: inside the OS sandbox of tool commands.

A stdio server is a program hermes starts on the user's behalf, so it gets the same
boundary as a terminal command (DESIGN invariant 13): the bwrap argv of ``sandbox.py``
goes in front of its command, HERMES_HOME and the credential stores are hidden, the
workspace is writable and, unless ``terminal.network`` is false, the network is shared
(servers often need it). Its working directory is its ``cwd``, else the workspace.
``sandbox: false`` on the entry starts it as configured; so does ``terminal.sandbox:
off`` or a machine without bubblewrap (the note at start says so). With
``terminal.sandbox: bwrap`` and no sandbox here, the server is not started.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.config import hermes_home
from hermes.tools import sandbox
from hermes.tools.registry import ToolContext

if TYPE_CHECKING:
    from hermes.config import Config
    from hermes.tools.mcp_config import ServerSpec


class McpLaunchError(ValueError):
    """A stdio server that may not start here; the message is one sentence."""


def launched(spec: ServerSpec, config: Config | None, home: Path | None) -> ServerSpec:
    """``spec`` with its working directory and, when sandboxed, the bwrap prefix set."""
    if not spec.command:
        return spec
    ctx = ToolContext(config=config, hermes_home=home if home is not None else hermes_home())
    cwd = Path(spec.cwd) if spec.cwd else sandbox.workspace(ctx)
    spec = dataclasses.replace(spec, cwd=str(cwd))
    if not spec.sandbox:
        return spec
    mode = sandbox.mode_of(ctx)
    if not mode.sandboxed:
        if sandbox.required(ctx):
            raise McpLaunchError(
                f"terminal.sandbox is bwrap but there is no sandbox here ({mode.detail}); "
                "install bubblewrap, or give the server 'sandbox: false'"
            )
        return spec
    hidden = Path(ctx.hermes_home).resolve()
    real = cwd.resolve()
    if real == hidden or hidden in real.parents:
        raise McpLaunchError(
            f"its cwd {cwd} is inside hermes's home, which sandboxed servers cannot see; "
            "choose another cwd, or give the server 'sandbox: false'"
        )
    return dataclasses.replace(spec, launch_prefix=tuple(sandbox.command_prefix(ctx, cwd)))
