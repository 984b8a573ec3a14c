"""One MCP server as configured: what ``config.py`` reads from ``mcp_servers:``,
``launch.py`` sets a stdio server's start on, and the hub connects to.

A value, with nothing of reading or starting in it, so every module of the room can
name it and none imports another to do so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_TOOL_TIMEOUT = 300.0
DEFAULT_CONNECT_TIMEOUT = 60.0


@dataclass(frozen=True)
class ServerSpec:
    """One MCP server as configured (``command`` for stdio, ``url`` for HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = DEFAULT_TOOL_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = field(default=())
    # Where a stdio server's stderr goes ($HERMES_HOME/logs/mcp-NAME.log), not the terminal.
    stderr_log: str | None = None
    sandbox: bool = False
    # The argv put before ``command``: the exit-code reporter, then bwrap's when sandboxed.
    launch_prefix: tuple[str, ...] = ()

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    def offers(self, tool: str) -> bool:
        if self.include is not None and tool not in self.include:
            return False
        return tool not in self.exclude

    def describe(self) -> str:
        if self.command:
            return " ".join([self.command, *self.args])
        return str(self.url)
