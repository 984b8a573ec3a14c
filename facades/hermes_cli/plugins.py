"""Hermes Agent's ``hermes_cli.plugins``: what plugins and the tools around them import
(``PluginContext``'s method names, the manager, ``invoke_hook``, ``discover_plugins``),
from ``hermes.plugins``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes.config import hermes_home, load_config
from hermes.plugins import (
    ENTRY_POINTS_GROUP,
    VALID_HOOKS,
    ContextEngine,
    PluginContext,
    PluginManifest,
    current,
    plugins_for,
)
from hermes.plugins import PluginManager as _PluginManager
from hermes.plugins.manager import LoadedPlugin

__all__ = [
    "ENTRY_POINTS_GROUP",
    "VALID_HOOKS",
    "LoadedPlugin",
    "PluginContext",
    "PluginManager",
    "PluginManifest",
    "discover_plugins",
    "get_plugin_command_handler",
    "get_plugin_commands",
    "get_plugin_context_engine",
    "get_plugin_manager",
    "has_hook",
    "invoke_hook",
]


class PluginManager(_PluginManager):
    """0.19's manager: ``PluginManager()`` on ``$HERMES_HOME``, ``discover_and_load()``."""

    def __init__(self, home: Path | None = None, **_: Any) -> None:
        super().__init__(Path(home) if home else hermes_home())

    def discover_and_load(self, force: bool = False) -> None:
        if force or not self.plugins:
            self.plugins.clear()
            self.load(load_config())


def get_plugin_manager() -> _PluginManager:
    """The process's plugin manager (loaded by the first agent, or ``discover_plugins``)."""
    return current()


def discover_plugins(force: bool = False) -> None:
    """Load the plugins of ``$HERMES_HOME`` (once per process; ``force``: again)."""
    plugins_for(load_config(), hermes_home(), reload=force)


def invoke_hook(hook_name: str, **kwargs: Any) -> list[Any]:
    return current().invoke_hook(hook_name, **kwargs)


def has_hook(hook_name: str) -> bool:
    return current().has_hook(hook_name)


def get_plugin_context_engine() -> ContextEngine | None:
    """The context engine a plugin registered, whatever its name."""
    return current().registered_engine()


def get_plugin_commands() -> dict[str, dict[str, Any]]:
    """Plugin slash commands: hermes's chat runs none, so there are none to offer."""
    return {}


def get_plugin_command_handler(name: str) -> None:
    return None
