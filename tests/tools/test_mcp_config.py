"""``mcp_servers:`` read as Hermes Agent writes it: transports, placeholders, bad entries
left out in one sentence, and the servers' keys registered as secrets."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hermes.config import load_config
from hermes.redaction import redact
from hermes.tools.mcp.config import read_servers
from hermes.tools.mcp.tools import tool_name


def servers(home: Path, entries: dict) -> tuple[list, list[str]]:
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": entries}))
    return read_servers(load_config(home / "config.yaml"), home)


def test_both_transports_placeholders_and_secrets(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_TOKEN_FOR_TEST", "ghtoken-0123456789")
    (home / ".env").write_text("DOCS_KEY=docs-key-abcdef123\n")
    specs, problems = servers(
        home,
        {
            "gh": {"command": "npx", "args": ["-y", "gh"], "env": {"GITHUB_TOKEN": "${GH_TOKEN_FOR_TEST}"}},
            "docs": {"url": "https://d.example/mcp", "headers": {"X-Api-Key": "${env:DOCS_KEY}"}, "timeout": 5},
            "off": {"command": "x", "enabled": False},
        },
    )  # fmt: skip
    assert problems == []
    docs, gh = specs
    assert (docs.transport, docs.headers, docs.timeout) == (
        "http",
        (("X-Api-Key", "docs-key-abcdef123"),),
        5.0,
    )
    assert (gh.transport, gh.args, gh.env) == (
        "stdio",
        ("-y", "gh"),
        (("GITHUB_TOKEN", "ghtoken-0123456789"),),
    )
    assert redact("a ghtoken-0123456789 and docs-key-abcdef123") == "a [redacted] and [redacted]"


def test_a_bad_entry_is_one_sentence_and_the_rest_still_work(home: Path) -> None:
    specs, problems = servers(
        home,
        {"both": {"command": "x", "url": "http://y"}, "slow": {"command": "x", "timeout": 0},
         "boxed": {"command": "x", "sandbox": "no"}, "inside": {"command": "x", "cwd": str(home), "sandbox": True},
         "ok": {"command": "x"}},
    )  # fmt: skip
    assert [s.name for s in specs] == ["ok"]
    assert problems == [
        "MCP server 'both' in config.yaml is left out: give exactly one of 'command' (stdio) or 'url' (HTTP).",
        "MCP server 'boxed' in config.yaml is left out: 'sandbox' must be true or false, not 'no'.",
        f"MCP server 'inside' in config.yaml is left out: its cwd {home} is inside hermes's home, which sandboxed servers cannot see; choose another cwd, or give the server 'sandbox: false'.",
        "MCP server 'slow' in config.yaml is left out: 'timeout' must be a number of seconds above 0, not 0.",
    ]  # fmt: skip


def test_tool_names_are_hermes_agents() -> None:
    assert tool_name("my-server", "get.page") == "mcp__my_server__get_page"
