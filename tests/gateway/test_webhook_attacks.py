"""The webhook platform as an attacker on the network would try it (issue 59).

A real gateway process serves routes signed as Svix, GitHub and the generic V2 scheme
sign; the attacker has captured one correctly signed request and replays it with fresh
unsigned headers, sends malformed requests of every kind, edits the subscriptions file
while the gateway runs, and looks for the routes' secrets in what hermes shows.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes.gateway.webhook.signatures import body_hmac, github_signature
from tests.gateway.harness import wait_for, write_config
from tests.gateway.processes import free_port
from tests.state.helpers import StoreSpec

pytestmark = pytest.mark.slow  # gateway processes

GITHUB_SECRET = "gh-attack-secret-0123456789abcdef"
V2_SECRET = "v2-attack-secret-0123456789abcdef"
SVIX_KEY = b"svix-attack-key-0123456789"
SVIX_SECRET = "whsec_" + base64.b64encode(SVIX_KEY).decode()


def _routes() -> dict[str, Any]:
    return {
        "gh": {"secret": GITHUB_SECRET, "prompt": "gh {n}"},
        "gh-trusting": {"secret": GITHUB_SECRET, "prompt": "trusting {n}", "deliver_window": 0},
        "v2": {"secret": V2_SECRET, "prompt": "v2 {n}"},
        "svix": {"secret": SVIX_SECRET, "prompt": "svix {n}"},
    }


@pytest.fixture
def port(gateways_store: StoreSpec, model_key: str) -> int:
    return free_port()


def _start(run_gateway: Any, hermes_home: Path, llm_url: str, port: int, **options: Any) -> Any:
    webhook = {"port": port, "routes": _routes(), **options}
    write_config(hermes_home, llm_url, gateway={"platforms": {"webhook": webhook}})
    gateway = run_gateway("--workers", "1", "--grace", "0.2")
    gateway.wait_ready(port)
    return gateway


def _send(port: int, route: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    url = f"http://127.0.0.1:{port}/webhooks/{route}"
    raw = {name: value.encode() for name, value in headers.items()}  # UTF-8 as sent
    return httpx.post(url, content=body, headers=raw, timeout=10)


def _user_prompts(fake_llm: Any) -> list[str]:
    return [
        str(m.get("content"))
        for body in fake_llm.requests
        for m in body.get("messages", [])
        if m.get("role") == "user"
    ]


def _svix_headers(body: bytes) -> dict[str, str]:
    msg_id, stamp = f"msg_{uuid.uuid4().hex}", str(int(time.time()))
    signed = f"{msg_id}.{stamp}.".encode() + body
    signature = base64.b64encode(hmac.new(SVIX_KEY, signed, hashlib.sha256).digest()).decode()
    return {"svix-id": msg_id, "svix-timestamp": stamp, "svix-signature": f"v1,{signature}"}


def _v2_headers(body: bytes) -> dict[str, str]:
    stamp = str(int(time.time()))
    signature = body_hmac(V2_SECRET, stamp.encode() + b"." + body)
    return {"X-Webhook-Signature-V2": signature, "X-Webhook-Timestamp": stamp}


def test_only_what_is_signed_decides_a_duplicate(
    port: int, hermes_home: Path, fake_llm: Any, run_gateway: Any
) -> None:
    _start(run_gateway, hermes_home, fake_llm.url, port)
    captured = {
        "svix": (b'{"n": "s1"}', _svix_headers(b'{"n": "s1"}')),
        "v2": (b'{"n": "v1"}', _v2_headers(b'{"n": "v1"}')),
        "gh": (
            b'{"n": "g1"}',
            {"X-Hub-Signature-256": github_signature(GITHUB_SECRET, b'{"n": "g1"}')},
        ),
    }
    for route, (body, signed) in captured.items():
        codes = []
        for _ in range(3):  # replayed with a fresh unsigned id each time
            fresh = {"X-GitHub-Delivery": str(uuid.uuid4()), "X-Request-ID": uuid.uuid4().hex}
            codes.append(_send(port, route, body, {**signed, **fresh}).status_code)
        assert codes == [202, 200, 200], (route, codes)
    # A Svix id is signed: the same id with another timestamp is not a valid signature.
    body, signed = captured["svix"]
    stale = {**signed, "svix-timestamp": str(int(time.time()) - 3600)}
    assert _send(port, "svix", body, stale).status_code == 401
    # A new event of each scheme still runs.
    assert _send(port, "svix", b'{"n": "s2"}', _svix_headers(b'{"n": "s2"}')).status_code == 202
    assert _send(port, "v2", b'{"n": "v2"}', _v2_headers(b'{"n": "v2"}')).status_code == 202
    wait_for(lambda: len(fake_llm.requests) == 5, timeout=60, interval=0.1)
    time.sleep(0.5)
    assert sorted(_user_prompts(fake_llm)) == ["gh g1", "svix s1", "svix s2", "v2 v1", "v2 v2"]


def test_a_route_that_opts_out_trusts_the_senders_delivery_id(
    port: int, hermes_home: Path, fake_llm: Any, run_gateway: Any
) -> None:
    _start(run_gateway, hermes_home, fake_llm.url, port)
    body = b'{"n": "t"}'
    signed = {"X-Hub-Signature-256": github_signature(GITHUB_SECRET, body)}
    delivery = str(uuid.uuid4())
    first = _send(port, "gh-trusting", body, {**signed, "X-GitHub-Delivery": delivery})
    retry = _send(port, "gh-trusting", body, {**signed, "X-GitHub-Delivery": delivery})
    other = _send(port, "gh-trusting", body, {**signed, "X-GitHub-Delivery": str(uuid.uuid4())})
    assert [first.status_code, retry.status_code, other.status_code] == [202, 200, 202]
    assert first.json()["delivery_id"] == delivery  # as Hermes Agent 0.19 keys it
    wait_for(lambda: len(fake_llm.requests) == 2, timeout=60, interval=0.1)


def _malformed(port: int) -> dict[str, httpx.Response]:
    """Requests no sender would make, each as an attacker would send it."""
    github = {"X-Hub-Signature-256": github_signature(GITHUB_SECRET, b"{}")}
    deep = b"[" * 200_000 + b"]" * 200_000
    sent: dict[str, tuple[str, bytes, dict[str, str]]] = {
        "bad json, signed": (
            "gh",
            b"{not json",
            {"X-Hub-Signature-256": github_signature(GITHUB_SECRET, b"{not json")},
        ),
        "not utf-8, signed": (
            "gh",
            b"\xff\xfe\x00a=\x80",
            {"X-Hub-Signature-256": github_signature(GITHUB_SECRET, b"\xff\xfe\x00a=\x80")},
        ),
        "deeply nested, signed": (
            "gh",
            deep,
            {"X-Hub-Signature-256": github_signature(GITHUB_SECRET, deep)},
        ),
        "no signature": ("gh", b"{}", {}),
        "garbled signature": ("gh", b"{}", {"X-Hub-Signature-256": "sha256=zz\u00e9"}),
        "superscript svix time": (
            "svix",
            b"{}",
            {**_svix_headers(b"{}"), "svix-timestamp": "\u00b2"},
        ),
        "superscript v2 time": (
            "v2",
            b"{}",
            {"X-Webhook-Signature-V2": "00", "X-Webhook-Timestamp": "\u00b2\u00b3"},
        ),
        "huge v2 time": (
            "v2",
            b"{}",
            {"X-Webhook-Signature-V2": "00", "X-Webhook-Timestamp": "9" * 5000},
        ),
        "svix without id": ("svix", b"{}", {"svix-signature": "v1,AAAA"}),
        "garbled gzip": ("gh", b"not gzip at all", {**github, "Content-Encoding": "gzip"}),
        "gzip of another body": (
            "gh",
            gzip.compress(b'{"a": 1}'),
            {**github, "Content-Encoding": "gzip"},
        ),
        "unknown encoding": ("gh", b"{}", {**github, "Content-Encoding": "br-nope"}),
    }
    answers = {}
    for case, (route, body, headers) in sent.items():
        answers[case] = _send(port, route, body, headers)
    answers["GET on a route"] = httpx.get(f"http://127.0.0.1:{port}/webhooks/gh", timeout=10)
    answers["bad route name"] = httpx.post(
        f"http://127.0.0.1:{port}/webhooks/%00%ff", content=b"{}", timeout=10
    )
    return answers


def test_every_malformed_request_gets_a_4xx_with_a_json_reason(
    port: int, hermes_home: Path, fake_llm: Any, run_gateway: Any
) -> None:
    gateway = _start(run_gateway, hermes_home, fake_llm.url, port)
    for case, answer in _malformed(port).items():
        assert 400 <= answer.status_code < 500, (case, answer.status_code, answer.text)
        reason = answer.json()  # JSON, whatever went wrong
        assert isinstance(reason.get("error"), str) and reason["error"], (case, reason)
    assert "Traceback" not in gateway.output()
    # Malformed or not, none ran a turn; a good event still does.
    good = b'{"n": "ok"}'
    signed = {"X-Hub-Signature-256": github_signature(GITHUB_SECRET, good)}
    assert _send(port, "gh", good, signed).status_code == 202
    wait_for(lambda: fake_llm.requests, timeout=60, interval=0.1)
    time.sleep(0.5)
    assert _user_prompts(fake_llm) == ["gh ok"]


def _connect(port: int, source: str) -> socket.socket:
    """A connection to the webhook port from ``source`` (any 127.x address is loopback)."""
    return socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))


def _status_and_body(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    """What the server answered on ``sock`` before it closed it (within 30 s)."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_slow_senders_are_cut_off_and_capped_while_signed_events_go_through(
    port: int, hermes_home: Path, fake_llm: Any, run_gateway: Any
) -> None:
    limits = {"read_timeout": 2, "max_connections_per_address": 4, "max_connections": 10}
    _start(run_gateway, hermes_home, fake_llm.url, port, **limits)
    partial = b"POST /webhooks/gh HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # headers never end
    held = [_connect(port, "127.0.0.2") for _ in range(4)]
    for sock in held:
        sock.sendall(partial)
    over = _connect(port, "127.0.0.2")
    status, reason = _status_and_body(over)
    assert status == 429 and "connections from your address" in reason["error"]

    # The cap of one address takes nothing from another's signed events.
    good = b'{"n": "while-held"}'
    signed = {"X-Hub-Signature-256": github_signature(GITHUB_SECRET, good)}
    assert _send(port, "gh", good, signed).status_code == 202

    # A body that trickles in is answered 408 once its time is up.
    slow_body = _connect(port, "127.0.0.10")
    signature = github_signature(GITHUB_SECRET, b"x" * 60_000)
    slow_body.sendall(
        b"POST /webhooks/gh HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 60000\r\n"
        b"X-Hub-Signature-256: " + signature.encode() + b"\r\n\r\n" + b"x" * 100
    )
    status, reason = _status_and_body(slow_body)
    assert status == 408 and "did not arrive within 2 seconds" in reason["error"]

    # Other addresses fill the port: the next connection is told to come back later
    # (the first four may be cut off by now; ten fresh ones fill it whatever they did).
    more = [_connect(port, f"127.0.0.{3 + n // 4}") for n in range(10)]
    for sock in more:
        sock.sendall(partial)
    status, reason = _status_and_body(_connect(port, "127.0.0.9"))
    assert status == 503 and "try again shortly" in reason["error"]

    # Headers that never end: the server closes each held connection (recv gives b"";
    # a socket still open after 30 s raises a timeout here).
    for sock in held + more:
        while sock.recv(65536):
            pass
        sock.close()
    # Every slot is free again: the first address is served as before.
    again = b'{"n": "after"}'
    signed = {"X-Hub-Signature-256": github_signature(GITHUB_SECRET, again)}
    assert _send(port, "gh", again, signed).status_code == 202
    wait_for(lambda: len(fake_llm.requests) >= 2, timeout=60, interval=0.1)


def _hermes(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_route_secrets_are_never_shown(
    port: int, hermes_home: Path, fake_llm: Any, run_gateway: Any
) -> None:
    default = "webhook-default-secret-5f1c0e7a"
    gateway = _start(run_gateway, hermes_home, fake_llm.url, port, secret=default)
    subscribed = "subscribed-route-secret-9d2b44"
    made = _hermes(hermes_home, "webhook", "subscribe", "sub", "--secret", subscribed)
    assert made.returncode == 0 and subscribed in made.stdout  # once, to give the sender
    body = b'{"n": "sub"}'
    signed = {"X-Hub-Signature-256": github_signature(subscribed, body)}
    assert _send(port, "sub", body, signed).status_code == 202
    assert _send(port, "gh", body, {"X-Hub-Signature-256": "sha256=00"}).status_code == 401
    wait_for(lambda: fake_llm.requests, timeout=60, interval=0.1)
    shown = {
        "config show": _hermes(hermes_home, "config", "show"),
        "config show --json": _hermes(hermes_home, "config", "show", "--json"),
        "config get": _hermes(hermes_home, "config", "get", "gateway.platforms.webhook"),
        "webhook list": _hermes(hermes_home, "webhook", "list"),
    }
    secrets = (default, subscribed, GITHUB_SECRET, V2_SECRET, SVIX_SECRET)
    for what, run in shown.items():
        assert run.returncode == 0, (what, run.stderr)
        for secret in secrets:
            assert secret not in run.stdout + run.stderr, (what, secret)
    assert "Secret:  [redacted]" in shown["webhook list"].stdout
    assert "[redacted]" in shown["config show"].stdout
    log = gateway.output()
    assert "webhook: 1 subscription(s): sub" in log
    for secret in secrets:
        assert secret not in log, secret


def test_an_unsigned_route_needs_the_operators_flag_and_is_logged_when_it_appears(
    port: int, hermes_home: Path, fake_llm: Any, run_gateway: Any
) -> None:
    refused = _hermes(hermes_home, "webhook", "subscribe", "open", "--secret", "INSECURE_NO_AUTH")
    assert refused.returncode != 0 and "add --insecure-no-auth to mean it" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not (hermes_home / "webhook_subscriptions.json").exists()

    # Written into the file while a gateway without the flag runs: not served, and said.
    gateway = _start(run_gateway, hermes_home, fake_llm.url, port)
    unsigned = {"open": {"secret": "INSECURE_NO_AUTH", "prompt": "open {n}"}}
    subscriptions = hermes_home / "webhook_subscriptions.json"
    subscriptions.write_text(json.dumps(unsigned), encoding="utf-8")
    assert _send(port, "open", b'{"n": 1}', {}).status_code == 404
    assert "The webhook route 'open' has secret INSECURE_NO_AUTH, which checks no signature" in (
        gateway.output()
    )
    gateway.terminate()

    # The operator's flag, on loopback: served, and logged the moment it appears.
    subscriptions.unlink()
    gateway = _start(run_gateway, hermes_home, fake_llm.url, port, insecure_no_auth=True)
    made = _hermes(
        hermes_home, "webhook", "subscribe", "open", "--secret", "INSECURE_NO_AUTH",
        "--insecure-no-auth", "--prompt", "open {n}",
    )  # fmt: skip
    assert made.returncode == 0 and "checks no signature" in made.stdout, made.stderr
    assert _send(port, "open", b'{"n": 2}', {}).status_code == 202
    assert "THE ROUTE 'open' CHECKS NO SIGNATURE (INSECURE_NO_AUTH)" in gateway.output()
    wait_for(lambda: fake_llm.requests, timeout=60, interval=0.1)
    assert _user_prompts(fake_llm) == ["open 2"], gateway.output()
