"""A gateway running in-process on its own event loop thread, for tests and benchmarks.

The test thread talks to it like any client would (the real ``openai`` package over
HTTP) or hands coroutines to its loop with ``call``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any

import yaml

from hermes.config import hermes_home, load_config
from hermes.gateway.http.key import read_api_key
from hermes.gateway.runner import GatewayRunner
from hermes.gateway.settings import ApiServerSettings, platform_settings
from hermes.state import SessionDB

MODEL_KEY = "sk-test-model-key-0123456789"
HEADER = "X-Hermes-Session-Id"  # the API's session id, in requests and replies


def write_config(home: Path, llm_url: str, **sections: Mapping[str, Any]) -> Path:
    """A config.yaml in ``home`` pointing the model at the fake server."""
    config: dict[str, Any] = {
        "model": {"default": "fake-model", "base_url": llm_url, "max_retries": 0},
        "agent": {"review_interval": 0},
    }
    for section, values in sections.items():
        config.setdefault(section, {}).update(values)
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def workspace_of(home: Path) -> Path:
    """The folder the gateway's agents work in: beside HERMES_HOME (which the sandbox
    hides), one per home."""
    return home.parent / f"{home.name}-workspace"


class GatewayThread:
    """``GatewayRunner`` on a private loop in a daemon thread."""

    def __init__(
        self,
        home: Path,
        *,
        api: ApiServerSettings | None = ApiServerSettings(port=0),
        platforms: Mapping[str, Mapping[str, Any]] | None = None,
        make_agent: Any = None,
        adapters: Mapping[str, Any] | None = None,
        db: SessionDB | None = None,
    ) -> None:
        self.home = home
        workspace = workspace_of(home)
        workspace.mkdir(exist_ok=True)
        self.config = load_config(home / "config.yaml")
        self.db = db or SessionDB(db_path=home / "state.db")  # closed by ``stop``
        settings = {
            name: platform_settings(name, options) for name, options in (platforms or {}).items()
        }
        self.runner = GatewayRunner(
            self.config,
            db=self.db,
            platforms=settings,
            api=api,
            make_agent=make_agent,
            # The agents work beside HERMES_HOME, never in it: the sandbox hides the home.
            agent_options={"skip_context_files": True, "skip_memory": True, "cwd": workspace},
            home=home,
            adapters=adapters,
        )
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="gateway-loop", daemon=True
        )
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, Any], timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def start(self) -> GatewayThread:
        self.call(self.runner.start())
        return self

    @property
    def url(self) -> str:
        return self.runner.adapters["api_server"].url + "/v1"

    @property
    def api_key(self) -> str:
        """The bearer key the API server uses (configured, or generated into HERMES_HOME)."""
        return self.runner.adapters["api_server"].api.key

    def stop(self, grace: float = 10.0) -> None:
        try:
            if not self.runner.closing:
                self.call(self.runner.stop(grace=grace))
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
            self.loop.close()
            self.db.close()

    def __enter__(self) -> GatewayThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stored_api_key() -> str:
    """The key a keyless gateway generated into this test's HERMES_HOME."""
    key = read_api_key(hermes_home())
    assert key, "no gateway has generated an API key in HERMES_HOME yet"
    return key


def wait_for(predicate: Any, timeout: float = 20.0, interval: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {predicate}")
        time.sleep(interval)


async def until(predicate: Any, looks: int = 2000, interval: float = 0.005) -> Any:
    """``wait_for`` on an event loop: look at ``predicate`` (sync, or returning an
    awaitable) every ``interval`` seconds until it is truthy; fail after ``looks``."""
    import asyncio
    import inspect

    for _ in range(looks):
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(interval)
    raise AssertionError(f"gave up after {looks} looks waiting for {predicate}")
