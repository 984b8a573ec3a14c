"""Which tools exist and which of them each surface offers.

A toolset is a named group (``terminal``, ``files``, ``memory``, ``session_search``,
which holds ``recall`` too) as declared by each tool. ``agent.toolsets`` in config (tool names and/or toolset names)
chooses what the cli and gateway offer; without it they offer everything.
Each configured MCP server is the toolset ``mcp-<server>`` (also named by the
server's own name, as in Hermes Agent 0.19), known even while the server is down, so a
name in config or a cron job (``check_names``) stays valid then. The
gateway's dangerous-command policy is not a toolset matter: it lives in
``approval.authorize`` (nobody to ask, so refused unless allow-listed). A background
review gets ``memory`` (and the skill tools when ``skills.review_may_edit`` is on): it
must not run commands or touch files (it is a fork that reads the conversation, never
acts on the machine).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from hermes.config import Config
from hermes.errors import ConfigError
from hermes.tools import file_search, files, memory, recall, session_search, skill_tools, terminal
from hermes.tools.processes import tool as processes
from hermes.tools.registry import Tool, ToolRegistry

REVIEW_TOOLS = ("memory",)
REVIEW_SKILL_TOOLS = ("skill_view", "skill_manage")  # when skills.review_may_edit is on


def builtin_tools() -> list[Tool]:
    return [
        terminal.TOOL,
        processes.TOOL,
        files.READ_TOOL,
        files.WRITE_TOOL,
        files.PATCH_TOOL,
        file_search.TOOL,
        memory.TOOL,
        session_search.TOOL,
        recall.TOOL,
        skill_tools.VIEW_TOOL,
        skill_tools.MANAGE_TOOL,
    ]


def default_registry(
    config: Config | None = None,
    home: Path | None = None,
    on_wait: Callable[[list[str]], None] | None = None,
) -> ToolRegistry:
    """A registry holding every built-in tool, and the tools of the MCP servers
    ``config`` names (``mcp_servers``; each starts on this first use; ``on_wait`` is
    told the names of those waited for)."""
    return ToolRegistry(all_tools(config, home, on_wait))


def all_tools(
    config: Config | None = None,
    home: Path | None = None,
    on_wait: Callable[[list[str]], None] | None = None,
) -> list[Tool]:
    """The built-in tools, then those of the configured MCP servers that answer."""
    from hermes.tools.mcp.config import server_specs

    if config is None or not server_specs(config, home):
        return builtin_tools()
    from hermes.tools.mcp.tools import mcp_tools

    return builtin_tools() + mcp_tools(config, home, on_wait)


def add_late_tools(registry: ToolRegistry, config: Config | None, home: Path | None) -> None:
    """Add to ``registry`` the tools of configured MCP servers that were down when it
    was made and answer now. They go at the end, so the tools already offered keep
    their order and bytes (a provider's cached prefix breaks once, when a server joins)."""
    if config is None or not config.get("mcp_servers"):
        return
    from hermes.tools.mcp.tools import late_tools

    for tool in late_tools(config, home, toolsets(registry.tools())):
        if registry.get(tool.name) is None:
            registry.register(tool)


def toolsets(tools: list[Tool] | None = None) -> dict[str, list[str]]:
    """Toolset name -> tool names, from the tools' own declarations."""
    groups: dict[str, list[str]] = {}
    for tool in tools or builtin_tools():
        for name in tool.toolsets:
            groups.setdefault(name, []).append(tool.name)
    return groups


def known_toolsets(config: Config | None, tools: list[Tool]) -> dict[str, list[str]]:
    """``toolsets(tools)`` and one ``mcp-<server>`` per configured MCP server, empty
    while it is down (so a name in config or a cron job stays valid then), also known by
    the server's own name as in Hermes Agent 0.19 (unless a toolset has that name)."""
    from hermes.tools.mcp.config import server_names

    groups = toolsets(tools)
    for server in server_names(config):
        group = groups.setdefault(f"mcp-{server}", [])
        groups.setdefault(server, group)
    return groups


def check_names(names: Iterable[str], config: Config | None) -> list[str]:
    """``names`` (toolsets or tool names, as a cron job gives them) if each is known here
    (an MCP server's toolset or tools count without starting it); ``ConfigError`` naming
    the first unknown one, and the known toolsets, otherwise."""
    from hermes.tools.mcp.config import server_names
    from hermes.tools.mcp.tools import tool_name

    tools = builtin_tools()
    groups = known_toolsets(config, tools)
    prefixes = tuple(tool_name(server, "") for server in server_names(config))
    given = [str(name).strip() for name in names if str(name).strip()]
    for name in given:
        if name in groups or any(t.name == name for t in tools) or name.startswith(prefixes):
            continue
        known = ", ".join(sorted(n for n in groups if n not in server_names(config)))
        raise ConfigError(
            f"'{name}' is neither a toolset nor a tool here; the toolsets are {known} "
            "(an MCP server's name counts too)."
        )
    return given


def resolve_toolset(
    surface: str, config: Config | None, tools: list[Tool] | None = None
) -> list[str]:
    """The names of the tools offered on ``surface`` ("cli", "gateway", "review", ...),
    out of ``tools`` (the built-in ones when None)."""
    tools = tools if tools is not None else builtin_tools()
    all_tools = [tool.name for tool in tools]
    chosen = _configured(config, all_tools, known_toolsets(config, tools))
    if surface == "review":
        base = chosen if chosen is not None else all_tools
        return [name for name in base if name in review_tools(config)]
    return chosen if chosen is not None else all_tools


def review_tools(config: Config | None) -> tuple[str, ...]:
    """What a background review may use: memory, and skills when the user allowed it."""
    allowed = config is not None and bool(config.get("skills.review_may_edit"))
    return REVIEW_TOOLS + REVIEW_SKILL_TOOLS if allowed else REVIEW_TOOLS


def _configured(
    config: Config | None, all_tools: list[str], groups: dict[str, list[str]]
) -> list[str] | None:
    try:
        entries = config.get("agent.toolsets") if config is not None else None
    except KeyError:
        entries = None
    if entries is None:
        return None
    wanted, unknown = expand(entries, all_tools, groups)
    if unknown:
        known = ", ".join(sorted({*groups, *all_tools}))
        raise ConfigError(
            f"Config key 'agent.toolsets' names '{unknown[0]}', which is neither a tool nor a toolset. Known: {known}."
        )
    return [name for name in all_tools if name in wanted]


def expand(
    names: Iterable[str], all_tools: Collection[str], groups: dict[str, list[str]]
) -> tuple[set[str], list[str]]:
    """The tools ``names`` stand for (a toolset's name for its tools, a tool's for
    itself), and the names that are neither."""
    wanted: set[str] = set()
    unknown: list[str] = []
    for name in names:
        if name in groups:
            wanted.update(groups[name])
        elif name in all_tools:
            wanted.add(name)
        else:
            unknown.append(name)
    return wanted, unknown


def known_names(config: Config | None, tools: list[Tool]) -> list[str]:
    """Every name ``agent.toolsets`` may hold here: the toolsets (an MCP server's too,
    by either name) and the tools."""
    return sorted({*known_toolsets(config, tools), *(tool.name for tool in tools)})


def toggled(
    entries: list[str] | None,
    names: list[str],
    *,
    enable: bool,
    config: Config | None,
    tools: list[Tool],
) -> list[str]:
    """``agent.toolsets`` after enabling or disabling ``names`` (toolsets or tools, each
    known here: see ``known_names``). Unset ``entries`` means everything: it becomes every
    toolset by name first, so disabling one keeps the rest. Disabling a tool out of a
    toolset listed whole replaces the toolset by its other tools."""
    groups = known_toolsets(config, tools)
    # A server's own name stands for its mcp-<server> toolset: one entry per server.
    aliases = {s for s in _server_names(config) if groups.get(s) is groups.get(f"mcp-{s}")}
    names = [f"mcp-{n}" if n in aliases else n for n in names]
    if entries is None:
        entries = [g for g in groups if g not in aliases]
        grouped = {name for members in groups.values() for name in members}
        entries += [t.name for t in tools if t.name not in grouped]
    if enable:
        return [*entries, *(n for n in names if n not in entries)]
    off, _ = expand(names, [t.name for t in tools], groups)
    kept: list[str] = []
    for entry in entries:
        members = groups.get(entry)
        named = entry in names or (entry in aliases and f"mcp-{entry}" in names)
        if named or (members is None and entry in off):
            continue
        if members and set(members) & off:
            rest = [m for m in members if m not in off and m not in kept]
            tied = next((m for m in rest if set(groups.get(m, [m])) & off), None)
            if tied is not None:  # its name is the toolset's: it would bring them back
                raise ConfigError(
                    f"The tool {tied} is named like the toolset {tied}, which holds "
                    f"{', '.join(sorted(set(groups[tied]) & off))}: those go with the toolset; "
                    f"disable {tied} to turn them off."
                )
            kept += rest
        else:
            kept.append(entry)
    return kept


def _server_names(config: Config | None) -> list[str]:
    from hermes.tools.mcp.config import server_names

    return server_names(config)
