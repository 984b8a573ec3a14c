"""kept_http: the model call's POST on a kept connection, against a real local socket."""

from __future__ import annotations

import socket
import threading

from hermes.agent import kept_http

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
                connection.sendall(ANSWER)
                served.append(1)

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
