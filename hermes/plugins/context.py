"""``PluginContext``: what a plugin's ``register(ctx)`` is handed (0.19's method names).

A plugin registers tools, lifecycle hooks, middleware (hermes/plugins/middleware.py) and a
context engine here. The other
``register_*`` methods of Hermes Agent (image providers, platforms, ...) name things
hermes does not have: they are accepted with one log line, so such a plugin still loads.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes.plugins.engine import ContextEngine
from hermes.plugins.manifest import PluginManifest
from hermes.plugins.middleware import VALID_MIDDLEWARE
from hermes.plugins.registry import VALID_HOOKS, PluginRegistry
from hermes.tools.added import hermes_agent_handler
from hermes.tools.registry import Tool, ToolContext

log = logging.getLogger(__name__)

# 0.19's own side tasks (``auxiliary.<key>``): a plugin's task may not take their keys.
BUILTIN_AUXILIARY_TASKS = frozenset(
    {
        "vision",
        "compression",
        "web_extract",
        "approval",
        "mcp",
        "title_generation",
        "memory_query_rewrite",
        "tts_audio_tags",
        "skills_hub",
        "triage_specifier",
        "kanban_decomposer",
        "profile_describer",
        "curator",
    }
)
# The routing fields every task's defaults have (0.19's), the plugin's own over them.
_AUXILIARY_DEFAULTS: dict[str, Any] = {
    "provider": "auto",
    "model": "",
    "base_url": "",
    "api_key": "",
    "timeout": 60,
    "extra_body": {},
}


class PluginToolOverrideError(PermissionError):
    """A plugin asked to replace one of hermes's own tools (``override=True``): hermes never
    lets one, so that plugin does not load (0.19 allows it only when the operator opts in)."""


class PluginContext:
    """Given to each plugin's ``register(ctx)``."""

    def __init__(self, manifest: PluginManifest, manager: PluginRegistry) -> None:
        self.manifest = manifest
        self._manager = manager

    @property
    def profile_name(self) -> str:
        """The active profile: the folder name under ``profiles/``, else "default"."""
        home = Path(os.environ.get("HERMES_HOME") or self._manager.home)
        return home.name if home.parent.name == "profiles" else "default"

    def register_tool(
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
        override: bool = False,
    ) -> None:
        """A tool the model may call, in its own ``toolset`` (``agent.toolsets`` names it).
        A built-in tool of the same name is never replaced: asked to (``override``), it
        is a ``PluginToolOverrideError``."""
        if override:
            from hermes.tools.toolsets import builtin_tools

            if name in {tool.name for tool in builtin_tools()}:
                raise PluginToolOverrideError(
                    f"Plugin {self.manifest.id!r} cannot override built-in tool {name!r}: "
                    "hermes never lets a plugin replace its own tools; give the plugin's "
                    "tool a name of its own."
                )
        if check_fn is not None and not _passes(check_fn):
            log.info("plugin %s: tool %s is not available here (check_fn)", self.manifest.id, name)
            return
        missing = [v for v in requires_env or [] if isinstance(v, str) and not os.environ.get(v)]
        if missing:
            log.info("plugin %s: tool %s needs %s; not offered", self.manifest.id, name, missing)
            return
        tool = Tool(
            name=name,
            description=str(schema.get("description") or description or name),
            parameters=schema.get("parameters") or {"type": "object", "properties": {}},
            handler=hermes_agent_handler(handler, is_async),
            toolsets=(toolset,),
        )
        self._manager.add_tool(tool, self.manifest)

    def register_hook(self, hook_name: str, callback: Callable[..., Any]) -> None:
        """A callback for one of Hermes Agent's lifecycle hooks (``VALID_HOOKS``); another
        name is kept (a newer plugin) with one warning."""
        if hook_name not in VALID_HOOKS:
            log.warning(
                "plugin %s registered hook %r, which hermes never fires (it fires: %s)",
                self.manifest.id,
                hook_name,
                ", ".join(sorted(VALID_HOOKS)),
            )
        self._manager.add_hook(hook_name, callback, self.manifest)

    def register_middleware(self, kind: str, callback: Callable[..., Any]) -> None:
        """A callback that changes a tool call or a model request (``VALID_MIDDLEWARE``,
        hermes/plugins/middleware.py); another kind is kept (a newer plugin) with one
        warning."""
        if kind not in VALID_MIDDLEWARE:
            log.warning(
                "plugin %s registered middleware %r, which hermes never runs (it runs: %s)",
                self.manifest.id,
                kind,
                ", ".join(sorted(VALID_MIDDLEWARE)),
            )
        self._manager.add_middleware(kind, callback, self.manifest)

    def register_context_engine(self, engine: Any) -> None:
        """The context engine ``context.engine: <engine.name>`` selects (one per process)."""
        if not isinstance(engine, ContextEngine):
            log.warning(
                "plugin %s: its context engine does not subclass ContextEngine; ignored",
                self.manifest.id,
            )
            return
        self._manager.set_engine(engine, self.manifest)

    def register_command(
        self, name: str, handler: Callable[..., Any], description: str = "", **_: Any
    ) -> None:
        """A slash command ``/name`` the terminal chat and the gateway's chats run:
        ``handler(raw_args)`` returns its answer. A built-in command of the same name
        wins (hermes's commands are looked up first), as in 0.19."""
        clean = name.lower().strip().lstrip("/").replace(" ", "-")
        if not clean or not callable(handler):
            log.warning(
                "plugin %s: slash command %r not registered (no name, or not callable)",
                self.manifest.id,
                name,
            )
            return
        self._manager.add_command(clean, handler, self.manifest, str(description or ""))

    def register_auxiliary_task(
        self,
        key: str,
        *,
        display_name: str,
        description: str,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        """A side task of the plugin's own (0.19's ``auxiliary.<key>``), recorded for the
        tools that list them (``get_plugin_auxiliary_tasks``). Hermes's side work runs on
        the home's one endpoint, so no model is routed by it. ValueError for a key that
        is blank, not letters, digits and ``_``, one of 0.19's own, or another plugin's."""
        plugin = self.manifest.name
        if not key or not isinstance(key, str):
            raise ValueError(f"Plugin '{plugin}' tried to register auxiliary task {key!r}.")
        if not all(c.isalnum() or c == "_" for c in key):
            raise ValueError(
                f"Plugin '{plugin}' auxiliary task key {key!r} must contain only "
                "letters, digits and underscores."
            )
        if key in BUILTIN_AUXILIARY_TASKS:
            raise ValueError(
                f"Plugin '{plugin}' cannot register auxiliary task {key!r}: that key is a "
                f"built-in task's; pick one of its own (e.g. '{plugin}_{key}')."
            )
        taken = self._manager.auxiliary_task(key)
        if taken is not None and taken["plugin"] != plugin:
            raise ValueError(
                f"Plugin '{plugin}' cannot register auxiliary task {key!r}: plugin "
                f"'{taken['plugin']}' registered it already."
            )
        task = {
            "key": key,
            "display_name": display_name,
            "description": description,
            "defaults": {**_AUXILIARY_DEFAULTS, **(defaults or {})},
            "plugin": plugin,
        }
        self._manager.add_auxiliary_task(task, self.manifest)

    def register_cli_command(self, name: str, help: str, setup_fn: Any, **_: Any) -> None:
        self._manager.note(self.manifest, f"hermes {name}")

    def register_skill(self, name: str, path: Path, description: str = "") -> None:
        self._manager.note(self.manifest, f"skill {name}")

    def inject_message(self, content: str, role: str = "user") -> bool:
        """Hermes Agent's CLI-only message injection: hermes has no such channel."""
        return False

    def dispatch_tool(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        tool = self._manager.tool(tool_name)
        if tool is None:
            return json.dumps({"error": f"Unknown tool: {tool_name}"})
        return tool.handler(args, ToolContext(hermes_home=self._manager.home))

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("register_"):
            raise AttributeError(name)

        def unsupported(*args: Any, **kwargs: Any) -> None:
            log.info("plugin %s: hermes has no %s; ignored", self.manifest.id, name[9:])

        return unsupported


def _passes(check: Callable[[], bool]) -> bool:
    try:
        return bool(check())
    except Exception as exc:  # the plugin's own check failing means "not here"
        log.info("a plugin tool's check_fn raised %s; the tool is not offered", exc)
        return False
