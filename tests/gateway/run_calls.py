"""A client of the runs API over plain aiohttp: start a run, read its events (SSE)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from tests.gateway.harness import wait_for


def base_of(gateway: Any) -> str:
    """The API server's root URL: a GatewayThread, or a URL ending in /v1."""
    if isinstance(gateway, str):
        return gateway.removesuffix("/v1")
    return gateway.runner.adapters["api_server"].url


def request(
    gateway: Any, key: str, method: str, path: str, **kwargs: Any
) -> tuple[int, Any, dict[str, str]]:
    """(status, JSON body, headers) of one request."""
    headers = {"Authorization": f"Bearer {key}", **kwargs.pop("headers", {})}

    async def run() -> tuple[int, Any, dict[str, str]]:
        async with (
            aiohttp.ClientSession(headers=headers) as http,
            http.request(method, base_of(gateway) + path, **kwargs) as response,
        ):
            return response.status, await response.json(), dict(response.headers)

    return asyncio.run(run())


def events(
    gateway: Any, key: str, run_id: str, *, last_id: int | None = None, take: int | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """The run's events as (id, payload) until the stream ends, or the first ``take``
    of them (then the connection is dropped, as a client that goes away)."""
    headers = {"Authorization": f"Bearer {key}"}
    if last_id is not None:
        headers["Last-Event-ID"] = str(last_id)

    async def run() -> list[tuple[int, dict[str, Any]]]:
        got: list[tuple[int, dict[str, Any]]] = []
        timeout = aiohttp.ClientTimeout(total=60)
        async with (
            aiohttp.ClientSession(headers=headers, timeout=timeout) as http,
            http.get(f"{base_of(gateway)}/v1/runs/{run_id}/events") as response,
        ):
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/event-stream")
            event_id = None
            async for raw in response.content:
                line = raw.decode().rstrip("\n")
                if line.startswith("id: "):
                    event_id = int(line[4:])
                elif line.startswith("data: "):
                    assert event_id is not None, "every event has an id"
                    got.append((event_id, json.loads(line[6:])))
                    event_id = None
                    if take is not None and len(got) >= take:
                        break
        return got

    return asyncio.run(run())


def wait_status(gateway: Any, key: str, run_id: str, *wanted: str, timeout: float = 30) -> dict:
    def look() -> dict | None:
        status, run, _ = request(gateway, key, "GET", f"/v1/runs/{run_id}")
        assert status == 200
        return run if run["status"] in wanted else None

    return wait_for(look, timeout=timeout, interval=0.05)
