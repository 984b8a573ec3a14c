"""``ModelClient``'s ``headers`` and ``verify``: sent and applied on both of its ways to the
endpoint, the kept connection (a plain answer) and the SDK's (a stream, the model list),
over real HTTP and HTTPS."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.agent.errors import ModelError
from hermes.agent.model.client import ModelClient

HEADERS = {"X-Gate": "token-1234567890"}


def test_headers_go_with_a_plain_answer_and_a_stream(fake_llm) -> None:
    client = ModelClient("k", fake_llm.url, "fake-model", headers=HEADERS, max_retries=0)
    try:
        assert client.complete([{"role": "user", "content": "a"}]).content == "echo: a"
        assert fake_llm.request_headers[-1]["x-gate"] == "token-1234567890"
        streamed: list[str] = []
        answer = client.complete(
            [{"role": "user", "content": "b"}], stream_callback=streamed.append
        )
        assert answer.content == "echo: b" and "".join(streamed) == "echo: b"
        assert fake_llm.request_headers[-1]["x-gate"] == "token-1234567890"
        assert client.fork().headers == HEADERS
    finally:
        client.close()


def test_verify_is_how_the_certificate_is_checked(https_endpoint: tuple[str, Path]) -> None:
    url, cert = https_endpoint
    for verify in (True, str(cert), False):
        client = ModelClient("k", url, "m", verify=verify, max_retries=0, timeout=20)
        try:
            if verify is True:  # a certificate no CA the system trusts signed
                with pytest.raises(ModelError):
                    client.complete([{"role": "user", "content": "hi"}])
                with pytest.raises(ModelError):
                    client.list_models()
                continue
            assert client.complete([{"role": "user", "content": "hi"}]).content == "over tls"
            assert client.list_models() == ["m"]
        finally:
            client.close()
