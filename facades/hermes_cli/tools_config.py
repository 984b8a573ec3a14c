"""Hermes Agent 0.19's ``hermes_cli.tools_config``, not claimed: what a surface offers.

hermes-webui asks ``_get_platform_tools`` which toolsets its chats offer (as the terminal
chat would) and passes the answer on as ``enabled_toolsets``. hermes answers with the
tools its own ``resolve_toolset`` offers on that surface, plus every enabled plugin's
toolsets and every configured MCP server's, so a plugin's tools reach those chats as they
reach the CLI's. ``CONFIGURABLE_TOOLSETS`` lists hermes's own toolsets in 0.19's shape,
``enabled_mcp_server_names`` the MCP servers a config switches on.

The rest of 0.19's module is its ``hermes tools`` setup screens: provider pickers and installers
for web, browser, image, speech and vision tools hermes does not have, and per-platform presets
hermes does not need (every surface offers what ``agent.toolsets`` chooses). So hermes does not
claim the module, and importing it says so (hermes.compat.not_claimed).
"""

from __future__ import annotations

from typing import Any

from hermes.compat.not_claimed import say_not_stood_in_for
from hermes.config import hermes_home, load_config
from hermes.plugins import plugins_for
from hermes.tools.toolsets import builtin_tools, known_toolsets, resolve_toolset, toolsets

__all__ = [
    "CONFIGURABLE_TOOLSETS",
    "_get_platform_tools",
    "enabled_mcp_server_names",
    "gui_toolset_label",
]

# 0.19's labels of the toolsets hermes shares with it, and hermes's own.
_LABELS = {
    "terminal": "💻 Terminal & Processes",
    "files": "📁 File Operations",
    "memory": "💾 Memory",
    "session_search": "🔎 Session Search",
    "recall": "🧷 Recall",
    "skills": "📚 Skills",
}

# hermes's toolsets as 0.19's ``hermes tools`` lists its own: (key, label, its tools). A key
# is what ``agent.toolsets`` and ``enabled_toolsets`` take.
CONFIGURABLE_TOOLSETS = [
    (key, _LABELS.get(key, key.replace("_", " ").title()), ", ".join(names))
    for key, names in toolsets(builtin_tools()).items()
]


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


def gui_toolset_label(label: str) -> str:
    """A toolset's label without its leading icon (``"💻 Terminal"`` -> ``"Terminal"``), as
    0.19's web pages show it; a label with no icon as it is."""
    text = (label or "").strip()
    first, _, rest = text.partition(" ")
    if rest and first and not any(ch.isascii() and ch.isalnum() for ch in first):
        return rest.strip()
    return text


def enabled_mcp_server_names(config: dict[str, Any] | None) -> set[str]:
    """The servers of ``config``'s ``mcp_servers`` (0.19's dict, as config.yaml holds it)
    that are switched on: all but those whose ``enabled`` is false (``false``, ``0``,
    ``no``, ``off`` written as text count too, as in 0.19)."""
    servers = (config or {}).get("mcp_servers") or {}
    return {
        str(name)
        for name, entry in servers.items()
        if isinstance(entry, dict) and _enabled(entry.get("enabled", True))
    }


def _enabled(flag: Any) -> bool:
    if isinstance(flag, str):
        return flag.strip().lower() not in ("false", "0", "no", "off")
    return flag is None or bool(flag)


say_not_stood_in_for(
    "hermes_cli.tools_config",
    gives=[*__all__],
    instead="choose toolsets in config.yaml (agent.toolsets, `hermes config set`) "
    "rather than with its setup screens",
)
