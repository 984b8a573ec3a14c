"""Hermes Agent's ``hermes_cli.plugins``: what plugins and the tools around them import
(``PluginContext``'s method names, ``invoke_hook``, the manager), from ``hermes.plugins``.
"""

from __future__ import annotations

from typing import Any

from hermes.plugins import (
    ENTRY_POINTS_GROUP,
    VALID_HOOKS,
    ContextEngine,
    PluginContext,
    PluginManager,
    PluginManifest,
    current,
    plugins_for,
)

__all__ = [
    "ENTRY_POINTS_GROUP",
    "VALID_HOOKS",
    "PluginContext",
    "PluginManager",
    "PluginManifest",
    "discover_plugins",
    "get_plugin_context_engine",
    "get_plugin_manager",
    "has_hook",
    "invoke_hook",
]


def get_plugin_manager() -> PluginManager:
    """The process's plugin manager (loaded by the first agent, or ``discover_plugins``)."""
    return current()


def discover_plugins(force: bool = False) -> None:
    """Load the plugins of ``$HERMES_HOME`` (once per process)."""
    from hermes.config import hermes_home, load_config

    plugins_for(load_config(), hermes_home())


def invoke_hook(hook_name: str, **kwargs: Any) -> list[Any]:
    return current().invoke_hook(hook_name, **kwargs)


def has_hook(hook_name: str) -> bool:
    return current().has_hook(hook_name)


def get_plugin_context_engine() -> ContextEngine | None:
    """The context engine a plugin registered, whatever its name."""
    return current().registered_engine()
