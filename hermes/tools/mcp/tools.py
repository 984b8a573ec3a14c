"""MCP servers' tools as hermes tools.

Each tool is offered as ``mcp__<server>__<tool>`` (Hermes Agent 0.19's names, shared with
Claude Code and Codex; characters outside ``[A-Za-z0-9_]`` become ``_``) with the
server's own description and input schema, in the toolset ``mcp-<server>``. A result is
the text of its content blocks (structured content as JSON when there is no text); an
error the tool reports, or a server that fails, is an ``Error:`` tool result. Like every
tool result it is scrubbed of hermes's secrets by the registry.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.tools.mcp import tool_cache
from hermes.tools.mcp.config import read_servers, server_specs
from hermes.tools.mcp.hub import LATE_WAIT, McpError, RemoteTool, hub
from hermes.tools.mcp.spec import ServerSpec
from hermes.tools.registry import Tool, ToolContext, ToolError

if TYPE_CHECKING:
    from hermes.config import Config

log = logging.getLogger(__name__)

PREFIX = "mcp__"
# Seconds before a server offered from the cache starts: a one-shot answered sooner
# never pays for starting servers it did not call (a call starts its server at once).
CACHED_START_DELAY = 2.0


def tool_name(server: str, tool: str) -> str:
    return f"{PREFIX}{_safe(server)}__{_safe(tool)}"


def toolset_name(server: str) -> str:
    return f"mcp-{server}"


def _safe(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", value)


def mcp_tools(
    config: Config | None,
    home: Path | None = None,
    on_wait: Callable[[list[str]], None] | None = None,
) -> list[Tool]:
    """The tools of every configured server: all servers start at once in the
    background; a server that listed its tools before is offered from the cache without
    waiting (a call to it waits for its start), one never seen is waited for (all
    together, not one after another), and ``on_wait`` is told their names first (so a
    person sees what the turn waits for). A server that does not answer offers nothing
    this time, said by name, and may join later (``late_tools``)."""
    specs = server_specs(config, home)
    cached = {spec: tool_cache.read(home, spec) for spec in specs if hub().listed(spec) is None}
    for spec in specs:
        delay = CACHED_START_DELAY if cached.get(spec) is not None else 0.0
        started = hub().start_in_background(spec, delay)
        if started is not None:
            started.add_done_callback(functools.partial(_remember, home, spec))
    waited = [s.name for s in specs if cached.get(s) is None and hub().listed(s) is None]
    if waited and on_wait is not None:
        on_wait(waited)
    tools: list[Tool] = []
    for spec in specs:
        if cached.get(spec) is not None:
            tools += [make_tool(spec, r) for r in cached[spec] or () if spec.offers(r.name)]
            continue
        try:
            tools += server_tools(spec)
        except McpError as exc:
            # A failed start was logged with its reason; a slow one is said here.
            level = logging.WARNING if "still starting" in str(exc) else logging.DEBUG
            log.log(level, "MCP tools left out this turn: %s.", exc)
    return tools


def _remember(home: Path | None, spec: ServerSpec, _start: object = None) -> None:
    listed = hub().listed(spec)
    if listed is not None:
        tool_cache.write(home, spec, listed)


def late_tools(config: Config | None, home: Path | None, present: Collection[str]) -> list[Tool]:
    """The tools of the configured servers whose toolset is not in ``present`` and that
    answer now (each waited for ``LATE_WAIT`` seconds at most, after its back-off): how a
    server that was down when a conversation started joins it later."""
    specs, _ = read_servers(config, home)  # the problems were logged at the start
    tools: list[Tool] = []
    for spec in specs:
        if toolset_name(spec.name) in present:
            continue
        try:
            tools += server_tools(spec, wait=LATE_WAIT)
        except McpError:
            continue
    return tools


def server_tools(spec: ServerSpec, wait: float | None = None) -> list[Tool]:
    """The server's tools as hermes tools (its include/exclude applied); ``McpError``
    when it does not answer."""
    return [
        make_tool(spec, remote)
        for remote in hub().list_tools(spec, wait)
        if spec.offers(remote.name)
    ]


def make_tool(spec: ServerSpec, remote: RemoteTool) -> Tool:
    def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            result = hub().call(spec, remote.name, args)
        except McpError as exc:
            raise ToolError(str(exc)) from None
        return result_text(spec, remote.name, result)

    return Tool(
        name=tool_name(spec.name, remote.name),
        description=remote.description or f"The tool {remote.name} of the MCP server {spec.name}.",
        parameters=_object_schema(remote.input_schema),
        handler=handler,
        toolsets=(toolset_name(spec.name),),
    )


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Providers want an object schema with properties, even for a tool without arguments."""
    schema = dict(schema) if schema.get("type") == "object" else {"type": "object"}
    schema.setdefault("properties", {})
    return schema


def result_text(spec: ServerSpec, tool: str, result: Any) -> str:
    text = "\n".join(_block_text(block) for block in result.content or [])
    structured = getattr(result, "structured_content", None)
    if not text.strip() and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    if result.is_error:
        raise ToolError(f"the MCP tool '{tool}' of '{spec.name}' reported: {text or 'an error'}")
    return text


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    resource = getattr(block, "resource", None)
    if resource is not None and getattr(resource, "text", None):
        return str(resource.text)
    if kind == "resource_link":
        return f"[resource: {getattr(block, 'uri', '')}]"
    mime = getattr(block, "mime_type", "") or ""
    return f"[{kind or 'content'} {mime}]".replace(" ]", "]")


def restart_servers(config: Config | None, home: Path | None) -> list[str]:
    """Stop every MCP server of this process and start those ``config`` names again, all
    at once, each waited for up to its ``connect_timeout``; one line per server saying
    whether it is connected (and its tool count) or why not, the config's problems too."""
    hub().close()  # a later use starts afresh: new connections, no back-off remembered
    specs, problems = read_servers(config, home)
    for spec in specs:
        started = hub().start_in_background(spec)
        if started is not None:
            started.add_done_callback(functools.partial(_remember, home, spec))
    lines = []
    for spec in specs:
        try:
            count = len(server_tools(spec))
        except McpError as exc:
            lines.append(f"{spec.name}: not connected: {exc}")
            continue
        lines.append(f"{spec.name}: connected, {count} tool{'' if count == 1 else 's'}")
    return lines + problems
