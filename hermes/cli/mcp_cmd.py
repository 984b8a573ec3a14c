"""`hermes mcp`: the MCP servers of config.yaml (``mcp_servers``), and a check of one."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from hermes.cli._group import DefaultGroup
from hermes.cli._table import echo_table
from hermes.config import hermes_home, load_config
from hermes.tools.mcp.config import read_servers
from hermes.tools.mcp.spec import ServerSpec


def quiet_hub_log() -> None:
    """A failed start is this command's own output; without a log handler of hermes's,
    Python would print the hub's warning of it on stderr too."""
    logging.getLogger("hermes.tools.mcp.hub").addHandler(logging.NullHandler())


def _servers() -> list[ServerSpec]:
    specs, problems = read_servers(load_config(), hermes_home())
    for problem in problems:
        click.echo(problem, err=True)
    return specs


@click.group(cls=DefaultGroup)
def mcp() -> None:
    """List the MCP servers of config.yaml, or test one."""


@mcp.command("list")
def list_servers() -> None:
    """The configured servers: name, transport, what starts or where it is."""
    specs = _servers()
    if not specs:
        click.echo("No MCP servers. Add them under `mcp_servers:` in config.yaml.")
        return
    echo_table(
        ["name", "transport", "sandbox", "server"],
        [(s.name, s.transport, _sandboxed(s), s.describe()) for s in specs],
    )


def _sandboxed(spec: ServerSpec) -> str:
    """yes / no / what the entry asked for but cannot have here."""
    if not spec.command:
        return "-"
    if not spec.sandbox:
        return "no"
    boxed = bool(spec.launch_prefix) and Path(spec.launch_prefix[0]).name == "bwrap"
    return "yes" if boxed else "no (no sandbox here)"


@mcp.command("test")
@click.argument("name")
def test(name: str) -> None:
    """Start the server NAME, list its tools as the model sees them, and stop it."""
    from hermes.tools.mcp.hub import McpError, hub
    from hermes.tools.mcp.tools import tool_name

    specs = _servers()
    spec = next((s for s in specs if s.name == name), None)
    if spec is None:
        known = ", ".join(s.name for s in specs) or "none"
        raise click.ClickException(
            f"No MCP server named '{name}' in config.yaml (servers: {known})."
        )
    quiet_hub_log()
    try:
        tools = hub().list_tools(spec)
    except McpError as exc:
        message = hub().connection(spec).failure or str(exc)  # why, without the retry note
        raise click.ClickException(message[0].upper() + message[1:] + ".") from exc
    finally:
        hub().close()
    click.echo(f"'{name}' answered with {len(tools)} tool(s):")
    for tool in tools:
        shown = tool_name(spec.name, tool.name)
        mark = "" if spec.offers(tool.name) else "  (left out by tools.include/exclude)"
        click.echo(
            f"  {shown}: {tool.description.splitlines()[0] if tool.description else ''}{mark}"
        )
