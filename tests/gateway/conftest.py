"""Fixtures of the gateway suite: a config pointing at the fake model, a running gateway
(in-process, ``gateway``; or real subprocesses, ``run_gateway``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.harness import MODEL_KEY, GatewayThread, write_config
from tests.gateway.processes import Gateway
from tests.state.helpers import StoreSpec


@pytest.fixture
def model_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HERMES_API_KEY", MODEL_KEY)
    return MODEL_KEY


@pytest.fixture
def config_file(hermes_home: Path, fake_llm, model_key: str) -> Path:
    return write_config(hermes_home, fake_llm.url)


@pytest.fixture
def gateway(hermes_home: Path, config_file: Path) -> Iterator[GatewayThread]:
    """A started in-process gateway with the HTTP API on a free loopback port."""
    with GatewayThread(hermes_home) as running:
        yield running


@pytest.fixture
def client(gateway: GatewayThread):
    import openai

    with openai.OpenAI(
        base_url=gateway.url, api_key=gateway.api_key, max_retries=0, timeout=30
    ) as api:
        yield api


@pytest.fixture
def gateways_store(
    store: StoreSpec, hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> StoreSpec:
    """The store subprocess gateways use: their own default, HERMES_HOME/state.db, or
    the test's PostgreSQL schema (through the environment their config reads)."""
    if store.kind == "postgres":
        monkeypatch.setenv("HERMES_STATE_URL", str(store.url))
        return store
    return StoreSpec("sqlite", path=str(hermes_home / "state.db"))


@pytest.fixture
def configured_store(
    gateways_store: StoreSpec, hermes_home: Path, fake_llm, model_key: str
) -> StoreSpec:
    """``gateways_store``, with a config that points the gateways at the fake model."""
    write_config(hermes_home, fake_llm.url)
    return gateways_store


@pytest.fixture
def run_gateway(hermes_home: Path, model_key: str):
    """``run_gateway("--api-server", "127.0.0.1:PORT")`` -> a started subprocess ``Gateway``
    (``cwd=``, ``env=``: where it starts, what its environment adds); the ones still
    running are killed after the test."""
    started: list[Gateway] = []

    def start(*args: str, **options: Any) -> Gateway:
        started.append(Gateway(hermes_home, *args, **options))
        return started[-1]

    yield start
    for gateway in started:
        if gateway.proc.poll() is None:
            gateway.proc.kill()
            gateway.proc.wait(10)
