"""`hermes import hermes-agent` from another home brings its skills and MCP servers;
ours win on a name clash, and a second run brings nothing twice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.compat.hermes_agent import build_store

HERMES = str(Path(sys.executable).parent / "hermes")


def hermes(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([HERMES, *args], capture_output=True, text=True)


def skill(root: Path, rel: str, name: str, description: str) -> None:
    folder = root / rel
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\nSteps.\n", encoding="utf-8"
    )


@pytest.mark.hermes_agent
def test_skills_and_mcp_servers_come_over(hermes_agent_python, tmp_path, hermes_home) -> None:
    their = tmp_path / "ha"
    build_store(hermes_agent_python, their / "state.db")
    skill(their / "skills", "research/arxiv", "arxiv", "Search papers.")
    skill(their / "skills", "deploy", "deploy", "Their deploy.")
    (their / "skills" / "research" / "arxiv" / "scripts").mkdir()
    (their / "skills" / "research" / "arxiv" / "scripts" / "fetch.py").write_text("print(1)\n")
    servers = {
        "github": {"command": "npx", "args": ["-y", "gh-mcp"], "env": {"GH": "${GITHUB_TOKEN}"}},
        "mine": {"url": "http://theirs.example/mcp"},
    }
    (their / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": servers}))
    skill(hermes_home / "skills", "deploy", "deploy", "Our deploy.")
    (hermes_home / "config.yaml").write_text(
        yaml.safe_dump({"mcp_servers": {"mine": {"url": "http://ours.example/mcp"}}})
    )

    dry = hermes("import", "hermes-agent", "--dry-run", str(their / "state.db"))
    assert dry.returncode == 0, dry.stderr
    assert "Would bring 1 skill(s): arxiv." in dry.stdout
    assert not (hermes_home / "skills" / "research").exists()

    done = hermes("import", "hermes-agent", str(their / "state.db"))
    assert done.returncode == 0, done.stderr
    assert "Brought 1 skill(s): arxiv." in done.stdout
    assert "Kept our own skill(s) of the same name: deploy." in done.stdout
    assert "Brought 1 MCP server(s): github." in done.stdout
    assert "Kept our own MCP server(s) of the same name: mine." in done.stdout
    assert "GITHUB_TOKEN" in done.stdout
    assert (hermes_home / "skills" / "research" / "arxiv" / "scripts" / "fetch.py").is_file()
    assert "Our deploy." in (hermes_home / "skills" / "deploy" / "SKILL.md").read_text()
    ours = yaml.safe_load((hermes_home / "config.yaml").read_text())["mcp_servers"]
    assert ours == {"mine": {"url": "http://ours.example/mcp"}, "github": servers["github"]}

    listed = hermes("skills", "list", "--json")
    arxiv = {"name": "arxiv", "description": "Search papers.", "category": "research"}
    assert arxiv | {"owner": "operator"} in yaml.safe_load(listed.stdout)
    again = hermes("import", "hermes-agent", str(their / "state.db"))
    assert "Brought" not in again.stdout, again.stdout
