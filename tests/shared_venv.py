"""A virtualenv the test runs of one machine share, built when missing, never pulled
from under a run that uses it.

``shared_venv(path, requirements, probe)`` answers ``path`` once ``probe`` imports in
it. A missing or broken venv is built beside ``path`` (``path.name`` plus a random
suffix) and renamed to ``path``; a broken one there is renamed aside, not deleted (a run
may still hold its files), so no run ever sees a half-built venv or loses one it uses.
Builders take turns on ``path.lock`` (the workers of ``pytest -n`` and parallel runs
alike). Run the venv's programs as ``bin/python -m ...``: the scripts pip wrote name
the folder they were built in.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path


class VenvBuildError(RuntimeError):
    """pip could not install the requirements (the message ends with its stderr)."""


def shared_venv(path: Path, requirements: list[str], probe: str) -> Path:
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not works(path, probe):
            _swap_in(path, _build_beside(path, requirements, probe))
    return path


def works(path: Path, probe: str) -> bool:
    """Whether ``path``'s python runs ``probe`` (False when there is no venv at all)."""
    python = path / "bin" / "python"
    if not python.exists():
        return False
    return subprocess.run([str(python), "-c", probe], capture_output=True).returncode == 0


def _build_beside(path: Path, requirements: list[str], probe: str) -> Path:
    build = Path(tempfile.mkdtemp(prefix=f"{path.name}.", dir=path.parent))
    build.chmod(0o755)  # as a venv made in place (mkdtemp makes it private)
    try:
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", "--clear", str(build)], check=True)
        if requirements:
            pip = [str(build / "bin" / "python"), "-m", "pip", "install", "-q", *requirements]
            done = subprocess.run(pip, capture_output=True, text=True)
            if done.returncode != 0:
                raise VenvBuildError(
                    f"pip cannot install {' '.join(requirements)}: {done.stderr[-500:]}"
                )
        if not works(build, probe):
            raise VenvBuildError(f"the venv built for {path} cannot run {probe!r}")
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)  # our own, never used by anyone
        raise
    return build


def _swap_in(path: Path, build: Path) -> None:
    if path.exists() or path.is_symlink():
        path.rename(path.with_name(f"{path.name}.old-{uuid.uuid4().hex[:8]}"))
    build.rename(path)
