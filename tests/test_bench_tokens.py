"""The token benchmark at a tiny size: its figures are there and sane, not its speed.

Twelve turns whose tool outputs are large enough (24 KB files) that both runtimes
compress within them at the benchmark's 64k window (Hermes Agent 0.19 refuses a smaller
window, and at 64k it compresses only at 85 % of it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_tokens

TINY = ["--turns", "12", "--file-kb", "24"]


def _sane(figures: dict) -> None:
    assert figures["main_tokens"] > 0 and figures["main_requests"] >= 12
    assert 0 < figures["uncached_tokens"] <= figures["main_tokens"]
    assert 0 < figures["largest"] <= 65_536
    assert figures["compressions"] >= 1 and figures["summary_tokens"] > 0
    assert figures["failed_turns"] == 0
    assert len(figures["recall"]) == figures["compressions"]
    for point in figures["recall"]:
        assert point["planted"] > 0 and 0 <= point["share"] <= 100


def test_hermes_column_has_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    bench_tokens.main([*TINY, "--json", "--hermes-agent-python", "/nonexistent/python"])

    result = json.loads(capsys.readouterr().out)
    assert result["turns"] == 12 and result["window"] == 65_536
    _sane(result["runtimes"]["hermes"])
    # The conversation's own rotations, as the runtime counts them.
    assert result["runtimes"]["hermes"]["runtime_compressions"] >= 1
    assert "hermes-agent 0.19" not in result["runtimes"]
    assert "no python at /nonexistent/python" in result["skipped"]["hermes-agent 0.19"]


def test_hermes_agent_column_beside_hermes(hermes_agent_venv_python: Path) -> None:
    comparison = bench_tokens.compare(
        12, hermes_agent_python=hermes_agent_venv_python, file_bytes=24_000
    )

    assert comparison.skipped == {}
    for name in (bench_tokens.HERMES, bench_tokens.HERMES_AGENT):
        _sane(comparison.columns[name].as_dict())
    ratios = bench_tokens.ratios(comparison)
    assert all(ratios[key] is not None and ratios[key] > 0 for key in ("main_tokens", "largest"))
    table = bench_tokens.report(comparison)
    for label, _ in bench_tokens.ROWS:
        assert label in table, label
    assert "hermes/0.19" in table
    assert "recall % after each compression, hermes-agent 0.19 (verbatim only)" in table
