"""Without a PostgreSQL server, the PostgreSQL half of a parametrised test skips with one
reason that says how to run it; under CI (``CI=true``) it fails instead, since CI must
test both backends. Checked by running pytest on a tiny test file in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TINY = """
def test_a_store_opens(store):
    assert store.kind in ("sqlite", "postgres")
"""


def run_tiny(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_tiny.py").write_text(TINY)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    base = {k: v for k, v in os.environ.items() if k not in ("HERMES_TEST_PG_URL", "CI")}
    command = [sys.executable, "-m", "pytest", "-p", "tests.stores", "-rsE",
               "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:langsmith_plugin", "-c", str(tmp_path / "pytest.ini"),
               str(tmp_path / "test_tiny.py")]  # fmt: skip
    return subprocess.run(
        command, cwd=ROOT, env={**base, "PYTHONPATH": str(ROOT), **env},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_without_postgres_the_postgres_half_skips_with_the_reason(tmp_path: Path) -> None:
    done = run_tiny(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 1 skipped" in done.stdout, done.stdout
    assert "PostgreSQL not available: run `make test` (it starts one)" in done.stdout
    assert "HERMES_TEST_PG_URL" in done.stdout


def test_under_ci_without_postgres_the_postgres_half_fails(tmp_path: Path) -> None:
    done = run_tiny(tmp_path, CI="true")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed, 1 error" in done.stdout, done.stdout  # fails in the fixture: an error
    assert "PostgreSQL not available" in done.stdout and "CI runs the PostgreSQL" in done.stdout
