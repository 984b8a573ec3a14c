"""Hermes Agent 0.19's ``enabled_toolsets`` / ``disabled_toolsets`` over hermes's tools.

A name may be one of 0.19's toolsets (``terminal``, ``file``, ``memory``,
``session_search``, ``debugging``, ``coding``, the per-platform ``hermes-*`` sets), one
of hermes's own toolsets (``files``...), or a tool's name. 0.19's toolsets whose tools
hermes does not have (``web``, ``browser``, ``vision``...) name nothing here: enabling
only those offers no tool, disabling them changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.tools.registry import Tool

_FILES = ("read_file", "write_file", "patch", "search_files")
_TERMINAL = ("terminal", "process")
# 0.19's toolsets, by the tools of theirs that hermes has.
THEIR_TOOLSETS: dict[str, tuple[str, ...]] = {
    "terminal": _TERMINAL,
    "file": _FILES,
    "memory": ("memory",),
    "session_search": ("session_search",),
    "skills": ("skill_view", "skill_manage"),
    "debugging": (*_TERMINAL, *_FILES),
}
# Names meaning every tool: 0.19's full per-platform sets and its coding posture.
_EVERYTHING = ("all", "*", "coding")


def chosen(
    enabled: Iterable[str] | None,
    disabled: Iterable[str] | None,
    base: Sequence[str] | None,
    tools: Sequence[Tool] | None = None,
) -> list[str]:
    """The tools offered: ``base`` (None: every tool of ``tools``, the built-in ones by
    default, MCP servers' included when given) narrowed to ``enabled`` when given,
    without those of ``disabled``."""
    from hermes.tools.toolsets import builtin_tools

    tools = list(tools) if tools is not None else builtin_tools()
    everything = [tool.name for tool in tools]
    offered = list(base) if base is not None else everything
    if enabled is not None:
        wanted = _tools_of(_names(enabled), everything, tools)
        offered = [name for name in offered if name in wanted]
    if disabled is not None:
        unwanted = _tools_of(_names(disabled), everything, tools)
        offered = [name for name in offered if name not in unwanted]
    return offered


def _names(value: Iterable[str] | str) -> list[str]:
    """A list of names; 0.19's command line passes them comma-separated."""
    if isinstance(value, str):
        value = value.split(",")
    return [name.strip() for name in value if name and name.strip()]


def _tools_of(names: list[str], everything: list[str], tools: list[Tool]) -> set[str]:
    from hermes.tools.toolsets import toolsets

    ours = toolsets(tools)
    found: set[str] = set()
    for name in names:
        if name in _EVERYTHING or name.startswith("hermes-"):
            found.update(everything)
        found.update(THEIR_TOOLSETS.get(name, ()))
        found.update(ours.get(name, ()))
        if name in everything:
            found.add(name)
    return found
