"""Shared fixtures: a private HERMES_HOME, a working directory, a context and a registry.

Every test gets its own HERMES_HOME (set in the environment, as the real code reads
it) and any background process a test leaves running is killed afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.config import load_config
from hermes.tools import CompletionEvent, EventBus, ToolContext, ToolRegistry, default_registry
from hermes.tools.processes import background
from hermes.tools.processes.store import ProcessStore
from tests.tools.helpers import write_config


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "hermes-home"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("HERMES_HOME", str(path))
    yield path
    for record in ProcessStore(path).all():
        if not record.finished:
            background.kill(path, record.id, grace=0.5)


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own (``~`` in commands and paths points here)."""
    path = tmp_path / "user"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def bus() -> EventBus:
    """The test's event bus: the contexts of ``make_ctx`` report their processes here."""
    return EventBus()


@pytest.fixture
def sandbox_setting() -> str:
    """``terminal.sandbox`` of the contexts of ``make_ctx``; a module overrides it to test
    the no-sandbox path (``off``)."""
    return "auto"


@pytest.fixture
def make_ctx(
    home: Path, workdir: Path, bus: EventBus, sandbox_setting: str
) -> Callable[..., ToolContext]:
    def make(config: dict[str, Any] | None = None, **fields: Any) -> ToolContext:
        write_config(home, {"terminal.sandbox": sandbox_setting, **(config or {})})
        fields.setdefault("conversation_id", "conv-root")
        fields.setdefault("session_id", "conv-root-seg-2")
        fields.setdefault("event_bus", bus)
        return ToolContext(
            hermes_home=home, cwd=workdir, config=load_config(home / "config.yaml"), **fields
        )

    return make


@pytest.fixture
def ctx(make_ctx: Callable[..., ToolContext]) -> ToolContext:
    return make_ctx()


@pytest.fixture
def registry() -> ToolRegistry:
    return default_registry()


@pytest.fixture
def call(registry: ToolRegistry, ctx: ToolContext) -> Callable[..., str]:
    """``call("terminal", command="ls")``: dispatch through the registry like the agent does."""

    def run(name: str, _ctx: ToolContext | None = None, **args: Any) -> str:
        return registry.dispatch(name, json.dumps(args), _ctx or ctx)

    return run


@pytest.fixture
def received(bus: EventBus) -> list[CompletionEvent]:
    """Completion events delivered to a subscriber of the test's bus."""
    events: list[CompletionEvent] = []
    bus.subscribe(events.append)
    return events
