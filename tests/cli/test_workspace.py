"""A conversation remembers the directory it started in: agent-deck finds the latest
one of a project with `hermes sessions list --source cli --limit 1 --workspace DIR`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.helpers import Env, hermes_command


def run_in(directory: Path, env: Env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*hermes_command(), *args], cwd=directory, env=env.vars,
                          input="", capture_output=True, text=True, timeout=60)  # fmt: skip


def test_the_latest_conversation_started_in_a_directory_is_found(cli_env, tmp_path) -> None:
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    assert run_in(project, cli_env, "chat", "-q", "in the project").returncode == 0
    assert run_in(other, cli_env, "chat", "-q", "somewhere else").returncode == 0

    listed = run_in(
        tmp_path, cli_env,
        "sessions", "list", "--source", "cli", "--limit", "1", "--workspace", str(project),
        "--json",
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    shown = run_in(tmp_path, cli_env, "sessions", "show", row["conversation_id"])
    assert "in the project" in shown.stdout
    assert "somewhere else" not in shown.stdout
