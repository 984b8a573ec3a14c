"""Calls to a running gateway's HTTP API, as a client makes them."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import openai

from tests.gateway.harness import HEADER

__all__ = ["HEADER", "OPERATOR_WORDS", "UPSTREAM_SENTENCE", "ask", "assert_caller_error", "call"]


def ask(client: openai.OpenAI, text: str, session: str | None = None):
    headers = {HEADER: session} if session else {}
    raw = client.chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": text}], extra_headers=headers
    )
    return raw.parse().choices[0].message.content, raw.headers[HEADER]


def call(gateway, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    """One HTTP request to the gateway's API server; (status, decoded JSON body)."""
    base = gateway.runner.adapters["api_server"].url
    headers = {"Authorization": f"Bearer {gateway.api_key}", **kwargs.pop("headers", {})}

    async def run() -> tuple[int, Any]:
        async with (
            aiohttp.ClientSession(headers=headers) as http,
            http.request(method, base + path, **kwargs) as response,
        ):
            return response.status, await response.json()

    return asyncio.run(run())


UPSTREAM_SENTENCE = "The model endpoint behind this gateway failed"
OPERATOR_WORDS = ("HERMES_API_KEY", "hermes setup", "hermes doctor", "http://")


def assert_caller_error(status: int, body: dict) -> None:
    """A 502 in OpenAI's error shape that says the model endpoint failed, no operator advice."""
    assert status == 502
    error = body["error"]
    assert error["type"] == "upstream_error" and error["code"] == "model_error"
    assert error["message"].startswith(UPSTREAM_SENTENCE)
    assert not any(word in error["message"] for word in OPERATOR_WORDS)
