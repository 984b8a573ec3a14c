"""Tools added while hermes runs, by code in this process: Hermes Agent 0.19's
``registry.register(...)``, which its tool modules and plugins call.

Process-wide, as 0.19's registry is: every agent offers them beside the built-in tools,
the MCP servers' and the plugins' (``AIAgent`` asks here when it first lists its tools),
in their own toolset, when their ``check_fn`` passes at that moment. A built-in tool is
never replaced.

``hermes_agent_handler`` turns a 0.19 handler (``handler(args, **kwargs)``, returning a
string or something JSON can encode) into a hermes one; plugins' tools use it too.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes.tools.registry import Tool, ToolContext

log = logging.getLogger(__name__)


def hermes_agent_handler(handler: Callable[..., Any], is_async: bool = False) -> Callable[..., str]:
    """A hermes tool handler over a Hermes Agent one: ``handler(args, task_id=...,
    session_id=...)``, its result a string (JSON, usually) or something JSON can encode."""

    def run(args: dict[str, Any], ctx: ToolContext) -> str:
        extra = {"task_id": ctx.session_id or "", "session_id": ctx.session_id or ""}
        result = handler(args, **extra)
        if is_async or inspect.isawaitable(result):
            result = asyncio.run(result)
        return result if isinstance(result, str) else json.dumps(result, default=str)

    return run


@dataclass(frozen=True)
class AddedTool:
    """One added tool and the check that says whether it can run here now."""

    tool: Tool
    check: Callable[[], bool] | None = None

    def available(self) -> bool:
        if self.check is None:
            return True
        try:
            return bool(self.check())
        except Exception:  # a broken check hides its tool; it never breaks a turn
            log.warning("the check of tool %s failed; not offered", self.tool.name, exc_info=True)
            return False


class AddedTools:
    """The tools code in this process added, by name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._added: dict[str, AddedTool] = {}

    def add(self, tool: Tool, check: Callable[[], bool] | None = None) -> None:
        """Add ``tool`` (or replace the one added under its name)."""
        with self._lock:
            self._added[tool.name] = AddedTool(tool, check)

    def remove(self, name: str) -> bool:
        with self._lock:
            return self._added.pop(name, None) is not None

    def get(self, name: str) -> AddedTool | None:
        with self._lock:
            return self._added.get(name)

    def all(self) -> list[AddedTool]:
        with self._lock:
            return list(self._added.values())

    def tools(self) -> list[Tool]:
        """The added tools that can run now, in the order they were added."""
        return [added.tool for added in self.all() if added.available()]


ADDED = AddedTools()  # this process's
