"""Hermes Agent's ``hermes_cli.plugins``: what plugins and the tools around them import
(``PluginContext``'s method names, the manager, ``invoke_hook``, ``discover_plugins``, the
middleware and the ``pre_tool_call`` directives), from ``hermes.plugins``."""

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
    pre_tool,
)
from hermes.plugins import PluginManager as _PluginManager
from hermes.plugins.context import PluginToolOverrideError
from hermes.plugins.manager import LoadedPlugin, command_result
from hermes.plugins.manifest import bundled_dir
from hermes.plugins.middleware import OBSERVER_SCHEMA_VERSION, VALID_MIDDLEWARE

__all__ = [
    "ENTRY_POINTS_GROUP",
    "OBSERVER_SCHEMA_VERSION",
    "VALID_HOOKS",
    "VALID_MIDDLEWARE",
    "LoadedPlugin",
    "PluginContext",
    "PluginManager",
    "PluginManifest",
    "PluginToolOverrideError",
    "clear_thread_tool_whitelist",
    "discover_plugins",
    "get_bundled_plugins_dir",
    "get_plugin_auxiliary_tasks",
    "get_plugin_command_handler",
    "get_plugin_commands",
    "get_plugin_context_engine",
    "get_plugin_manager",
    "get_plugin_toolsets",
    "get_pre_tool_call_block_message",
    "get_pre_tool_call_directive",
    "get_pre_verify_continue_message",
    "has_hook",
    "has_middleware",
    "invoke_hook",
    "invoke_middleware",
    "resolve_plugin_command_result",
    "resolve_pre_tool_block",
    "set_thread_tool_whitelist",
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
        self.middleware_registered = list(loaded.middleware)
        self.commands_registered: list[str] = []


def discover_plugins(force: bool = False) -> None:
    """Load the plugins of ``$HERMES_HOME`` (once per process; ``force``: again)."""
    plugins_for(load_config(), hermes_home(), reload=force)


def invoke_hook(hook_name: str, **kwargs: Any) -> list[Any]:
    return current().invoke_hook(hook_name, **kwargs)


def has_hook(hook_name: str) -> bool:
    return current().has_hook(hook_name)


def invoke_middleware(kind: str, **kwargs: Any) -> list[Any]:
    """Call every callback of middleware ``kind``; their answers that are not None."""
    return current().invoke_middleware(kind, **kwargs)


def has_middleware(kind: str) -> bool:
    return current().has_middleware(kind)


def set_thread_tool_whitelist(
    allowed: set[str] | None, deny_msg_fmt: str = pre_tool.DEFAULT_DENIED
) -> None:
    """Only ``allowed`` tools run on this thread (its turns' tool calls); another is
    answered ``deny_msg_fmt`` (``{tool_name}`` filled). None: any tool."""
    pre_tool.set_thread_allowed(allowed, deny_msg_fmt)


def clear_thread_tool_whitelist() -> None:
    pre_tool.clear_thread_allowed()


def _directive(tool_name: str, args: dict[str, Any] | None, **keywords: Any) -> pre_tool.Directive:
    refused = pre_tool.thread_refusal(tool_name)
    if refused is not None:
        return pre_tool.Directive("block", refused)
    keywords["middleware_trace"] = list(keywords.get("middleware_trace") or [])
    answers = current().invoke_hook(
        "pre_tool_call",
        tool_name=tool_name,
        args=args if isinstance(args, dict) else {},
        **keywords,
    )
    return pre_tool.directive(answers)


def get_pre_tool_call_directive(
    tool_name: str,
    args: dict[str, Any] | None,
    task_id: str = "",
    session_id: str = "",
    tool_call_id: str = "",
    turn_id: str = "",
    api_request_id: str = "",
    middleware_trace: list[dict[str, Any]] | None = None,
) -> tuple[str | None, str | None]:
    """``(directive, message)`` of the ``pre_tool_call`` hooks (and the thread's allowed
    tools) for a call: ``("block", why)``, ``("approve", why)`` or ``(None, None)``."""
    found = _directive(
        tool_name, args, task_id=task_id, session_id=session_id, tool_call_id=tool_call_id,
        turn_id=turn_id, api_request_id=api_request_id, middleware_trace=middleware_trace,
    )  # fmt: skip
    return found.action, found.message


def get_pre_tool_call_block_message(
    tool_name: str,
    args: dict[str, Any] | None,
    task_id: str = "",
    session_id: str = "",
    tool_call_id: str = "",
    turn_id: str = "",
    api_request_id: str = "",
    middleware_trace: list[dict[str, Any]] | None = None,
) -> str | None:
    """The message of a ``block`` directive, else None (an ``approve`` is not a block)."""
    action, message = get_pre_tool_call_directive(
        tool_name, args, task_id, session_id, tool_call_id, turn_id, api_request_id,
        middleware_trace,
    )  # fmt: skip
    return message if action == "block" else None


def resolve_pre_tool_block(
    tool_name: str,
    args: dict[str, Any] | None,
    task_id: str = "",
    session_id: str = "",
    tool_call_id: str = "",
    turn_id: str = "",
    api_request_id: str = "",
    middleware_trace: list[dict[str, Any]] | None = None,
) -> str | None:
    """What a blocked call is answered, or None when it may run. An ``approve`` is blocked
    here (nobody can be asked outside a turn; in a turn hermes asks the user first)."""
    found = _directive(
        tool_name, args, task_id=task_id, session_id=session_id, tool_call_id=tool_call_id,
        turn_id=turn_id, api_request_id=api_request_id, middleware_trace=middleware_trace,
    )  # fmt: skip
    return pre_tool.block_message(found, tool_name, None)


def get_pre_verify_continue_message(
    *,
    session_id: str = "",
    platform: str = "",
    model: str = "",
    coding: bool = False,
    attempt: int = 0,
    final_response: str = "",
    changed_paths: list[str] | None = None,
) -> str | None:
    """The follow-up a ``pre_verify`` hook asks for (``{"action": "continue", "message":
    m}``, or ``{"decision": "block", "reason": m}``), else None. hermes's own turns do not
    fire ``pre_verify``; a caller that verifies asks here."""
    answers = current().invoke_hook(
        "pre_verify", session_id=session_id, platform=platform, model=model, coding=coding,
        attempt=attempt, final_response=final_response, changed_paths=list(changed_paths or []),
    )  # fmt: skip
    return pre_tool.verify_continue(answers)


def get_plugin_toolsets() -> list[tuple[str, str, str]]:
    """The plugins' toolsets as ``(key, label, description)``, by key: the label 0.19's
    ``hermes tools`` shows, the description the plugin's (else its tools' names)."""
    manager = current()
    tools: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    for loaded in manager.plugins.values():
        for name in loaded.tools:
            tool = manager.tool(name)
            for toolset in tool.toolsets if tool is not None else ():
                tools.setdefault(toolset, []).append(name)
                owner.setdefault(toolset, loaded.manifest.description)
    return [
        (key, f"🔌 {key.replace('_', ' ').title()}", owner[key] or ", ".join(sorted(tools[key])))
        for key in sorted(tools)
    ]


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


def get_plugin_auxiliary_tasks() -> list[dict[str, Any]]:
    """The side tasks plugins registered (``register_auxiliary_task``), by key, each
    ``{key, display_name, description, defaults, plugin}`` as in 0.19; the plugins of
    this home are loaded first if they were not."""
    return _discovered().auxiliary_tasks()


def get_bundled_plugins_dir() -> Path:
    """The folder of plugins shipped inside hermes, which hermes's plugin loader scans
    before ``$HERMES_HOME/plugins`` (``HERMES_BUNDLED_PLUGINS`` if set, as in 0.19)."""
    return bundled_dir()


def resolve_plugin_command_result(result: Any) -> Any:
    """A plugin command handler's return value, awaited when it is a coroutine (in a thread
    of its own when the caller already runs an event loop, as hermes-webui's does)."""
    return command_result(result)
