"""A real Hermes Agent 0.19 to check hermes against, as a fixture every suite can use.

``hermes_agent_venv_python`` is the python of a throwaway venv holding
``hermes-agent==0.19.0`` (cached under /tmp by version, shared with the import tests and
built by one test process at a time).
The tests using it skip only when pip cannot get the package, and
HERMES_REQUIRE_HERMES_AGENT=1 (set by .ci/run) turns that skip into a failure.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

VERSION = "0.19.0"


@pytest.fixture(scope="session")
def hermes_agent_venv_python() -> Path:
    venv = Path(f"/tmp/hermes-agent-{VERSION}-venv")
    # One builder at a time: test processes of one run (pytest -n) share this venv.
    with open(f"{venv}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _built(venv)


def _built(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not (venv / ".ok").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"hermes-agent=={VERSION}"],
            capture_output=True, text=True,
        )  # fmt: skip
        if pip.returncode != 0:
            why = f"pip cannot install hermes-agent=={VERSION}: {pip.stderr[-500:]}"
            if os.environ.get("HERMES_REQUIRE_HERMES_AGENT") == "1":
                pytest.fail(why)
            pytest.skip(why)
        (venv / ".ok").touch()
    return python
