"""hermes.tools: the tool registry and the built-in tools.

    registry.py        Tool, ToolContext, ToolRegistry (dispatch never raises), ToolError
    toolsets.py        the built-in tools, toolsets, what each surface offers
    terminal.py        the terminal tool (foreground and background commands)
    processes.py       the process tool (list, poll, log, wait, kill)
    background.py      background-process lifecycle: start, watch, judge, kill
    process_store.py   background-process records under $HERMES_HOME/processes
    events.py          completion events, exactly once: EventBus, drain_events
    approval.py        the approval policy: allow lists, ask, refuse (terminal.mode)
    command_policy.py  which commands are risky, judged on their parse (allow by parse)
    git_risk.py        which git commands lose work
    shell_parse.py     a command line read into simple commands (bashlex), wrappers
    command_paths.py   which files a command writes or reads, for protected paths
    files.py           read_file, write_file, patch
    file_search.py     search_files
    memory.py          the memory tool and read_memory_snapshot
    session_search.py  the session_search tool
    recall.py          recall: this conversation's exact stored messages, by text or id
    skills.py          skills on disk (SKILL.md folders): scan, prompt listing
    skill_tools.py     skill_view and skill_manage
    mcp_config.py      mcp_servers in config.yaml, read as Hermes Agent writes it
    mcp_launch.py      a stdio MCP server's start: as configured, or sandboxed if asked
    mcp_hub.py         the process's MCP connections (the mcp SDK), bounded waits
    mcp_tools.py       MCP servers' tools as hermes tools (mcp__server__tool)

This package depends only on ``hermes.config``, ``hermes.errors`` and (through the
context it is handed) ``hermes.state``; never on agent, gateway or cli.
"""

from __future__ import annotations

from hermes.tools.memory import read_memory_snapshot
from hermes.tools.processes.events import CompletionEvent, EventBus, drain_events
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
