"""The suite's ``xdist_group`` marks hold: tests in one group run on one worker.

The two short soaks and the tests that count processes machine-wide rely on it
(``tests/test_soak.py``, ``tests/tools/test_sandbox_*``). With pytest 9.2 and
pytest-xdist 3.8 ``--dist loadgroup`` silently ignored the groups: the soaks ran side
by side and counted each other's processes. This runs a small suite the way
``make test`` does (the project's addopts, two workers) and checks where each ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GROUPED = """
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("name", ["a", "b", "c", "d"])
def test_member(name):
    out = Path(os.environ["WHERE"]) / name
    out.write_text(os.environ.get("PYTEST_XDIST_WORKER", "none"))
"""
LONE = """
import time


def test_lone_1():
    time.sleep(0.3)


def test_lone_2():
    time.sleep(0.3)
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    suite, where = tmp_path / "suite", tmp_path / "where"
    suite.mkdir()
    where.mkdir()
    (suite / "test_grouped.py").write_text(GROUPED)
    (suite / "test_lone.py").write_text(LONE)
    root = Path(__file__).resolve().parents[1]
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-q", "-c", str(root / "pyproject.toml")]
        + ["--rootdir", str(suite), str(suite)],
        env={**_env(), "WHERE": str(where)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    workers = {path.name: path.read_text() for path in where.iterdir()}
    assert sorted(workers) == ["a", "b", "c", "d"]
    assert len(set(workers.values())) == 1, workers


def _env() -> dict[str, str]:
    # Not this worker's own xdist variables: the inner run has workers of its own.
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
