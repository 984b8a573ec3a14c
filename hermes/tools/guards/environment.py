"""The environment shell commands run in: the host's, without hermes's own secrets.

Model keys, the gateway key, platform tokens, ``HERMES_STATE_URL``, anything defined in
``$HERMES_HOME/.env`` and any variable named like a secret are removed, so a command
the model runs (``env``, ``printenv``, ``env | curl ...``) cannot read them. A variable
listed in ``terminal.pass_env`` is kept.
"""

from __future__ import annotations

import os

from hermes.config import dotenv_values
from hermes.redaction import tool_environment
from hermes.tools.registry import ToolContext


def command_environment(ctx: ToolContext) -> dict[str, str]:
    """``os.environ`` for a command started by a tool of ``ctx``."""
    dotenv = dotenv_values(ctx.hermes_home)
    return tool_environment(os.environ, dotenv, ctx.setting("terminal.pass_env"))
