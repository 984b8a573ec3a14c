"""A failed call names its real cause, found by asking the endpoint: a URL missing
/v1, a server that is not an OpenAI API, a URL without a scheme, a model it does not
offer. Each is said after one request, never after five retries."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from hermes.agent.errors import EndpointMismatchError, ModelNotFoundError
from hermes.agent.model.client import ModelClient
from tests.fakes.llm_server import FakeLLMServer

USER = [{"role": "user", "content": "hello"}]


class _Site(http.server.BaseHTTPRequestHandler):
    """A server that is not hermes: an API under /v1 only (``api``), or a web page."""

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        server: _Server = self.server  # type: ignore[assignment]
        server.requests.append(self.path)
        if server.api and self.path == "/v1/models":
            status, body = 200, json.dumps({"object": "list", "data": [{"id": "m1"}]})
        elif server.api:
            status, body = 404, json.dumps({"detail": "Not Found"})  # FastAPI's 404
        else:
            status, body = 200, "<html><body>Welcome to nginx!</body></html>"
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    def __init__(self, api: bool) -> None:
        super().__init__(("127.0.0.1", 0), _Site)
        self.api = api
        self.requests: list[str] = []
        self.url = f"http://127.0.0.1:{self.server_port}"


@pytest.fixture(params=[True, False], ids=["api-under-v1", "web-page"])
def site(request: pytest.FixtureRequest) -> Iterator[_Server]:
    server = _Server(api=request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_wrong_base_url_is_named_not_blamed_on_the_model(site: _Server) -> None:
    sleeps: list[float] = []
    client = ModelClient("k", site.url, "m1", sleep=sleeps.append)
    with pytest.raises(EndpointMismatchError) as caught:
        client.complete(USER)
    client.close()
    said = str(caught.value)
    if site.api:
        assert f"which answers at {site.url}/v1" in said
        assert f"hermes config set model.base_url {site.url}/v1" in said
    else:
        assert "not as an OpenAI-compatible API" in said and "try again" not in said
    assert sleeps == [] and site.requests.count("/chat/completions") == 1  # no retries


def test_a_url_without_a_scheme_is_said_at_once() -> None:
    sleeps: list[float] = []
    client = ModelClient("k", "localhost:8080/v1", "m1", sleep=sleeps.append)
    with pytest.raises(EndpointMismatchError, match="write it as http://localhost:8080/v1"):
        client.complete(USER)
    client.close()
    assert sleeps == []


def test_a_missing_model_is_told_what_the_endpoint_offers(fake_llm: FakeLLMServer) -> None:
    fake_llm.strict_models = True
    fake_llm.models = ["fake-model", "fake-small"]
    client = ModelClient("k", fake_llm.url, "gpt-5", sleep=lambda _: None)
    with pytest.raises(ModelNotFoundError, match="it offers fake-model, fake-small"):
        client.complete(USER)
    client.close()
