"""The MCP servers of this process, through the official ``mcp`` SDK.

One event loop on one daemon thread holds one connection per configured server, shared
by every conversation of the process. A server starts the first time its tools are
wanted; a call to a server that died starts it again. Every wait is bounded: starting
and listing by the server's ``connect_timeout``, a call by its ``timeout``. A call that
fails or times out drops the connection (a hanging server is stopped, not kept), so the
next call starts afresh. A server that failed to start is tried again on a later call
after a back-off (2, 4, 8 ... 60 seconds). Failures come back as ``McpError`` with one
sentence (for a stdio server that ended: its exit code and the last lines of its stderr,
kept in ``$HERMES_HOME/logs/mcp-NAME.log``); nothing here raises anything else to the
tools, so a broken server can never stall a turn or bring a gateway down.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import math
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

from hermes.errors import HermesError
from hermes.tools.mcp.launch import EXIT_MARK
from hermes.tools.mcp.spec import ServerSpec

log = logging.getLogger(__name__)

T = TypeVar("T")
STOP_GRACE = 5.0  # seconds a dropped connection gets to close before it is cancelled
# A server that failed to start is started again on the next call, but not before
# 2, 4, 8, ... (at most MAX_BACKOFF) seconds after its last failed start, so a server
# that is down costs one quick tool error per call, not one connect_timeout.
MAX_BACKOFF = 60.0
# Seconds a new conversation waits for a server that failed before (it goes on starting
# in the background, and its tools join the conversation's next turn once it answers).
LATE_WAIT = 2.0
TAIL_LINES = 3  # lines of a failed server's stderr quoted in its error
START_MARK = "--- hermes starts the MCP server"


class McpError(HermesError):
    """An MCP server could not start, answer or finish in time; one sentence."""


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


class Connection:
    """One server's live client, owned by one task on the hub's loop (the SDK's
    contexts are entered and left in the same task)."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.tools: list[RemoteTool] | None = None
        self.failures = 0  # failed starts in a row
        self.failed_at: float | None = None
        self.failure = ""
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None

    def wait_left(self) -> float:
        """Seconds before this server, which failed to start, may be started again."""
        if not self.failures or self.failed_at is None:
            return 0.0
        backoff = min(MAX_BACKOFF, 2.0**self.failures)
        return max(0.0, backoff - (time.monotonic() - self.failed_at))

    def down(self) -> str:
        """Why the server is down and when it is tried again (one sentence, no period)."""
        left = math.ceil(self.wait_left())
        when = f" after {left} seconds" if left > 0 else ""
        return f"{self.failure}; it will be started again on the next call{when}"

    async def start(self) -> Any:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._client is not None and self._owner is not None and not self._owner.done():
                return self._client
            if self.wait_left() > 0:
                raise McpError(self.down())
            await self._drop()
            ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            ready.add_done_callback(_retrieved)  # a start that timed out is said once, here
            self._closing = asyncio.Event()
            self._owner = asyncio.create_task(self._own(ready, self._closing))
            try:
                self._client = await asyncio.wait_for(
                    asyncio.shield(ready), self.spec.connect_timeout
                )
            except BaseException as exc:
                await self._drop()
                self.failures += 1
                self.failed_at, self.failure = time.monotonic(), _reason(exc, self.spec, "start")
                log.warning("%s.", self.failure[0].upper() + self.failure[1:])
                raise McpError(self.down()) from None
            self.failures, self.failed_at = 0, None
            return self._client

    async def _own(self, ready: asyncio.Future[Any], closing: asyncio.Event) -> None:
        try:
            async with _open_client(self.spec) as client:
                self.tools = await _list_tools(client)
                if not ready.done():
                    ready.set_result(client)
                await closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            if not isinstance(exc, Exception | asyncio.CancelledError):
                raise
        finally:
            self._client = None

    def running(self) -> bool:
        """Started and answering (not starting, not stopped)."""
        return self._client is not None

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        client = await self.start()
        try:
            return await asyncio.wait_for(client.call_tool(tool, arguments), self.spec.timeout)
        except BaseException as exc:
            await self.drop()  # the process has ended (or is stopped) once this returns
            reason = _reason(exc, self.spec, f"run '{tool}'")
            log.warning("%s.", reason[0].upper() + reason[1:])
            then = "was stopped and will be" if isinstance(exc, TimeoutError) else "will be"
            raise McpError(f"{reason}; it {then} started again on the next call") from None

    async def drop(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            await self._drop()

    async def _drop(self) -> None:
        owner, client = self._owner, self._client
        self._owner, self._client = None, None
        if owner is None or owner.done():
            return
        if client is None:  # still starting: nothing to close gently, nothing to wait for
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
            return
        if self._closing is not None:
            self._closing.set()
        try:
            await asyncio.wait_for(asyncio.shield(owner), STOP_GRACE)
        except BaseException:
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _reason(exc: BaseException, spec: ServerSpec, what: str) -> str:
    """Why ``what`` failed, in one clause: for a stdio server that ended, its exit code
    and the last lines of its stderr (the process has ended when this is called)."""
    if isinstance(exc, CommandNotFound):
        return f"the MCP server '{spec.name}' failed to {what}: {exc}"
    code, tail = _stderr_tail(spec)
    if isinstance(exc, TimeoutError):  # asyncio's is the builtin since 3.11
        limit = spec.connect_timeout if what == "start" else spec.timeout
        said = f" (its stderr ends: {tail})" if tail and what == "start" else ""
        return f"the MCP server '{spec.name}' did not {what} within {limit:g} seconds{said}"
    if code is not None:
        said = f", its stderr ending: {tail}" if tail else " and wrote nothing to stderr"
        return (
            f"the MCP server '{spec.name}' failed to {what}: it exited with code {code}{said} "
            f"(full log: {spec.stderr_log})"
        )
    said = f", its stderr ending: {tail}" if tail else ""
    return f"the MCP server '{spec.name}' failed to {what} ({_first_error(exc)}){said}"


def _stderr_tail(spec: ServerSpec) -> tuple[int | None, str]:
    """The exit code the launcher wrote for the last start of ``spec`` (None when it
    did not end by itself, or is not a stdio server) and its last stderr lines."""
    if not spec.command or not spec.stderr_log:
        return None, ""
    try:
        text = Path(spec.stderr_log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, ""
    lines = text.rsplit(START_MARK, 1)[-1].splitlines()[1:]
    code = None
    if lines and lines[-1].startswith(EXIT_MARK):
        number = lines.pop()[len(EXIT_MARK) :].strip()
        code = int(number) if number.lstrip("-").isdigit() else None
    said = [line.strip() for line in lines if line.strip()][-TAIL_LINES:]
    return code, " | ".join(said)[-400:]


def _first_error(exc: BaseException) -> str:
    """The innermost plain error of an exception group (anyio wraps transport errors)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@asynccontextmanager
async def _open_client(spec: ServerSpec) -> AsyncIterator[Any]:
    from mcp import Client

    if spec.command:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        _check_command(spec)
        argv = [*spec.launch_prefix, spec.command, *spec.args]
        params = StdioServerParameters(
            command=argv[0], args=argv[1:], env=dict(spec.env) or None, cwd=spec.cwd
        )
        with _stderr_log(spec) as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                yield client
        return
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=dict(spec.headers)) as http:
        transport = streamable_http_client(str(spec.url), http_client=http)
        async with Client(transport, mode="legacy") as client:
            yield client


class CommandNotFound(Exception):
    """A stdio server's command is not there: said before anything is started."""


def _check_command(spec: ServerSpec) -> None:
    path = dict(spec.env).get("PATH", os.environ.get("PATH", ""))
    if shutil.which(str(spec.command), path=path) is None:
        raise CommandNotFound(
            f"its command {spec.command} was not found; install it, or correct 'command' "
            "in config.yaml"
        )


@contextmanager
def _stderr_log(spec: ServerSpec) -> Iterator[TextIO]:
    """The server's stderr file: its log under HERMES_HOME, else /dev/null."""
    path = Path(spec.stderr_log) if spec.stderr_log else None
    if path is not None:
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            path = None
    if path is None:
        with open(os.devnull, "a", encoding="utf-8") as handle:
            yield handle
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with open(fd, "a", encoding="utf-8") as handle:
        handle.write(f"{START_MARK} at {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        handle.flush()  # before the server writes to the same file
        yield handle


async def _list_tools(client: Any) -> list[RemoteTool]:
    tools: list[RemoteTool] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            schema = dict(tool.input_schema or {"type": "object"})
            tools.append(RemoteTool(tool.name, tool.description or "", schema))
        cursor = page.next_cursor
        if not cursor:
            return tools


class McpHub:
    """The process's MCP connections and the loop they live on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connections: dict[ServerSpec, Connection] = {}
        self._starting: dict[ServerSpec, concurrent.futures.Future[Any]] = {}

    def _run(self, coro: Coroutine[Any, Any, T], limit: float) -> T:
        loop = self._ensure_loop()
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result(timeout=limit)
        except TimeoutError:
            future.cancel()
            raise McpError(f"the MCP call did not finish within {limit:g} seconds") from None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=_serve, args=(self._loop,), name="mcp-servers", daemon=True
                )
                thread.start()
            return self._loop

    def connection(self, spec: ServerSpec) -> Connection:
        with self._lock:
            return self._connections.setdefault(spec, Connection(spec))

    def list_tools(self, spec: ServerSpec, wait: float | None = None) -> list[RemoteTool]:
        """The server's tools, starting it if needed (cached once listed). A server that
        failed before is waited for ``LATE_WAIT`` seconds at most, and not at all while
        another caller's start of it goes on (in the background); one never tried, up to
        its ``connect_timeout``. Raises ``McpError`` saying why when there are no tools
        (yet)."""
        conn = self.connection(spec)
        if conn.tools is not None:
            return conn.tools
        if conn.wait_left() > 0:
            raise McpError(conn.down())
        if wait is None:
            wait = LATE_WAIT if conn.failures else spec.connect_timeout + STOP_GRACE * 2
        start, mine = self._start_once(conn)
        try:
            start.result(timeout=wait if mine or not conn.failures else 0)
        except TimeoutError:
            raise McpError(f"the MCP server '{spec.name}' is still starting") from None
        return conn.tools or []

    def start_in_background(
        self, spec: ServerSpec, delay: float = 0.0
    ) -> concurrent.futures.Future[Any] | None:
        """Start the server ``delay`` seconds from now without waiting (every configured
        server at once, so they start in parallel); the start in progress, or None when it
        is up or backing off. A call meanwhile starts it at once."""
        conn = self.connection(spec)
        if conn.tools is not None or conn.wait_left() > 0:
            return None
        return self._start_once(conn, delay)[0]

    def listed(self, spec: ServerSpec) -> list[RemoteTool] | None:
        """The tools the running server listed, or None while it has not."""
        return self.connection(spec).tools

    def _start_once(
        self, conn: Connection, delay: float = 0.0
    ) -> tuple[concurrent.futures.Future[Any], bool]:
        """The server's start in progress (and False), or a new one (and True): one at a
        time per server."""
        loop = self._ensure_loop()
        with self._lock:
            pending = self._starting.get(conn.spec)
            if pending is not None and not pending.done():
                return pending, False
            pending = asyncio.run_coroutine_threadsafe(_start_after(conn, delay), loop)
            self._starting[conn.spec] = pending
            return pending, True

    def call(self, spec: ServerSpec, tool: str, arguments: dict[str, Any]) -> Any:
        conn = self.connection(spec)
        limit = spec.connect_timeout + spec.timeout + STOP_GRACE * 2
        return self._run(conn.call(tool, arguments), limit)

    def stop(self, spec: ServerSpec) -> None:
        conn = self._connections.get(spec)
        if conn is not None and self._loop is not None:
            self._run(conn.drop(), STOP_GRACE * 2)

    def close(self) -> None:
        """Stop every server (at exit: stdio servers are child processes)."""
        with self._lock:
            loop, connections = self._loop, list(self._connections.values())
            self._connections.clear()
            self._starting.clear()
            self._loop = None  # a later use starts a fresh loop
        if loop is None or loop.is_closed():
            return
        # All at once, so a process with several servers exits in one grace period at
        # most; a server still starting is not waited for (its start holds its lock):
        # it ends when it reads its input, closed as this process exits.
        running = [conn for conn in connections if conn.running()]
        if running:  # else the loop may be busy starting one: not waited for either
            try:
                asyncio.run_coroutine_threadsafe(_drop_all(running), loop).result(STOP_GRACE * 2)
            except Exception:  # closing at exit: a stuck server must not block it
                log.debug("MCP servers did not all stop cleanly")
        loop.call_soon_threadsafe(loop.stop)


async def _start_after(conn: Connection, delay: float) -> Any:
    if delay > 0:
        await asyncio.sleep(delay)
    return await conn.start()


async def _drop_all(connections: list[Connection]) -> None:
    await asyncio.gather(*(conn.drop() for conn in connections), return_exceptions=True)


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        loop.close()


_hub: McpHub | None = None
_hub_lock = threading.Lock()


def hub() -> McpHub:
    """The process's hub, created on first use and closed at exit."""
    global _hub
    with _hub_lock:
        if _hub is None:
            _hub = McpHub()
            atexit.register(_hub.close)
        return _hub
