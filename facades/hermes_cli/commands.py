"""Hermes Agent 0.19's ``hermes_cli.commands``: the chat's slash commands, from hermes's own.

``COMMAND_REGISTRY`` lists hermes's commands (hermes.agent.commands, /cron included) as
0.19's ``CommandDef``; hermes-webui builds its command palette from it. Every command
works in the chat and on the gateway, so none is ``cli_only`` or ``gateway_only``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import hermes.agent.agent  # noqa: F401 - registers the chat's commands
import hermes.cron.chat_command  # noqa: F401 - registers /cron
from hermes.agent import commands as _commands

__all__ = [
    "ACTIVE_SESSION_BYPASS_COMMANDS",
    "COMMANDS",
    "COMMANDS_BY_CATEGORY",
    "COMMAND_REGISTRY",
    "GATEWAY_KNOWN_COMMANDS",
    "SUBCOMMANDS",
    "CommandDef",
    "gateway_help_lines",
    "is_gateway_known_command",
    "resolve_command",
    "should_bypass_active_session",
]


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

_BY_NAME = {c.name: c for c in COMMAND_REGISTRY}

# 0.19's derived tables: "/name" -> its description (with the usage), by category, and
# the words a command takes as its first argument ("[on|off]" in its usage).
COMMANDS: dict[str, str] = {
    f"/{c.name}": f"{c.description} (usage: /{c.name} {c.args_hint})"
    if c.args_hint
    else c.description
    for c in COMMAND_REGISTRY
}
COMMANDS_BY_CATEGORY: dict[str, dict[str, str]] = {
    "Session": {name: text for name, text in COMMANDS.items()}
}
SUBCOMMANDS: dict[str, list[str]] = {
    f"/{c.name}": found.group(0).split("|")
    for c in COMMAND_REGISTRY
    if (found := re.search(r"[a-z]+(?:\|[a-z]+)+", c.args_hint))
}
# A command never waits behind a running turn: the gateway answers every one at once
# or runs it as the conversation's next item, as 0.19 dispatches them.
ACTIVE_SESSION_BYPASS_COMMANDS: frozenset[str] = GATEWAY_KNOWN_COMMANDS


def resolve_command(name: str) -> CommandDef | None:
    """The command ``name`` (with or without its slash, any case) names; None if none."""
    return _BY_NAME.get(str(name or "").lower().lstrip("/"))


def is_gateway_known_command(name: str | None) -> bool:
    return bool(name) and resolve_command(str(name)) is not None


def should_bypass_active_session(command_name: str | None) -> bool:
    return is_gateway_known_command(command_name)


def gateway_help_lines() -> list[str]:
    """One ``/name args -- description`` line per command, as 0.19's /help lists them."""
    return [
        f"`/{c.name}{' ' + c.args_hint if c.args_hint else ''}` -- {c.description}"
        for c in COMMAND_REGISTRY
    ]
