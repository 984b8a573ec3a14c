"""Issue 16, finding 9: an existing loose HERMES_HOME and .env are tightened on start."""

from __future__ import annotations

import stat
from pathlib import Path

from hermes.config import ensure_home


def test_loose_home_and_env_file_are_tightened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    env = home / ".env"
    env.write_text("HERMES_API_KEY=sk-x\n", encoding="utf-8")
    env.chmod(0o644)
    assert ensure_home(home) == home
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
