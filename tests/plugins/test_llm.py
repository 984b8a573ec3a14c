"""``call_llm``: the host's model for plugins (0.19's agent.auxiliary_client.call_llm)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.plugins.llm import call_llm


def test_a_plugin_asks_the_host_model(
    hermes_home: Path, fake_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_BASE_URL", fake_llm.url)
    (hermes_home / "config.yaml").write_text(
        "model:\n  default: main-model\ncompression:\n  summary_model: summary-model\n"
    )
    answer = call_llm(
        "compression", messages=[{"role": "user", "content": "sum up"}], max_tokens=50
    )
    assert answer.choices[0].message.content == "echo: sum up"
    asked = fake_llm.requests[-1]
    assert asked["model"] == "summary-model" and asked["max_tokens"] == 50
    call_llm("vision", messages=[{"role": "user", "content": "x"}])
    assert fake_llm.requests[-1]["model"] == "main-model"
