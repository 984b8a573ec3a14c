"""Gateway event hooks, as Hermes Agent 0.19 runs them: ``$HERMES_HOME/hooks/<name>/``
holds ``HOOK.yaml`` (``name``, ``description``, ``events``) and ``handler.py`` with a
``handle(event_type, context)`` function, sync or async.

Events (0.19's names): ``gateway:startup`` (``platforms``); ``session:start`` (a
conversation's first message); ``agent:start`` and ``agent:end`` around each turn
(``platform``, ``user_id``, ``chat_id``, ``thread_id``, ``chat_type``, ``session_id``,
``message``; ``agent:end`` adds ``response``, both cut to 500 characters);
``agent:step`` before each model request of a turn (``platform``, ``user_id``,
``session_id``, ``iteration``, ``tool_names`` and ``tools``: the last tool calls, each
``name``, ``arguments``, ``result`` cut to 500 characters); ``session:end`` then
``session:reset`` when a chat starts a new conversation (``/new``, ``/reset``:
``platform``, ``user_id``, ``session_key``); ``command:<name>`` for each slash command
(``command:*`` matches them all).

A hook never holds a turn up: ``emit`` hands the event to each hook's own delivery
thread and returns at once. A hook gets its events in order, each for at most
``gateway.hook_timeout`` seconds; a call that takes longer is left behind (one log line)
and the hook's next events go on, while other hooks never wait for it. A handler that
fails, or a hook that cannot load, is one log line.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import logging
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any]], Any]
TEXT_LIMIT = 500  # characters of a message or an answer a hook is given


class HookRegistry:
    """The hooks of one HERMES_HOME, loaded once (``discover_and_load``)."""

    def __init__(self, home: Path, timeout: float = 5.0) -> None:
        self.hooks_dir = home / "hooks"
        self.timeout = timeout
        self._handlers: dict[str, list[tuple[str, Handler]]] = {}
        self.loaded_hooks: list[dict[str, Any]] = []
        self._delivery: dict[str, ThreadPoolExecutor] = {}  # one queue per hook

    def discover_and_load(self) -> None:
        if not self.hooks_dir.is_dir():
            return
        for folder in sorted(self.hooks_dir.iterdir()):
            if (folder / "HOOK.yaml").is_file() and (folder / "handler.py").is_file():
                self._load(folder)

    def _load(self, folder: Path) -> None:
        try:
            manifest = yaml.safe_load((folder / "HOOK.yaml").read_text(encoding="utf-8"))
            if not isinstance(manifest, dict) or not manifest.get("events"):
                raise ValueError("HOOK.yaml names no events")
            name = str(manifest.get("name") or folder.name)
            handle = _handler(name, folder / "handler.py")
        except Exception as exc:  # a broken hook is one line, never a failed start
            log.warning("hook %s was not loaded: %s", folder.name, exc)
            return
        events = [str(e) for e in manifest["events"]]
        for event in events:
            self._handlers.setdefault(event, []).append((name, handle))
        self.loaded_hooks.append(
            {
                "name": name,
                "description": manifest.get("description", ""),
                "events": events,
                "path": str(folder),
            }
        )
        log.info("hook %s loaded for %s", name, ", ".join(events))

    def handlers(self, event: str) -> list[tuple[str, Handler]]:
        """Exact matches first, then the family's wildcard (``command:*``)."""
        found = list(self._handlers.get(event, ()))
        if ":" in event:
            found += self._handlers.get(event.split(":", 1)[0] + ":*", [])
        return found

    def wants(self, event: str) -> bool:
        return bool(self.handlers(event))

    def emit(self, event: str, context: dict[str, Any] | None = None) -> None:
        """Deliver ``event`` to its handlers in the background; never waits for them."""
        for name, handle in self.handlers(event):
            delivery = self._delivery.get(name)
            if delivery is None:
                delivery = ThreadPoolExecutor(1, thread_name_prefix=f"hermes-hook-{name}")
                self._delivery[name] = delivery
            delivery.submit(self._deliver, name, handle, event, dict(context or {}))

    def _deliver(self, name: str, handle: Handler, event: str, context: dict[str, Any]) -> None:
        done = threading.Event()
        runner = threading.Thread(
            target=_call,
            args=(name, handle, event, context, done),
            daemon=True,
            name=f"hermes-hook-{name}-call",
        )
        runner.start()
        if not done.wait(self.timeout):
            log.warning(
                "hook %s took over %ss on %s; its next events go on without it",
                name,
                self.timeout,
                event,
            )

    def close_and_wait(self) -> None:
        """Deliver what is queued (each call within the time limit), then stop."""
        for delivery in self._delivery.values():
            delivery.shutdown(wait=True)
        self._delivery.clear()

    def close(self) -> None:
        """Stop delivering: what is still queued is dropped."""
        for delivery in self._delivery.values():
            delivery.shutdown(wait=False, cancel_futures=True)
        self._delivery.clear()


def _handler(name: str, path: Path) -> Handler:
    module_name = f"hermes_hook_{name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # before exec: dataclasses and pydantic look it up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    handle = getattr(module, "handle", None)
    if not callable(handle):
        raise ImportError("handler.py has no handle(event_type, context) function")
    return handle  # type: ignore[no-any-return]


def _call(name: str, handle: Handler, event: str, context: dict[str, Any], done: Any) -> None:
    try:
        result = handle(event, context)
        if inspect.isawaitable(result):
            asyncio.run(_awaited(result))
    except Exception as exc:  # a hook's bug is its own: one line
        log.warning("hook %s failed on %s: %s", name, event, exc)
    finally:
        done.set()


async def _awaited(result: Any) -> Any:
    return await result


def turn_context(origin: Any, session_id: str | None, message: str) -> dict[str, Any]:
    """What ``agent:start`` and ``agent:end`` give a hook (0.19's keys)."""
    return {
        "platform": getattr(origin, "platform", "") or "",
        "user_id": getattr(origin, "user_id", "") or "",
        "chat_id": getattr(origin, "chat_id", "") or "",
        "thread_id": getattr(origin, "thread_id", "") or "",
        "chat_type": ("group" if getattr(origin, "is_group", False) else "dm") if origin else "",
        "session_id": session_id or "",
        "message": (message or "")[:TEXT_LIMIT],
    }


def step_context(origin: Any, session_id: str | None, step: dict[str, Any]) -> dict[str, Any]:
    """What ``agent:step`` gives a hook (0.19's keys), from the turn's ``step`` event."""
    tools = [
        {**tool, "result": None if tool.get("result") is None else str(tool["result"])[:TEXT_LIMIT]}
        for tool in step.get("tools") or []
    ]
    return {
        "platform": getattr(origin, "platform", "") or "",
        "user_id": getattr(origin, "user_id", "") or "",
        "session_id": session_id or "",
        "iteration": step.get("iteration"),
        "tool_names": [tool.get("name") or "" for tool in tools],
        "tools": tools,
    }
