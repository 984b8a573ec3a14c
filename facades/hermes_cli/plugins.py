"""Hermes Agent's ``hermes_cli.plugins``: what plugins and the tools around them import
(``PluginContext``'s method names, the manager, ``invoke_hook``, ``discover_plugins``),
from ``hermes.plugins``."""

from __future__ import annotations

from collections.abc import Callable
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
from hermes.plugins.manager import LoadedPlugin, command_result

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
    "resolve_plugin_command_result",
]


class PluginManager(_PluginManager):
    """0.19's manager: ``PluginManager()`` on ``$HERMES_HOME``, ``discover_and_load()``."""

    def __init__(self, home: Path | None = None, **_: Any) -> None:
        super().__init__(Path(home) if home else hermes_home())

    def discover_and_load(self, force: bool = False) -> None:
        if force or not self.plugins:
            self.plugins.clear()
            self.load(load_config())


def get_plugin_manager() -> _AsHermesAgent:
    """The process's plugin manager (loaded by the first agent, or ``discover_plugins``),
    with 0.19's names on it: ``discover_and_load()``, ``_plugins`` (hermes-webui's
    Plugins panel reads them)."""
    return _AsHermesAgent()


class _AsHermesAgent:
    """The process's manager as 0.19's readers see it; hermes's names pass through."""

    def discover_and_load(self, force: bool = False) -> None:
        loaded = current()
        if force or not loaded.plugins or loaded.home != hermes_home():
            discover_plugins(force=True)  # (another home's plugins: this one's instead)

    @property
    def _plugins(self) -> dict[str, _LoadedAsHermesAgent]:
        return {key: _LoadedAsHermesAgent(loaded) for key, loaded in current().plugins.items()}

    def __getattr__(self, name: str) -> Any:
        return getattr(current(), name)


class _LoadedAsHermesAgent:
    """A loaded plugin with 0.19's attribute names (``hooks_registered``, ...)."""

    def __init__(self, loaded: LoadedPlugin) -> None:
        self.manifest = loaded.manifest
        self.enabled = loaded.enabled
        self.error = loaded.error
        self.tools_registered = list(loaded.tools)
        self.hooks_registered = list(loaded.hooks)
        self.commands_registered: list[str] = []


def discover_plugins(force: bool = False) -> None:
    """Load the plugins of ``$HERMES_HOME`` (once per process; ``force``: again)."""
    plugins_for(load_config(), hermes_home(), reload=force)


def invoke_hook(hook_name: str, **kwargs: Any) -> list[Any]:
    return current().invoke_hook(hook_name, **kwargs)


def has_hook(hook_name: str) -> bool:
    return current().has_hook(hook_name)


def _discovered() -> _PluginManager:
    """The process's manager with ``$HERMES_HOME``'s plugins loaded (once), as 0.19's
    readers find it before any agent has run."""
    return plugins_for(load_config(), hermes_home())


def get_plugin_context_engine() -> ContextEngine | None:
    """The context engine a plugin registered, whatever its name."""
    return _discovered().registered_engine()


def get_plugin_commands() -> dict[str, dict[str, Any]]:
    """The plugins' slash commands: name -> ``handler``, ``description``, ``plugin``."""
    return _discovered().commands()


def get_plugin_command_handler(name: str) -> Callable[..., Any] | None:
    return _discovered().command(name)


def resolve_plugin_command_result(result: Any) -> Any:
    """A plugin command handler's return value, awaited when it is a coroutine (in a thread
    of its own when the caller already runs an event loop, as hermes-webui's does)."""
    return command_result(result)
