"""PostgreSQL down under a running gateway (issue 56): ``/health`` and ``hermes gateway
status`` say the store is unreachable, requests fail at once with OpenAI's JSON 503 and
``Retry-After`` (they waited a minute for aiohttp's plain-text 500 before), and the
gateway serves again when the server is back. Every error the API answers is JSON in
OpenAI's shape, unknown paths and methods included.

The server goes away for real: the gateway reaches it through a TCP relay the test
takes down (``tests/gateway/tcp_proxy.py``), so other tests keep the shared server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from tests.gateway.harness import GatewayThread, stored_api_key, wait_for, write_config
from tests.gateway.processes import free_port
from tests.gateway.tcp_proxy import TcpProxy
from tests.stores import postgres_store

HERMES = str(Path(sys.executable).parent / "hermes")


def through(proxy: TcpProxy, url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{proxy.port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host))


def ask(url: str, words: str) -> httpx.Response:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": words}]}
    headers = {"Authorization": f"Bearer {stored_api_key()}"}
    # Well inside the store's minute of patience: a request that waits it out fails here.
    return httpx.post(f"{url}/chat/completions", json=body, headers=headers, timeout=20)


def gateway_status(home: Path) -> str:
    env = {**os.environ, "HERMES_HOME": str(home)}
    done = subprocess.run([HERMES, "gateway", "status"], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    return done.stdout


def health(port: int) -> int:
    return httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code


@pytest.mark.slow  # a gateway process, a server taken down and brought back
def test_postgres_down_under_a_running_gateway(
    hermes_home: Path, fake_llm: Any, run_gateway: Any
) -> None:
    write_config(hermes_home, fake_llm.url)
    with postgres_store() as store:
        server = urlsplit(str(store.url))
        proxy = TcpProxy(server.hostname or "127.0.0.1", server.port or 5432)
        proxy.up()
        try:
            port = free_port()
            gateway = run_gateway(
                "--api-server", f"127.0.0.1:{port}", "--workers", "1",
                env={"HERMES_STATE_URL": through(proxy, str(store.url))},
            )  # fmt: skip
            url = gateway.wait_ready(port)
            assert ask(url, "before").status_code == 200

            proxy.down()
            wait_for(lambda: health(port) == 503, timeout=30, interval=0.2)
            refused = ask(url, "while the server is down")
            assert refused.status_code == 503
            assert refused.headers["Retry-After"].isdigit()
            error = refused.json()["error"]
            assert error["code"] == "store_unavailable" and error["type"] == "server_error"
            assert "state store does not answer" in error["message"]
            assert httpx.get(f"http://127.0.0.1:{port}/health").json()["store"] == "unreachable"
            wait_for(lambda: "store is unreachable" in gateway_status(hermes_home), timeout=30)
            assert "Cannot reach PostgreSQL" in gateway.output()

            proxy.up()
            wait_for(lambda: health(port) == 200, timeout=30, interval=0.2)
            assert ask(url, "after").status_code == 200
            wait_for(lambda: "unreachable" not in gateway_status(hermes_home), timeout=30)
        finally:
            proxy.up()  # a gateway stopping writes its queue back to the store
            if "gateway" in locals():
                gateway.terminate()
            proxy.down()


def test_every_error_of_the_api_is_openai_json(hermes_home: Path, config_file: Path) -> None:
    with GatewayThread(hermes_home) as gateway:
        headers = {"Authorization": f"Bearer {gateway.api_key}"}
        base = gateway.url.removesuffix("/v1")  # the API server's root
        for method, path in (("GET", "/no/such/path"), ("DELETE", "/v1/chat/completions")):
            answer = httpx.request(method, f"{base}{path}", headers=headers, timeout=10)
            assert answer.status_code in (404, 405), answer.text
            assert answer.headers["Content-Type"].startswith("application/json"), answer.text
            error = answer.json()["error"]
            assert set(error) == {"message", "type", "param", "code"}
            assert path in error["message"]
