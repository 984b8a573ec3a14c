"""Hermes Agent 0.19's tool registry (``tools.registry.registry``), as its tool modules
and plugins use it, bound as ``registry`` in ``tools.process_registry`` and
``tools.skills_tool`` (0.19 imports it into both).

Over hermes's tools: it lists hermes's built-in tools, the loaded plugins' and the tools
added through it (hermes.tools.added, which every agent offers beside its own), and
dispatches any of them. Where hermes differs:

- A built-in tool is never replaced: registering one of its names is refused (logged,
  as 0.19 refuses shadowing), and with ``override=True`` it is a ``PermissionError``.
- ``dispatch`` runs a tool through hermes's dispatcher, in this process's home and
  working directory, where nobody is asked to approve a dangerous command (it is
  refused): an unknown tool is 0.19's ``{"error": "Unknown tool: ..."}``, any other
  mistake (bad arguments, a handler that raised) hermes's ``Error: ...`` sentence, and
  the result is scrubbed of hermes's secrets.
- The MCP servers' tools are an agent's own (started for it), so they are not listed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_constants import get_hermes_home

from hermes.plugins import current as current_plugins
from hermes.plugins.context import PluginToolOverrideError
from hermes.tools.added import ADDED, hermes_agent_handler
from hermes.tools.registry import Tool, ToolContext
from hermes.tools.registry import ToolRegistry as HermesTools
from hermes.tools.toolsets import builtin_tools

log = logging.getLogger(__name__)


@dataclass
class ToolEntry:
    """0.19's record of one tool (the fields its readers use)."""

    name: str
    toolset: str
    schema: dict[str, Any]
    handler: Callable[..., Any]
    check_fn: Callable[[], bool] | None = None
    requires_env: list[str] = field(default_factory=list)
    is_async: bool = False
    description: str = ""
    emoji: str = ""
    max_result_size_chars: int | float | None = None


class ToolRegistry:
    """0.19's ``ToolRegistry`` over hermes's tools (see the module's docstring)."""

    def __init__(self) -> None:
        self._entries: dict[str, ToolEntry] = {}  # those registered here, as given

    def register(
        self,
        name: str,
        toolset: str,
        schema: dict[str, Any],
        handler: Callable[..., Any],
        check_fn: Callable[[], bool] | None = None,
        requires_env: list[str] | None = None,
        is_async: bool = False,
        description: str = "",
        emoji: str = "",
        max_result_size_chars: int | float | None = None,
        dynamic_schema_overrides: Callable[[], dict[str, Any]] | None = None,
        override: bool = False,
    ) -> None:
        """Add a tool every agent of this process offers from its next first turn on."""
        if name in _builtin_names():
            if override:
                raise PluginToolOverrideError(
                    f"Tool {name!r} is one of hermes's own; hermes never lets it be "
                    "replaced: register the tool under a name of its own."
                )
            log.error("Tool registration refused: %r is one of hermes's own tools", name)
            return
        entry = ToolEntry(
            name=name,
            toolset=toolset,
            schema=schema,
            handler=handler,
            check_fn=check_fn,
            requires_env=list(requires_env or []),
            is_async=is_async,
            description=description or str(schema.get("description") or ""),
            emoji=emoji,
            max_result_size_chars=max_result_size_chars,
        )
        tool = Tool(
            name=name,
            description=entry.description or name,
            parameters=schema.get("parameters") or {"type": "object", "properties": {}},
            handler=hermes_agent_handler(handler, is_async),
            toolsets=(toolset,),
        )
        self._entries[name] = entry
        ADDED.add(tool, check_fn)

    def deregister(self, name: str) -> None:
        """Remove a tool registered here (hermes's own stay)."""
        self._entries.pop(name, None)
        ADDED.remove(name)

    def get_entry(self, name: str) -> ToolEntry | None:
        if name in self._entries and ADDED.get(name) is not None:
            return self._entries[name]
        tool = self._tools().get(name)
        return None if tool is None else _entry_of(tool)

    def get_all_tool_names(self) -> list[str]:
        return sorted(self._tools())

    def get_schema(self, name: str) -> dict[str, Any] | None:
        entry = self.get_entry(name)
        return entry.schema if entry else None

    def get_toolset_for_tool(self, name: str) -> str | None:
        entry = self.get_entry(name)
        return entry.toolset if entry else None

    def get_tool_to_toolset_map(self) -> dict[str, str]:
        return {name: _toolset(tool) for name, tool in self._tools().items()}

    def get_registered_toolset_names(self) -> list[str]:
        return sorted(set(self.get_tool_to_toolset_map().values()))

    def get_tool_names_for_toolset(self, toolset: str) -> list[str]:
        return sorted(n for n, t in self.get_tool_to_toolset_map().items() if t == toolset)

    def get_emoji(self, name: str, default: str = "⚡") -> str:
        entry = self.get_entry(name)
        return entry.emoji if entry and entry.emoji else default

    def get_definitions(
        self, tool_names: Iterable[str], quiet: bool = False
    ) -> list[dict[str, Any]]:
        """OpenAI-format schemas of those of ``tool_names`` that can run now, by name."""
        found = []
        for name in sorted(set(tool_names)):
            if self._available(name):
                schema = self.get_schema(name)
                found.append({"type": "function", "function": {**(schema or {}), "name": name}})
        return found

    def is_toolset_available(self, toolset: str) -> bool:
        return any(self._available(n) for n in self.get_tool_names_for_toolset(toolset))

    def check_toolset_requirements(self) -> dict[str, bool]:
        return {ts: self.is_toolset_available(ts) for ts in self.get_registered_toolset_names()}

    def dispatch(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run tool ``name`` with ``args`` in this process's home and folder."""
        tools = self._tools()
        if name not in tools:
            return json.dumps({"error": f"Unknown tool: {name}"})
        session = kwargs.get("session_id") or kwargs.get("task_id") or None
        ctx = ToolContext(hermes_home=get_hermes_home(), cwd=Path.cwd(), session_id=session)
        return HermesTools(tools.values()).dispatch(name, args, ctx)

    def _tools(self) -> dict[str, Tool]:
        """hermes's built-in tools, the loaded plugins' and the added ones, by name (a
        built-in name is never taken by another)."""
        tools: dict[str, Tool] = {}
        for tool in [*builtin_tools(), *current_plugins().tools(), *(a.tool for a in ADDED.all())]:
            tools.setdefault(tool.name, tool)
        return tools

    def _available(self, name: str) -> bool:
        added = ADDED.get(name)
        if added is not None:
            return added.available()
        return name in self._tools()


def _builtin_names() -> set[str]:
    return {tool.name for tool in builtin_tools()}


def _toolset(tool: Tool) -> str:
    return tool.toolsets[0] if tool.toolsets else tool.name


def _entry_of(tool: Tool) -> ToolEntry:
    schema = tool.schema()["function"]
    return ToolEntry(
        name=tool.name,
        toolset=_toolset(tool),
        schema=schema,
        handler=tool.handler,
        description=tool.description,
    )


registry = ToolRegistry()
