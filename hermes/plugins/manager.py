"""The plugin manager: loads the enabled plugins once per process and calls their hooks.

Plugins are the operator's trusted code (docs/security.md): they load in-process, as in
Hermes Agent 0.19, when ``plugins.enabled`` names them (``plugins.disabled`` wins). A
plugin that fails to load is one warning line on stderr and the start goes on. Hook
callbacks run in the order they were registered; one that raises is one log line and
the others still run (``invoke_hook``). Where hermes fires each hook:

Plugin slash commands (``ctx.register_command(name, handler)``) run in the terminal chat
and on a gateway's chats as 0.19 runs them: ``handler(raw_args)``, its text the answer.

- ``on_session_start(session_id, model, platform)``: a turn opens a new conversation;
- ``pre_llm_call(session_id, task_id, turn_id, user_message, conversation_history,
  is_first_turn, model, platform, sender_id)``: once per turn, before the first model
  call; a ``{"context": text}`` (or a string) answer joins this turn's request, never
  the store;
- ``pre_api_request(session_id, task_id, turn_id, api_call_count, conversation_history,
  message_count, tool_count, model, platform, started_at)``: before each model request
  of a turn (its answer is not read, as in 0.19);
- every hook and middleware of a turn's model requests and tools also gets
  ``sender_id``: the principal the turn acts as (a chat user, ``user@chat`` for a
  group member, an API principal; "" in the terminal), so a plugin can keep a rule
  per user;
- ``pre_tool_call(tool_name, args, task_id, session_id, tool_call_id, ...)``: before each
  tool; ``{"action": "block", "message": m}`` answers the call with ``m`` instead,
  ``{"action": "approve", ...}`` asks the user first (hermes/plugins/pre_tool.py);
- ``post_tool_call(..., result, duration_ms, status, ...)``: after each tool;
- ``post_llm_call(session_id, task_id, turn_id, user_message, assistant_response,
  conversation_history, model, platform)``: once per answered turn;
- ``on_session_end(session_id, task_id, turn_id, completed, interrupted, model,
  platform)``: at the end of every turn, as 0.19 does;
- middleware (``ctx.register_middleware``: ``tool_request``, ``tool_execution``,
  ``llm_request``, ``llm_execution``) changes a tool call or a model request where
  hooks only hear of it (hermes/plugins/middleware.py);
- ``pre_gateway_dispatch(event, gateway, session_store)``: each chat platform message
  a gateway receives, before its access check (hermes/gateway/runner.py): ``event`` is
  the ``IncomingMessage`` (``text``, ``origin``); ``{"action": "skip"}`` drops it,
  ``{"action": "rewrite", "text": t}`` replaces its text.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import inspect
import logging
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.config import Config
from hermes.plugins.context import PluginContext
from hermes.plugins.engine import ContextEngine
from hermes.plugins.manifest import ENTRY_POINTS_GROUP, PluginManifest, discover, warn
from hermes.plugins.shell_hooks import register_shell_hooks
from hermes.tools.registry import Tool

log = logging.getLogger(__name__)

_PACKAGE = "hermes_plugins"  # the package a folder plugin is imported under (0.19's)


@dataclass
class LoadedPlugin:
    manifest: PluginManifest
    enabled: bool = False
    error: str | None = None
    tools: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    middleware: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # commands and skills hermes keeps aside


class PluginManager:
    """The plugins of one HERMES_HOME, loaded once (``load``)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.plugins: dict[str, LoadedPlugin] = {}
        self._hooks: dict[str, list[Callable[..., Any]]] = {}
        self._middleware: dict[str, list[Callable[..., Any]]] = {}
        self._tools: dict[str, Tool] = {}
        self._commands: dict[str, Callable[..., Any]] = {}
        self._command_info: dict[str, dict[str, Any]] = {}
        self._engine: ContextEngine | None = None
        self._aux_tasks: dict[str, dict[str, Any]] = {}
        self._loading: LoadedPlugin | None = None

    # -- loading ----------------------------------------------------------------------

    def load(self, config: Config) -> None:
        """Load every enabled plugin found, then the shell hooks of ``hooks:``."""
        enabled = set(_names(config.get("plugins.enabled")))
        disabled = set(_names(config.get("plugins.disabled")))
        for manifest in discover(self.home):
            entry = LoadedPlugin(manifest)
            self.plugins[manifest.id] = entry
            if {manifest.id, manifest.name} & disabled:
                entry.error = "disabled in config"
            elif not {manifest.id, manifest.name} & enabled:
                entry.error = f"not enabled (run `hermes plugins enable {manifest.id}`)"
            else:
                self._load_one(entry)
        register_shell_hooks(self, config.get("hooks"))

    def _load_one(self, entry: LoadedPlugin) -> None:
        manifest = entry.manifest
        self._loading = entry
        try:
            module = _import(manifest)
            register = getattr(module, "register", None)
            if not callable(register):
                raise ImportError("it has no register(ctx) function")
            register(PluginContext(manifest, self))
            entry.enabled = True
        except Exception as exc:  # a broken plugin is one line, never a failed start
            entry.error = f"{type(exc).__name__}: {exc}"
            warn(f"plugin {manifest.id} was not loaded: {entry.error}")
            log.debug("plugin %s was not loaded", manifest.id, exc_info=True)
        finally:
            self._loading = None

    # -- what register(ctx) adds ---------------------------------------------------------

    def add_tool(self, tool: Tool, manifest: PluginManifest) -> None:
        self._tools[tool.name] = tool
        if self._loading is not None:
            self._loading.tools.append(tool.name)

    def add_hook(self, name: str, callback: Callable[..., Any], manifest: Any) -> None:
        self._hooks.setdefault(name, []).append(callback)
        if self._loading is not None and name not in self._loading.hooks:
            self._loading.hooks.append(name)

    def add_middleware(self, kind: str, callback: Callable[..., Any], manifest: Any) -> None:
        self._middleware.setdefault(kind, []).append(callback)
        if self._loading is not None and kind not in self._loading.middleware:
            self._loading.middleware.append(kind)

    def add_command(
        self, name: str, handler: Callable[..., Any], manifest: Any, description: str = ""
    ) -> None:
        self._commands[name] = handler
        self._command_info[name] = {
            "handler": handler,
            "description": description,
            "plugin": getattr(manifest, "id", ""),
        }
        if self._loading is not None:
            self._loading.other.append(f"/{name}")

    def set_engine(self, engine: ContextEngine, manifest: PluginManifest) -> None:
        if self._engine is not None:
            log.warning(
                "plugin %s registered a second context engine (%s); only one is allowed, %s stays",
                manifest.id,
                engine.name,
                self._engine.name,
            )
            return
        self._engine = engine
        if self._loading is not None:
            self._loading.other.append(f"context engine {engine.name}")

    def note(self, manifest: PluginManifest, what: str) -> None:
        if self._loading is not None:
            self._loading.other.append(what)

    def add_auxiliary_task(self, task: dict[str, Any], manifest: PluginManifest) -> None:
        self._aux_tasks[task["key"]] = task
        self.note(manifest, f"auxiliary task {task['key']}")

    def auxiliary_task(self, key: str) -> dict[str, Any] | None:
        return self._aux_tasks.get(key)

    def auxiliary_tasks(self) -> list[dict[str, Any]]:
        """The side tasks plugins registered, by key (0.19's order)."""
        return [self._aux_tasks[key] for key in sorted(self._aux_tasks)]

    # -- what the agent asks -------------------------------------------------------------

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def tool(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def engine(self, name: str) -> ContextEngine | None:
        """The registered context engine if it is the one named ``name``."""
        return self._engine if self._engine is not None and self._engine.name == name else None

    def registered_engine(self) -> ContextEngine | None:
        return self._engine

    def commands(self) -> dict[str, dict[str, Any]]:
        """0.19's listing of plugin slash commands: name -> handler, description, plugin."""
        return dict(self._command_info)

    def command(self, name: str) -> Callable[..., Any] | None:
        """The handler of the plugin slash command ``/name`` (``handler(raw_args)``)."""
        return self._commands.get(name)

    def run_command(self, name: str, argument: str) -> str | None:
        """Run the plugin command ``/name`` as 0.19 does: ``handler(raw_args)``, awaited when
        it is a coroutine function; its text, or a sentence when it failed."""
        handler = self._commands.get(name)
        if handler is None:
            return None
        try:
            answer = command_result(handler(argument))
        except Exception as exc:  # a plugin's bug is the plugin's answer, not a crash
            log.warning("plugin command /%s (%s) failed: %s", name, _label(handler), exc)
            return f"/{name} failed: {exc}"
        return None if answer is None else str(answer)

    def has_hook(self, name: str) -> bool:
        return bool(self._hooks.get(name))

    def has_middleware(self, kind: str) -> bool:
        return bool(self._middleware.get(kind))

    def middleware(self, kind: str) -> list[Callable[..., Any]]:
        """The callbacks of middleware ``kind``, in the order they were registered."""
        return list(self._middleware.get(kind, ()))

    def invoke_middleware(self, kind: str, **kwargs: Any) -> list[Any]:
        """Call every callback of middleware ``kind`` (one that raises is one log line);
        their answers that are not None."""
        answers = []
        for callback in self.middleware(kind):
            try:
                answer = callback(**kwargs)
            except Exception as exc:  # a plugin's bug must not break the caller
                log.warning("plugin middleware %s (%s) failed: %s", kind, _label(callback), exc)
                continue
            if answer is not None:
                answers.append(answer)
        return answers

    def invoke_hook(self, name: str, **kwargs: Any) -> list[Any]:
        """Call every callback of hook ``name``; their answers that are not None."""
        answers = []
        for callback in list(self._hooks.get(name, ())):
            try:
                answer = callback(**kwargs)
            except Exception as exc:  # a plugin's bug must not break the turn
                log.warning("plugin hook %s (%s) failed: %s", name, _label(callback), exc)
                continue
            if answer is not None:
                answers.append(answer)
        return answers

    def list_plugins(self) -> list[dict[str, Any]]:
        """0.19's listing: one dict per plugin found."""
        return [
            {
                "name": p.manifest.name,
                "key": p.manifest.id,
                "kind": p.manifest.kind,
                "version": p.manifest.version,
                "description": p.manifest.description,
                "source": p.manifest.source,
                "enabled": p.enabled,
                "tools": len(p.tools),
                "hooks": len(p.hooks),
                "commands": len(p.other),
                "error": p.error,
            }
            for _, p in sorted(self.plugins.items())
        ]


def _names(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _label(callback: Callable[..., Any]) -> str:
    return getattr(callback, "__qualname__", None) or repr(callback)


def _import(manifest: PluginManifest) -> types.ModuleType:
    if manifest.source == "entrypoint":
        for point in importlib.metadata.entry_points(group=ENTRY_POINTS_GROUP):
            if point.name == manifest.name:
                loaded = point.load()
                return loaded if isinstance(loaded, types.ModuleType) else _as_module(loaded)
        raise ImportError(f"no entry point {manifest.name!r} in {ENTRY_POINTS_GROUP}")
    return _import_folder(manifest)


def _as_module(register: Any) -> types.ModuleType:
    """An entry point naming a function (``pkg:register``) rather than a module."""
    module = types.ModuleType("hermes_plugin_entry")
    module.register = register  # type: ignore[attr-defined]
    return module


def _import_folder(manifest: PluginManifest) -> types.ModuleType:
    """Import ``<folder>/__init__.py`` as ``hermes_plugins.<slug>`` (relative imports
    inside the plugin work, as in 0.19)."""
    folder = Path(str(manifest.path))
    init = folder / "__init__.py"
    if not init.is_file():
        raise ImportError(f"{folder} has no __init__.py")
    if _PACKAGE not in sys.modules:
        parent = types.ModuleType(_PACKAGE)
        parent.__path__ = []
        sys.modules[_PACKAGE] = parent
    name = f"{_PACKAGE}.{manifest.id.replace('/', '__').replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"{init} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


# -- one manager per process ------------------------------------------------------------

_lock = threading.RLock()  # a plugin's register() may ask for the manager again
_manager: PluginManager | None = None


def plugins_for(config: Config, home: Path, *, reload: bool = False) -> PluginManager:
    """The process's plugin manager, loaded from ``home`` on first use (or again)."""
    global _manager
    with _lock:
        if reload or _manager is None or _manager.home != home:
            manager = PluginManager(home)
            _manager = manager
            manager.load(config)
        return _manager


def current() -> PluginManager:
    """The loaded manager, or an empty one (nothing loaded yet in this process)."""
    from hermes.config import hermes_home

    return _manager if _manager is not None else PluginManager(hermes_home())


async def _awaited(answer: Any) -> Any:
    return await answer


COMMAND_TIMEOUT = 30.0  # an async plugin command awaited from inside a running loop


def command_result(answer: Any) -> Any:
    """A plugin command's answer; an awaitable one awaited here, in a thread of its own when
    this thread already runs an event loop (a web server's handler), for at most
    ``COMMAND_TIMEOUT`` seconds (then ``TimeoutError``)."""
    if not inspect.isawaitable(answer):
        return answer
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(answer))
    outcome: dict[str, Any] = {}

    def await_it() -> None:
        try:
            outcome["value"] = asyncio.run(_awaited(answer))
        except BaseException as exc:  # handed back to the caller below
            outcome["error"] = exc

    worker = threading.Thread(target=await_it, name="plugin-command", daemon=True)
    worker.start()
    worker.join(COMMAND_TIMEOUT)
    if worker.is_alive():
        raise TimeoutError(f"The plugin command did not answer within {COMMAND_TIMEOUT:.0f} s.")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
