"""What plugins register into: the hooks hermes fires, and the registry that keeps what
``register(ctx)`` and config.yaml's ``hooks:`` add.

``PluginManager`` (manager.py) is that registry. The context a plugin is handed
(context.py) and the shell hooks (shell_hooks.py) only add to it, so they name this
``PluginRegistry`` rather than the manager: the manager imports them, never the reverse.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from hermes.plugins.engine import ContextEngine
from hermes.plugins.manifest import PluginManifest
from hermes.tools.registry import Tool

# Hermes Agent's lifecycle hooks that hermes fires (hermes/plugins/manager.py says where).
VALID_HOOKS = frozenset(
    {
        "pre_tool_call",
        "post_tool_call",
        "pre_llm_call",
        "pre_api_request",
        "post_llm_call",
        "on_session_start",
        "on_session_end",
        "on_session_finalize",
        "pre_gateway_dispatch",
    }
)


class PluginRegistry(Protocol):
    """Where a plugin's tools, hooks and context engine are kept (``PluginManager``)."""

    @property
    def home(self) -> Path: ...

    def add_tool(self, tool: Tool, manifest: PluginManifest) -> None: ...

    def add_hook(self, name: str, callback: Callable[..., Any], manifest: Any) -> None: ...

    def add_middleware(self, kind: str, callback: Callable[..., Any], manifest: Any) -> None: ...

    def add_command(
        self, name: str, handler: Callable[..., Any], manifest: Any, description: str = ""
    ) -> None: ...

    def set_engine(self, engine: ContextEngine, manifest: PluginManifest) -> None: ...

    def note(self, manifest: PluginManifest, what: str) -> None: ...

    def add_auxiliary_task(self, task: dict[str, Any], manifest: PluginManifest) -> None: ...

    def auxiliary_task(self, key: str) -> dict[str, Any] | None: ...

    def tool(self, name: str) -> Tool | None: ...
