"""``/platforms`` (0.19's ``/gateway`` too) in the terminal chat: whether a gateway runs
on this home and which messaging platforms it serves, from the state files it writes
(``state_file.py``), and which platforms config.yaml turns on.

Importing this module registers the command with the chat's slash commands (the agent
room cannot read the gateway's files, so the surfaces that offer it import this).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from hermes.agent.commands import Reply, command
from hermes.gateway.state_file import describe_gateway, read_status, running_gateways

if TYPE_CHECKING:
    from hermes.agent import AIAgent


@command(
    "platforms",
    "/platforms",
    "Show whether a gateway runs and the platforms it serves.",
    aliases=("gateway",),
    category="Info",
    cli_only=True,
)
def platforms_command(agent: AIAgent, arg: str) -> Reply:
    home = agent.hermes_home
    found = read_status(home)
    # A gateway of an older hermes keeps no record in gateways/: its state file says.
    live = running_gateways(home) or ([found.state] if found.running and found.state else [])
    lines = [describe_gateway(True, state) for state in live] or [
        describe_gateway(False, found.state or {}) + " Start one with `hermes gateway run`."
    ]
    lines.append(_configured(agent))
    return Reply("\n".join(lines), data={"running": bool(live), "gateways": live})


def _configured(agent: AIAgent) -> str:
    """The platforms config.yaml turns on and off (the HTTP API is one of them)."""
    raw = agent.config.get("gateway.platforms") or {}
    on = sorted(
        str(name)
        for name, options in raw.items()
        if not (isinstance(options, Mapping) and options.get("enabled", True) is False)
    )
    off = sorted(str(name) for name in raw if str(name) not in on)
    if not raw:
        return "config.yaml sets up no messaging platform (gateway.platforms)."
    disabled = f"; disabled: {', '.join(off)}" if off else ""
    return f"config.yaml turns on: {', '.join(on) or 'none'}{disabled}."
