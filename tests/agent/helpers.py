"""One way to build an agent against the fake model, shared by the agent tests."""

from __future__ import annotations

from typing import Any

from hermes.agent import AIAgent
from hermes.config import load_config
from tests.fakes import llm_server as fake


def fake_agent(server: fake.FakeLLMServer, db: Any = None, **overrides: Any) -> AIAgent:
    """An AIAgent on ``server`` and ``db``, with config read from the test's HERMES_HOME."""
    options: dict[str, Any] = {
        "api_key": "k",
        "base_url": server.url,
        "model": fake.DEFAULT_MODEL,
        "quiet_mode": True,
        "session_db": db,
        "skip_context_files": True,
        "config": load_config(),
    }
    options.update(overrides)
    return AIAgent(**options)
