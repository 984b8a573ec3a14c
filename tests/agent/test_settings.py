"""The agent's settings are typed and read once (issue 15): config.yaml's values, in
their types, with the agent's keywords winning."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hermes.agent.settings import AgentOptions
from hermes.config import load_config
from tests.agent.helpers import fake_agent


def _write(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")


def test_settings_come_from_the_config_in_their_types(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    _write(
        tmp_path,
        "model:\n  default: m1\n  request_timeout: 7\n  max_retries: 2\n  context_length: 9000\n"
        "compression:\n  threshold: 0.6\n  cooldown_seconds: 5\n  lease_ttl_seconds: 30\n"
        "agent:\n  max_iterations: 3\n  review_interval: 0\n",
    )
    options = AgentOptions.from_config(load_config())
    assert (options.model.name, options.model.request_timeout, options.model.max_retries) == (
        "m1",
        7.0,
        2,
    )
    assert isinstance(options.model.request_timeout, float)
    assert options.model.context_length == 9000
    assert (options.compression.threshold, options.compression.lease_ttl_seconds) == (0.6, 30.0)
    assert (options.max_iterations, options.review_interval) == (3, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_iterations = 5  # type: ignore[misc]


def test_the_agents_keywords_win_over_the_config(fake_llm, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    _write(tmp_path, "model:\n  default: from-config\nagent:\n  max_iterations: 3\n")
    agent = fake_agent(fake_llm, model="from-keyword", max_iterations=9)
    assert (agent.model, agent.settings.model.name) == ("from-keyword", "from-keyword")
    assert (agent.max_iterations, agent.settings.max_iterations) == (9, 9)
    assert agent.client.timeout == agent.settings.model.request_timeout
