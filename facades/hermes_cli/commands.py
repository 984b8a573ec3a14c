"""Hermes Agent 0.19's ``hermes_cli.commands``: the chat's slash commands, from hermes's own.

``COMMAND_REGISTRY`` lists hermes's commands (hermes.agent.commands, /cron included) as
0.19's ``CommandDef``; hermes-webui builds its command palette from it. Every command
works in the chat and on the gateway, so none is ``cli_only`` or ``gateway_only``.
"""

from __future__ import annotations

from dataclasses import dataclass

import hermes.agent.agent  # noqa: F401 - registers the chat's commands
import hermes.cron.chat_command  # noqa: F401 - registers /cron
from hermes.agent import commands as _commands

__all__ = ["COMMAND_REGISTRY", "GATEWAY_KNOWN_COMMANDS", "CommandDef"]


@dataclass(frozen=True)
class CommandDef:
    """0.19's definition of one slash command."""

    name: str
    description: str
    category: str
    aliases: tuple[str, ...] = ()
    args_hint: str = ""
    subcommands: tuple[str, ...] = ()
    cli_only: bool = False
    gateway_only: bool = False
    gateway_config_gate: str | None = None


def _args_hint(usage: str, name: str) -> str:
    """``/title [TEXT]`` -> ``[TEXT]``: the usage line without the command's own name."""
    first = usage.split(" | ")[0].strip()
    return first.removeprefix(f"/{name}").strip()


COMMAND_REGISTRY: list[CommandDef] = [
    CommandDef(
        name=spec.name,
        description=spec.help,
        category="Session",
        args_hint=_args_hint(spec.usage, spec.name),
    )
    for spec in sorted(_commands.COMMANDS.values(), key=lambda s: s.name)
]
GATEWAY_KNOWN_COMMANDS: frozenset[str] = frozenset(c.name for c in COMMAND_REGISTRY)
