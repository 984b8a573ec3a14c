"""One JSON POST on a kept ``http.client`` connection: the model call's HTTP, lean.

httpx2's request path (URL model, header validation, h11 events, transports) costs
~0.6 ms of CPU per model call in a gateway whose model takes 100 ms (its code runs
cache-cold after each wait), against ~0.3 ms for ``http.client`` on the same
connection. A chat call needs none of that machinery: a POST with a body, a status and
a body back. ``chat_post`` uses this when no proxy applies to the endpoint and keeps
httpx2 for the rest (proxies, redirects), so behaviour stays the SDK's.

Connections are kept per endpoint (scheme, host, port) in a small thread-safe pool,
taken for one request at a time. A kept connection the server closed meanwhile fails
before any answer arrives; the request is then sent once more on a fresh connection
(as httpcore does), which the server cannot have seen.

A post given an ``Abort`` runs in the caller's thread yet can be ended from another
(an interrupt): ``Abort.request`` shuts the connection's socket down, so the read it
waits in returns at once. Connecting cannot be cut short that way, so such a post
takes only an idle kept connection and raises ``NoKeptConnection`` (having sent
nothing the server acted on) when it would need a new one.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import urllib.request
import zlib
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = [
    "Abort",
    "Aborted",
    "Answer",
    "ConnectionFailed",
    "NoKeptConnection",
    "RequestTimedOut",
    "post",
    "proxied",
]

MAX_IDLE = 16  # connections kept per endpoint


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[str, str]]
    content: bytes


class ConnectionFailed(Exception):
    """The endpoint could not be reached, or the connection broke mid-request."""


class RequestTimedOut(ConnectionFailed):
    """Connecting, sending or reading took longer than the timeout."""


class Aborted(ConnectionFailed):
    """``Abort.request`` ended the post."""


class NoKeptConnection(Exception):
    """A post with an ``Abort`` found no idle connection to use (or one the server had
    closed): it needs a new connection, made where an interrupt need not wait for it."""


class Abort:
    """Lets another thread end a post in flight by shutting its socket down."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self.requested = False

    def request(self) -> None:
        with self._lock:
            self.requested = True
            sock = self._socket
        if sock is not None:
            with contextlib.suppress(OSError):  # closed meanwhile: nothing to end
                sock.shutdown(socket.SHUT_RDWR)

    def _watch(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if self.requested:
                raise Aborted("the post was aborted before it was sent")
            self._socket = connection.sock

    def _forget(self) -> None:
        with self._lock:
            self._socket = None


def proxied(url: str) -> bool:
    """True if the environment routes ``url`` through a proxy (httpx2 handles those)."""
    proxies = urllib.request.getproxies()
    if not proxies:
        return False
    scheme, host = urlsplit(url).scheme, urlsplit(url).hostname or ""
    if scheme not in proxies and "all" not in proxies:
        return False
    return not urllib.request.proxy_bypass(host)


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    timeout: float,
    abort: Abort | None = None,
    verify: bool | str = True,
) -> Answer:
    """POST ``body`` to ``url``; the answer whatever its status. Raises
    ``RequestTimedOut`` or ``ConnectionFailed`` (``Aborted`` after ``abort.request()``);
    with ``abort``, ``NoKeptConnection`` where it would have to connect. ``verify`` is
    how an https endpoint's certificate is checked (``ssl_context``)."""
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    pool = _pool(parts.scheme, parts.hostname or "", parts.port, timeout, verify)
    if abort is not None:
        return _post_abortable(pool, url, path, body, headers, abort)
    connection, reused = pool.take()
    try:
        try:
            answer = _exchange(connection, path, body, headers)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            if not reused:
                raise
            connection.close()  # closed by the server while idle: send once more
            connection = pool.fresh()
            answer = _exchange(connection, path, body, headers)
    except TimeoutError as exc:  # socket.timeout
        connection.close()
        raise RequestTimedOut(f"no answer from {url} within {timeout:g} s") from exc
    except (OSError, http.client.HTTPException) as exc:
        connection.close()
        raise ConnectionFailed(f"the connection to {url} failed: {exc}") from exc
    pool.give_back(connection)
    return answer


def _post_abortable(
    pool: _Pool, url: str, path: str, body: bytes, headers: dict[str, str], abort: Abort
) -> Answer:
    connection = pool.take_idle()
    if connection is None:
        raise NoKeptConnection()
    try:
        abort._watch(connection)
        try:
            answer = _exchange(connection, path, body, headers)
        finally:
            abort._forget()
    except Aborted:
        pool.give_back(connection)  # nothing was sent on it
        raise
    except (OSError, http.client.HTTPException) as exc:
        connection.close()
        if abort.requested:
            raise Aborted("the post was aborted") from exc
        if isinstance(exc, TimeoutError):
            raise RequestTimedOut(f"no answer from {url} within {pool.timeout:g} s") from exc
        if isinstance(exc, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError):
            raise NoKeptConnection() from exc  # closed while idle: the server saw nothing
        raise ConnectionFailed(f"the connection to {url} failed: {exc}") from exc
    pool.give_back(connection)
    return answer


def _exchange(
    connection: http.client.HTTPConnection, path: str, body: bytes, headers: dict[str, str]
) -> Answer:
    connection.request("POST", path, body, headers)
    response = connection.getresponse()
    content = response.read()
    if response.getheader("Content-Encoding", "").lower() in ("gzip", "deflate"):
        content = zlib.decompress(content, zlib.MAX_WBITS | 32)  # gzip or zlib header
    answer = Answer(response.status, response.getheaders(), content)
    if response.will_close:
        connection.close()
    return answer


class _Pool:
    """Idle connections to one endpoint."""

    def __init__(
        self, scheme: str, host: str, port: int | None, timeout: float, verify: bool | str
    ) -> None:
        self.scheme, self.host, self.port, self.timeout = scheme, host, port, timeout
        self.idle: list[http.client.HTTPConnection] = []
        self.lock = threading.Lock()
        self.context = ssl_context(verify) if scheme == "https" else None

    def take_idle(self) -> http.client.HTTPConnection | None:
        with self.lock:
            return self.idle.pop() if self.idle else None

    def take(self) -> tuple[http.client.HTTPConnection, bool]:
        with self.lock:
            if self.idle:
                return self.idle.pop(), True
        return self.fresh(), False

    def fresh(self) -> http.client.HTTPConnection:
        if self.context is not None:
            return http.client.HTTPSConnection(
                self.host, self.port, timeout=self.timeout, context=self.context
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def give_back(self, connection: http.client.HTTPConnection) -> None:
        if connection.sock is None:  # closed: the server said so, or it broke
            return
        with self.lock:
            if len(self.idle) < MAX_IDLE:
                self.idle.append(connection)
                return
        connection.close()


def ssl_context(verify: bool | str = True) -> ssl.SSLContext:
    """The TLS settings of a connection: the SDK's HTTP library's own (its CA bundle,
    SSL_CERT_FILE...) for True, that CA file's for a path, no certificate check at all
    for False (an endpoint's ``ssl_verify: false``)."""
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    import httpx2

    return httpx2.create_ssl_context()


_pools: dict[tuple[str, str, int | None, float, bool | str], _Pool] = {}
_pools_lock = threading.Lock()


def _pool(scheme: str, host: str, port: int | None, timeout: float, verify: bool | str) -> _Pool:
    key = (scheme, host, port, timeout, verify)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = _Pool(scheme, host, port, timeout, verify)
        return pool
