"""Fixtures of the compat suite: a real Hermes Agent 0.19 to write stores with."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def hermes_agent_python(hermes_agent_venv_python: Path) -> Path:
    """The python of the shared Hermes Agent 0.19 venv (tests/hermes_agent_venv.py)."""
    return hermes_agent_venv_python
