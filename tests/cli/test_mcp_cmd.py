"""`hermes mcp list|test NAME` against a real MCP server (tests/fakes/mcp_server.py)."""

from __future__ import annotations

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
    assert "fake" in listed.stdout and "stdio" in listed.stdout
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
    assert "The MCP server 'broken' failed to start" in broken.stderr
    assert hermes("mcp", "test", "nope").returncode == 1


def test_no_servers(hermes) -> None:
    listed = hermes("mcp")
    assert listed.returncode == 0 and "No MCP servers" in listed.stdout
