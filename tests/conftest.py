"""Shared test setup: every test gets its own HERMES_HOME and a clean environment."""

from __future__ import annotations

import pytest

# Fixtures every suite uses without importing them: the fake LLM server, the stores.
pytest_plugins = ("tests.fakes.fixtures", "tests.stores", "tests.hermes_agent_venv")


_LEAKY_ENV = (
    "HERMES_MODEL",
    "HERMES_BASE_URL",
    "HERMES_API_KEY",
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "HERMES_STATE_URL",
    "HERMES_GATEWAY_KEY",
    "HERMES_DEBUG",
)


@pytest.fixture(autouse=True)
def hermes_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """A private HERMES_HOME, so no test reads or writes the developer's real one."""
    home = tmp_path_factory.mktemp("hermes_home")
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in _LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)
    return home
