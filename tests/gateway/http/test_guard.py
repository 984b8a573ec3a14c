"""Issue 16, finding 1: a web page cannot drive the loopback HTTP API (real HTTP)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import pytest

from tests.gateway.harness import GatewayThread, write_config

BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "write a file"}]}


def _post(gateway: GatewayThread, **headers: str) -> httpx.Response:
    headers.setdefault("Content-Type", "application/json")
    headers.setdefault("Authorization", f"Bearer {gateway.api_key}")
    return httpx.post(
        gateway.url + "/chat/completions", content=json.dumps(BODY), headers=headers, timeout=30
    )


def test_cross_site_simple_request_is_refused_and_reaches_no_model(gateway, fake_llm) -> None:
    port = gateway.runner.adapters["api_server"].port
    attacks = [
        ({"Content-Type": "text/plain"}, 415),
        ({"Origin": "http://evil.example"}, 403),
        ({"Host": f"evil.example:{port}"}, 421),
        ({"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403),
    ]
    for headers, status in attacks:
        response = _post(gateway, **headers)
        assert response.status_code == status, headers
        assert response.json()["error"]["message"].endswith(".")
    assert fake_llm.requests == []
    # Plain clients (no Origin, loopback Host, JSON) still get answers.
    assert _post(gateway).status_code == 200
    assert _post(gateway, Host=f"localhost:{port}").status_code == 200


def test_listed_origin_and_host_are_answered(hermes_home: Path, fake_llm, model_key) -> None:
    write_config(
        hermes_home,
        fake_llm.url,
        gateway={
            "api_allowed_origins": ["http://app.example"],
            "api_allowed_hosts": ["hermes.lan"],
        },
    )
    with GatewayThread(hermes_home) as gateway:
        port = gateway.runner.adapters["api_server"].port
        ok = _post(gateway, Origin="http://app.example", Host=f"hermes.lan:{port}")
        assert ok.status_code == 200
        assert _post(gateway, Origin="http://app.example.evil").status_code == 403


@pytest.mark.parametrize(
    ("header", "name"),
    [("127.0.0.1:8642", "127.0.0.1"), ("[::1]:80", "::1"), ("Evil.Example.", "evil.example")],
)
def test_host_name_of_header(header: str, name: str) -> None:
    from hermes.gateway.http.guard import host_name

    assert host_name(header) == name


def test_loopback_without_a_configured_key_generates_one(
    hermes_home: Path, config_file: Path, fake_llm, caplog
) -> None:
    caplog.set_level("DEBUG")
    with GatewayThread(hermes_home) as gateway:
        key_file = hermes_home / "api_key"
        key = key_file.read_text(encoding="utf-8").strip()
        assert len(key) >= 32 and gateway.api_key == key
        assert key_file.stat().st_mode & 0o777 == 0o600
        refused = httpx.post(gateway.url + "/chat/completions", json=BODY, timeout=30)
        assert refused.status_code == 401
        assert fake_llm.requests == []
        assert _post(gateway).status_code == 200
        started = gateway.runner.adapters["api_server"]
    with GatewayThread(hermes_home) as again:  # the next start keeps the same key
        assert again.api_key == key
    assert key not in caplog.text
    assert started.api.key == key


def test_gateways_starting_at_once_agree_on_one_key(hermes_home: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from hermes.gateway.http.key import ensure_api_key

    with ThreadPoolExecutor(8) as pool:
        keys = {key for key, _ in pool.map(lambda _: ensure_api_key(hermes_home), range(16))}
    assert keys == {(hermes_home / "api_key").read_text(encoding="utf-8").strip()}
    assert sorted(p.name for p in hermes_home.iterdir() if "api_key" in p.name) == ["api_key"]


# -- finding 9: malformed bodies are a 400 with a sentence, never a 500 ---------------


@pytest.mark.parametrize(
    "raw",
    [
        "[" * 200_000 + "]" * 200_000,
        json.dumps({**BODY, "stream": True, "stream_options": "yes"}),
        json.dumps({**BODY, "stream_options": ["include_usage"]}),
        json.dumps(
            {
                "model": "fake-model",
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": "x.png"}]}
                ],
            }
        ),
        json.dumps(
            {
                "model": "fake-model",
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": 5}}]}
                ],
            }
        ),
    ],
    ids=["deep-array", "stream-options-string", "stream-options-list", "image-str", "url-int"],
)
def test_malformed_body_is_a_400_without_a_traceback(gateway, fake_llm, raw: str, caplog) -> None:
    caplog.set_level("DEBUG")
    response = httpx.post(
        gateway.url + "/chat/completions",
        content=raw,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {gateway.api_key}"},
        timeout=30,
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"].endswith(".")
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)
    assert fake_llm.requests == []


def _slow_gateway(hermes_home: Path, fake_llm) -> GatewayThread:
    write_config(hermes_home, fake_llm.url, gateway={"api_read_timeout": 1})
    return GatewayThread(hermes_home)


def _connect(gateway: GatewayThread) -> socket.socket:
    adapter = gateway.runner.adapters["api_server"]
    conn = socket.create_connection(("127.0.0.1", adapter.port), timeout=30)
    return conn


def _read_until_closed(conn: socket.socket) -> bytes:
    received = b""
    while chunk := conn.recv(65536):
        received += chunk
    return received


def test_connections_that_never_finish_their_headers_are_closed(hermes_home, fake_llm) -> None:
    """Slowloris: many half-open connections, each closed by the server, not held."""
    with _slow_gateway(hermes_home, fake_llm) as gateway:
        held = [_connect(gateway) for _ in range(20)]
        for conn in held:
            conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        for conn in held:
            assert _read_until_closed(conn) == b""  # closed by the server, nothing answered
            conn.close()
        assert _post(gateway).status_code == 200  # and the server still answers
    assert len(fake_llm.requests) == 1


def test_a_body_that_trickles_in_gets_408_and_reaches_no_model(hermes_home, fake_llm) -> None:
    body = json.dumps(BODY).encode()
    with _slow_gateway(hermes_home, fake_llm) as gateway:
        conn = _connect(gateway)
        conn.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\n"
            + f"Authorization: Bearer {gateway.api_key}\r\n".encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[:10]
        )
        answer = _read_until_closed(conn)
        conn.close()
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"did not arrive within 1 seconds" in answer
    assert fake_llm.requests == []
