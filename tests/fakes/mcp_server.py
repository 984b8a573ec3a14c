"""A real MCP server written with the official ``mcp`` SDK, for the MCP tests.

Run ``python -m tests.fakes.mcp_server stdio`` or ``... http PORT [TOKEN]`` (streamable
HTTP on 127.0.0.1:PORT/mcp; with TOKEN every request must carry
``Authorization: Bearer TOKEN``). Its tools:

- ``echo(text)``: the text back, prefixed with this start's id (a pid repeats
  in the sandbox's own PID namespace);
- ``add(a, b)``: the sum, as text;
- ``die()``: the process exits in the middle of the call;
- ``hang(seconds)``: sleeps, standing for a server that stops answering;
- ``env(name)``: the value of an environment variable of the server;
- ``fail()``: the tool reports an error (``isError``);
- ``read(path)``: the file's text, or the error reading it (the sandbox tests).

Each start is appended to the file named by ``FAKE_MCP_STARTS`` (if set), so a test can
count restarts. While the file named by ``FAKE_MCP_REFUSE`` exists, a start writes two
lines to stderr and exits with code 4 (a server that cannot start).
"""

from __future__ import annotations

import os
import sys
import time
import uuid

from mcp.server.mcpserver import MCPServer

server = MCPServer("fake")
START_ID = uuid.uuid4().hex[:12]


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"{START_ID}: {text}"


@server.tool()
def add(a: int, b: int) -> str:
    """Add two whole numbers."""
    return str(a + b)


@server.tool()
def die() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


@server.tool()
def hang(seconds: float) -> str:
    """Sleep for a while before answering."""
    time.sleep(seconds)
    return "woke up"


@server.tool()
def env(name: str) -> str:
    """An environment variable of the server."""
    return os.environ.get(name, "(unset)")


@server.tool()
def read(path: str) -> str:
    """The text of a file, or why it cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        return f"cannot read: {type(exc).__name__}"


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("the fake tool failed on purpose")


def _record_start() -> None:
    path = os.environ.get("FAKE_MCP_STARTS")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{START_ID}\n")


def _serve_http(port: int, token: str | None) -> None:
    import uvicorn

    app = server.streamable_http_app()

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http" and token is not None:
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no token"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


def _refuse_if_told() -> None:
    flag = os.environ.get("FAKE_MCP_REFUSE")
    if flag and os.path.exists(flag):
        print("fake: reading settings", file=sys.stderr)
        print("fake: DATABASE_URL is not set; cannot start", file=sys.stderr)
        sys.exit(4)


if __name__ == "__main__":
    _record_start()
    _refuse_if_told()
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        _serve_http(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
