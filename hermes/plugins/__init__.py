"""Plugins: Hermes Agent's extension points, run by hermes (docs/hermes-agent.md, "Plugins").

``manifest`` finds them, ``context`` is what their ``register(ctx)`` is handed,
``registry`` names the hooks hermes fires and what ``context`` adds to, ``manager``
loads them and calls their hooks, ``shell_hooks`` runs the ``hooks:`` of config.yaml,
``engine`` is the context-engine interface. ``llm`` is the host's model for plugins,
``provider_shapes`` a chat call in the shapes of other providers' APIs (0.19's side-task
clients over Codex, Anthropic and Bedrock). This room uses ``tools`` (a plugin's tools
are hermes tools) and ``config``; the agent uses it.
"""

from __future__ import annotations

from hermes.plugins.context import PluginContext
from hermes.plugins.engine import ContextEngine
from hermes.plugins.manager import PluginManager, current, plugins_for
from hermes.plugins.manifest import ENTRY_POINTS_GROUP, PluginManifest
from hermes.plugins.registry import VALID_HOOKS

__all__ = [
    "ENTRY_POINTS_GROUP",
    "VALID_HOOKS",
    "ContextEngine",
    "PluginContext",
    "PluginManager",
    "PluginManifest",
    "current",
    "plugins_for",
]
