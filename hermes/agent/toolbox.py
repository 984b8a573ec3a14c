"""The tools an agent offers: its registry (made when first needed), the names offered
on its surface, their schemas as sent, and the context a tool call runs with.

The registry holds the built-in tools, then the plugins', those added in this process
(hermes/tools/added.py) and the context engine's
(``extra_tools``, never replacing a built-in one); an MCP server that was down at the
start joins once it is up.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.agent.wire import ToolWire
from hermes.config import Config

if TYPE_CHECKING:
    from hermes.agent.binding import ConversationBinding
    from hermes.agent.turn_options import ResolvedOptions
    from hermes.tools.processes.events import EventBus
    from hermes.tools.registry import Tool, ToolContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolScope:
    """Where and for whom the tools run: the same for every call of one agent."""

    config: Config
    hermes_home: Path
    cwd: Path
    source: str
    user_id: str | None = None
    event_bus: EventBus | None = None
    yolo: bool = False  # `hermes --yolo`: dangerous commands run without asking
    is_fork: bool = False  # the background review: its own toolset, never yolo

    @property
    def surface(self) -> str:
        return "review" if self.is_fork else self.source


@dataclass(kw_only=True, eq=False)  # one agent's: compared and hashed by identity
class Toolbox:
    """One agent's tools; ``override`` (a caller's list) replaces the surface's toolset;
    ``extra_tools`` are the plugins' and the context engine's; ``on_event`` hears that the
    first turn waits for MCP servers never seen before (``tools_waiting``)."""

    scope: ToolScope
    binding: ConversationBinding
    override: list[str] | None = None
    extra_tools: Callable[[], list[Tool]] = list
    on_event: Callable[..., None] | None = None
    _registry: Any = field(default=None, init=False)
    _joins_late_servers: bool = field(default=False, init=False)
    wire: ToolWire = field(default_factory=ToolWire, init=False)  # schemas as sent, kept

    @property
    def registry(self) -> Any:
        if self._registry is None:
            from hermes.tools.toolsets import default_registry

            self._registry = default_registry(
                self.scope.config, self.scope.hermes_home, self._tools_waiting
            )
            self._joins_late_servers = True
            self._add_extra_tools(self._registry)
        return self._registry

    def _tools_waiting(self, servers: list[str]) -> None:
        if self.on_event is not None:
            self.on_event("tools_waiting", servers=servers)

    def _add_extra_tools(self, registry: Any) -> None:
        """The plugins' tools and the context engine's, after the built-in ones."""
        for tool in self.extra_tools():
            if registry.get(tool.name) is None:  # a built-in tool is never replaced
                registry.register(tool)
            else:
                log.warning("a plugin's tool %s has a built-in tool's name; not offered", tool.name)

    def names(self) -> list[str]:
        """The tools offered: the override's known ones, else the surface's toolset."""
        if self.override is not None:
            return [n for n in self.override if self.registry.get(n)]
        from hermes.tools.toolsets import add_late_tools, resolve_toolset

        scope = self.scope
        if self._joins_late_servers:  # an MCP server down at the start joins once it is up
            add_late_tools(self.registry, scope.config, scope.hermes_home)
        offered = resolve_toolset(scope.surface, scope.config, self.registry.tools())
        # recall reads the store; without one there is nothing to get back.
        unusable = set() if self.binding.session_db is not None else {"recall"}
        return [n for n in offered if self.registry.get(n) and n not in unusable]

    def choose_toolsets(self, entries: list[str]) -> None:
        """Offer ``entries`` (``agent.toolsets``, already saved by the caller) from the next
        turn on; the registry stays, so nothing is started again."""
        self.scope.config.values["agent.toolsets"] = list(entries)

    def reload_mcp(self) -> list[str]:
        """Read ``mcp_servers`` from config.yaml again, restart every MCP server of this
        process, and list the tools afresh at the next turn; one line per server."""
        from hermes.config import load_config
        from hermes.tools.mcp.tools import restart_servers

        config = self.scope.config
        config.values["mcp_servers"] = load_config(config.path).values["mcp_servers"]
        lines = restart_servers(config, self.scope.hermes_home)
        self._registry = None
        return lines

    def context(self, options: ResolvedOptions, cancel: threading.Event) -> ToolContext:
        """What this turn's tool calls run with (``cancel`` is set when the user stops)."""
        from hermes.tools.registry import ToolContext

        scope, binding = self.scope, self.binding
        return ToolContext(
            session_db=binding.session_db,
            session_id=binding.session_id,
            conversation_id=binding.conversation_id or binding.session_id,
            hermes_home=scope.hermes_home,
            config=scope.config,
            cwd=scope.cwd,
            interactive=options.interactive,
            approve=options.approve,
            surface=scope.surface,
            source=scope.source,
            user_id=scope.user_id,
            event_bus=scope.event_bus,
            yolo=scope.yolo and not scope.is_fork,
            cancel=cancel,
        )
