"""Hermes Agent 0.19's ``hermes_cli.tools_config._get_platform_tools``: what a surface offers.

hermes-webui asks it which toolsets its chats offer (as the terminal chat would) and
passes the answer on as ``enabled_toolsets``. hermes answers with the tools its own
``resolve_toolset`` offers on that surface, plus every enabled plugin's toolsets and every
configured MCP server's, so a plugin's tools reach those chats as they reach the CLI's.
"""

from __future__ import annotations

from typing import Any

from hermes.config import hermes_home, load_config
from hermes.plugins import plugins_for
from hermes.tools.toolsets import builtin_tools, known_toolsets, resolve_toolset

__all__ = ["_get_platform_tools"]


def _get_platform_tools(
    config: Any = None, platform: str = "cli", *, include_default_mcp_servers: bool = True
) -> set[str]:
    """Names ``enabled_toolsets`` accepts for ``platform``: tool and toolset names.
    ``config`` (0.19's dict) is not read: hermes reads its own config.yaml."""
    current = load_config()
    plugin_tools = plugins_for(current, hermes_home()).tools()
    tools = builtin_tools() + plugin_tools
    names = set(resolve_toolset("cli" if platform == "cli" else platform, current, tools))
    names |= {tool.name for tool in plugin_tools}
    if include_default_mcp_servers:
        names |= {name for name in known_toolsets(current, tools) if name.startswith("mcp-")}
    return names
