"""`hermes mcp list|test NAME` against a real MCP server (tests/fakes/mcp_server.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def _configure(home: Path) -> None:
    servers = {
        "fake": {
            "command": sys.executable,
            "args": ["-m", "tests.fakes.mcp_server", "stdio"],
            "cwd": str(REPO),
            "tools": {"exclude": ["die"]},
        },
        "broken": {"command": str(home / "missing"), "connect_timeout": 5},
        "wrong": {"args": ["no command"]},
    }
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": servers}), encoding="utf-8")


def test_list_and_test(hermes, hermes_home: Path) -> None:
    _configure(hermes_home)
    listed = hermes("mcp", "list")
    assert listed.returncode == 0
    assert re.search(r"\bfake\s+stdio\s+no\s", listed.stdout)  # started as configured
    assert listed.stderr.strip() == (
        "MCP server 'wrong' in config.yaml is left out: give exactly one of 'command' "
        "(stdio) or 'url' (HTTP)."
    )
    tested = hermes("mcp", "test", "fake")
    assert tested.returncode == 0, tested.stderr
    assert "mcp__fake__add: Add two whole numbers." in tested.stdout
    assert (
        "mcp__fake__die: Exit the server process in the middle of the call.  (left out"
        in tested.stdout
    )
    broken = hermes("mcp", "test", "broken")
    assert broken.returncode == 1 and "Traceback" not in broken.stderr
    assert (
        f"The MCP server 'broken' failed to start: its command {hermes_home / 'missing'} was "
        "not found; install it, or correct 'command' in config.yaml."
    ) in broken.stderr
    assert hermes("mcp", "test", "nope").returncode == 1


def test_no_servers(hermes) -> None:
    listed = hermes("mcp")
    assert listed.returncode == 0 and "No MCP servers" in listed.stdout


def test_a_server_that_cannot_start_says_its_exit_code_and_stderr(
    hermes, hermes_home: Path, mcp_venv, tmp_path: Path
) -> None:
    refuse = tmp_path / "refuse"
    refuse.touch()
    servers = {
        "tiny": {"command": str(mcp_venv.python), "args": [str(mcp_venv.server), "stdio"]},
        "refusing": {
            "command": str(mcp_venv.python),
            "args": [str(mcp_venv.server), "stdio"],
            "env": {"FAKE_MCP_REFUSE": str(refuse)},
        },
    }
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": servers}))
    tested = hermes("mcp", "test", "refusing")
    assert tested.returncode == 1 and "Traceback" not in tested.stderr
    log = hermes_home / "logs" / "mcp-refusing.log"
    assert tested.stderr.strip() == (
        "Error: The MCP server 'refusing' failed to start: it exited with code 4, its stderr "
        "ending: fake: reading settings | fake: DATABASE_URL is not set; cannot start "
        f"(full log: {log})."
    )
    assert "fake: DATABASE_URL is not set" in log.read_text()
    doctor = hermes("doctor", "--offline")
    assert doctor.returncode == 1
    lines = [line.strip() for line in doctor.stdout.splitlines()]
    assert "ok    mcp tiny: answered with 7 tools." in lines
    refused = next(line for line in lines if line.startswith("FAIL  mcp refusing:"))
    assert "it exited with code 4" in refused and refused.endswith("Fix: see `hermes mcp test`.")
