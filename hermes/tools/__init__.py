"""hermes.tools: the tool registry and the built-in tools.

    registry.py        Tool, ToolContext, ToolRegistry (dispatch never raises), ToolError
    toolsets.py        the built-in tools, toolsets, what each surface offers
    terminal.py        the terminal tool (foreground and background commands)
    files.py           read_file, write_file, patch
    file_search.py     search_files
    memory.py          the memory tool and read_memory_snapshot
    session_search.py  the session_search tool
    recall.py          recall: this conversation's exact stored messages, by text or id
    skills.py          skills on disk (SKILL.md folders): scan, prompt listing
    skill_tools.py     skill_view and skill_manage
    workspaces.py      whose folder the tools work in: one per gateway user
    added.py           tools code in this process adds while hermes runs (0.19's
                       registry.register), offered by every agent

and three subsystems, each a folder that says what it holds:

    guards/      what stands between a command and the machine: the approval policy
                 (by parse) and the OS sandbox, limits and scrubbed environment
    processes/   background processes: lifecycle, records, completion events, the
                 process tool
    mcp/         the MCP client: servers from config.yaml, their connections, their tools

This package depends only on ``hermes.config``, ``hermes.errors`` and (through the
context it is handed) ``hermes.state``; never on agent, gateway or cli.
"""

from __future__ import annotations

from hermes.tools.memory import read_memory_snapshot
from hermes.tools.processes.background import drain_events
from hermes.tools.processes.events import CompletionEvent, EventBus
from hermes.tools.registry import Tool, ToolContext, ToolError, ToolRegistry
from hermes.tools.toolsets import default_registry, resolve_toolset

__all__ = [
    "CompletionEvent",
    "EventBus",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "default_registry",
    "drain_events",
    "read_memory_snapshot",
    "resolve_toolset",
]
