"""A real Hermes Agent 0.19 to check hermes against, as a fixture every suite can use.

``hermes_agent_venv_python`` is the python of a throwaway venv holding
``hermes-agent==0.19.0`` (cached under /tmp by version, shared with the import tests,
built when missing beside the one other runs may be using: tests/shared_venv.py).
The tests using it skip only when pip cannot get the package, and
HERMES_REQUIRE_HERMES_AGENT=1 (set by .ci/run) turns that skip into a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.shared_venv import VenvBuildError, shared_venv

VERSION = "0.19.0"


@pytest.fixture(scope="session")
def hermes_agent_venv_python() -> Path:
    venv = Path(f"/tmp/hermes-agent-{VERSION}-venv")
    try:
        shared_venv(venv, [f"hermes-agent=={VERSION}"], probe="import hermes_state, run_agent")
    except VenvBuildError as why:
        if os.environ.get("HERMES_REQUIRE_HERMES_AGENT") == "1":
            pytest.fail(str(why))
        pytest.skip(str(why))
    return venv / "bin" / "python"
