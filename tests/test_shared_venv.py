"""The venvs the suite shares (tests/shared_venv.py: the MCP SDK's, Hermes Agent 0.19's)
build on a machine that has none, and a rebuild never pulls a venv from under a run
that uses it (issue 56: ``make test`` was red on a fresh machine)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.shared_venv import shared_venv

PROBE = "import json"


def run_in(venv: Path) -> str:
    probe = [str(venv / "bin" / "python"), "-c", "import sys; print(sys.prefix)"]
    return subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()


def test_an_empty_location_gets_a_venv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    assert shared_venv(venv, [], PROBE) == venv
    assert run_in(venv)


def test_a_working_venv_is_kept_as_it_is(tmp_path: Path) -> None:
    venv = shared_venv(tmp_path / "venv", [], PROBE)
    (venv / "kept").touch()
    shared_venv(venv, [], PROBE)
    assert (venv / "kept").exists()


def test_a_broken_venv_is_moved_aside_not_deleted(tmp_path: Path) -> None:
    """A broken venv is renamed aside (a run may still hold its files) and a new one
    takes its name."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)  # no python: a build that never finished
    (venv / "held-by-a-run").touch()

    shared_venv(venv, [], PROBE)

    assert run_in(venv)
    assert not (venv / "held-by-a-run").exists()
    (aside,) = tmp_path.glob("venv.old-*")
    assert (aside / "held-by-a-run").exists()
