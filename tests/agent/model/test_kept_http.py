"""kept_http: the model call's POST on a kept connection, against a real local socket."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from hermes.agent.model import kept_http

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


def _server_that_drops_idle_connections() -> tuple[str, list[int]]:
    """Answers one request per connection, then closes it without saying so."""
    listener = socket.create_server(("127.0.0.1", 0))
    served: list[int] = []

    def serve() -> None:
        while True:
            connection, _ = listener.accept()
            with connection:
                data = b""
                while b"\r\n\r\n" not in data or not data.endswith(b"hi"):
                    data += connection.recv(65536)
                served.append(1)  # before answering: the client may look right after
                connection.sendall(ANSWER)

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions", served


def test_a_kept_connection_the_server_closed_is_replaced_and_the_post_sent_once() -> None:
    url, served = _server_that_drops_idle_connections()
    headers = {"Content-Type": "application/json"}
    for _ in range(3):
        answer = kept_http.post(url, b"hi", headers, 10.0)
        assert (answer.status, answer.content) == (200, b"{}")
    assert len(served) == 3  # each request reached the server exactly once


def test_an_endpoint_behind_a_proxy_is_left_to_httpx2(monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "localhost")
    assert kept_http.proxied("http://models.example:8000/v1")
    assert not kept_http.proxied("http://localhost:8000/v1")


def _server_that_keeps_connections(hang_from: int) -> tuple[str, list[int]]:
    """Answers requests on kept connections; from request ``hang_from`` on, never
    answers. ``served`` holds, per request, the number of its connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    served: list[int] = []

    def serve(connection: socket.socket, number: int) -> None:
        with connection:
            data = b""
            while True:
                while not data.endswith(b"hi"):
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                data = b""
                served.append(number)
                if len(served) >= hang_from:
                    connection.recv(65536)  # until the client goes away
                    return
                connection.sendall(ANSWER)

    def accept() -> None:
        for number in range(1000):
            connection, _ = listener.accept()
            threading.Thread(target=serve, args=(connection, number), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions", served


HEADERS = {"Content-Type": "application/json"}


@pytest.mark.timeout(30)
def test_an_abort_ends_a_post_waiting_on_a_kept_connection_at_once() -> None:
    url, served = _server_that_keeps_connections(hang_from=2)
    kept_http.post(url, b"hi", HEADERS, 60.0)  # leaves an idle kept connection
    abort = kept_http.Abort()
    threading.Timer(0.3, abort.request).start()
    with pytest.raises(kept_http.Aborted):  # long before the 60 s timeout (the mark)
        kept_http.post(url, b"hi", HEADERS, 60.0, abort)
    assert served == [0, 0]  # sent once, on the kept connection


def test_an_abortable_post_never_connects_and_sends_nothing_without_a_kept_one() -> None:
    url, served = _server_that_keeps_connections(hang_from=99)
    with pytest.raises(kept_http.NoKeptConnection):
        kept_http.post(url, b"hi", HEADERS, 10.0, kept_http.Abort())
    assert served == []
    kept_http.post(url, b"hi", HEADERS, 10.0)
    answer = kept_http.post(url, b"hi", HEADERS, 10.0, kept_http.Abort())
    assert (answer.status, answer.content) == (200, b"{}")
    assert served == [0, 0]  # the abortable post went on the kept connection


def test_an_abort_requested_first_sends_nothing_and_keeps_the_connection() -> None:
    url, served = _server_that_keeps_connections(hang_from=99)
    kept_http.post(url, b"hi", HEADERS, 10.0)
    abort = kept_http.Abort()
    abort.request()
    with pytest.raises(kept_http.Aborted):
        kept_http.post(url, b"hi", HEADERS, 10.0, abort)
    kept_http.post(url, b"hi", HEADERS, 10.0, kept_http.Abort())
    assert served == [0, 0]  # the aborted post sent nothing; its connection was kept


def test_an_abortable_post_on_a_connection_the_server_closed_asks_for_a_new_one() -> None:
    url, served = _server_that_drops_idle_connections()
    kept_http.post(url, b"hi", HEADERS, 10.0)
    time.sleep(0.1)  # the server has closed it
    with pytest.raises(kept_http.NoKeptConnection):
        kept_http.post(url, b"hi", HEADERS, 10.0, kept_http.Abort())
    assert len(served) == 1  # the closed connection carried nothing to the server
