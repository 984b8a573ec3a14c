"""Compression works in a window of at most ``compression.max_window`` tokens (issue 55):
a 128k model's long conversation is compressed where a 64k model's is, so its requests
do not grow to half a window they never need; a 1M-token model's user raises the cap,
or lifts it with null."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.agent.summariser import Summariser
from hermes.config import load_config
from hermes.errors import ConfigError
from tests.agent.helpers import fake_agent


def _write(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")


def test_a_large_window_compresses_where_the_default_working_window_says(
    fake_llm, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    _write(tmp_path, "model:\n  context_length: 131072\n")
    compressor = fake_agent(fake_llm).window.compressor

    assert compressor.context_length == 131_072  # the model's window is still known
    # A share of 64k, not of 128k.
    assert compressor.threshold_tokens == int(compressor.threshold * 65_536) < 32_768
    assert compressor.tail_budget == int(0.05 * 65_536)
    assert compressor.should_compress(prompt_tokens=40_000)


def test_a_1m_token_models_user_raises_or_lifts_the_cap(
    fake_llm, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    _write(tmp_path, "model:\n  context_length: 1000000\ncompression:\n  max_window: 400000\n")
    compressor = fake_agent(fake_llm).window.compressor
    assert compressor.threshold_tokens == int(compressor.threshold * 400_000)

    _write(tmp_path, "model:\n  context_length: 1000000\ncompression:\n  max_window: null\n")
    compressor = fake_agent(fake_llm).window.compressor
    assert compressor.threshold_tokens == int(compressor.threshold * 1_000_000) > 400_000
    assert not compressor.should_compress(prompt_tokens=400_000)


def test_a_smaller_window_is_not_changed_by_the_cap() -> None:
    compressor = Summariser(None, model="m", context_length=32_768, max_window=65_536)
    assert (compressor.working_window, compressor.threshold_tokens) == (32_768, 16_384)
    assert compressor.summary_limit == int(0.125 * 32_768)


def test_a_cap_that_is_not_a_positive_number_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    _write(tmp_path, "compression:\n  max_window: 0\n")
    with pytest.raises(ConfigError, match="max_window"):
        load_config()
