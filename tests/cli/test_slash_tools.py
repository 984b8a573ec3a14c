"""The chat's commands for tools, skills and the install, in the terminal: /tools,
/skills, /reload-mcp, /platforms, /debug, /update, /version, driven through ``dispatch``
with a real agent on a real store and the fake model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import hermes.gateway.platforms_command  # noqa: F401 - registers /platforms, as the chat does
from hermes import __version__
from hermes.agent import commands as chat_commands
from hermes.config import load_config
from hermes.gateway.state_file import GatewayStateFile
from hermes.install import this_install
from hermes.state import SessionDB
from hermes.tools.mcp.hub import hub
from tests.cli.helpers import FAKE_MODEL

REPO = Path(__file__).resolve().parents[2]
SSH_CANARY = "OPENSSH-KEY-CANARY-5b1e"
API_KEY = "sk-debugreportcanary0123456789abcdef"


@pytest.fixture
def owner_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's home, outside /tmp: an SSH key, and the project the chat runs in."""
    home = Path(tempfile.mkdtemp(prefix="hermes-slash-tools-", dir="/var/tmp"))
    (home / ".ssh").mkdir(mode=0o700)
    (home / ".ssh" / "id_ed25519").write_text(f"-----BEGIN {SSH_CANARY}-----\n", "utf-8")
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def db(hermes_home: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=hermes_home / "state.db") as store:
        yield store


@pytest.fixture
def make_agent(db: SessionDB, fake_llm, owner_home: Path):
    from hermes.agent import AIAgent

    made = []

    def make() -> AIAgent:
        agent = AIAgent(base_url=fake_llm.url, model=FAKE_MODEL, session_db=db, source="cli",
                        cwd=owner_home / "project", skip_context_files=True,
                        skip_memory=True)  # fmt: skip
        made.append(agent)
        return agent

    yield make
    for agent in made:
        agent.client.close()


def run(agent, line: str) -> chat_commands.Reply:
    return chat_commands.dispatch(agent, line)


def offered(fake_llm) -> set[str]:
    return {t["function"]["name"] for t in fake_llm.requests[-1].get("tools") or []}


def saved_toolsets(hermes_home: Path) -> object:
    config = yaml.safe_load((hermes_home / "config.yaml").read_text(encoding="utf-8"))
    return config["agent"]["toolsets"]


# -- /tools ----------------------------------------------------------------------------


def test_tools_disable_and_enable_change_the_next_turn_and_the_profile(
    make_agent, fake_llm, hermes_home: Path
):
    agent = make_agent()
    agent.run("hello")
    assert {"terminal", "read_file", "recall"} <= offered(fake_llm)

    reply = run(agent, "/tools disable terminal write_file")
    assert reply.ok, reply.text
    assert "Disabled terminal, write_file" in reply.text
    entries = saved_toolsets(hermes_home)
    assert "terminal" not in entries and "read_file" in entries  # the files toolset split
    agent.run("again")
    assert not {"terminal", "process", "write_file"} & offered(fake_llm)
    assert {"read_file", "patch", "recall"} <= offered(fake_llm)

    listing = run(agent, "/tools list")
    assert listing.data["terminal"] == "disabled" and listing.data["files"] == "partly"
    assert listing.data["memory"] == "enabled"
    # recall is in the toolset session_search, whose tool session_search has its name:
    # listing that tool would bring recall back, so it is said, and nothing changes.
    tied = run(agent, "/tools disable recall")
    assert not tied.ok and "disable session_search" in tied.text
    assert saved_toolsets(hermes_home) == entries

    # The profile keeps it: a new chat offers the same.
    assert "terminal" not in make_agent().tool_names()

    assert run(agent, "/tools enable terminal").ok
    agent.run("and now")
    assert "terminal" in offered(fake_llm) and "write_file" not in offered(fake_llm)


def test_tools_refuses_unknown_names_and_says_how_to_use_it(make_agent, hermes_home: Path):
    agent = make_agent()
    reply = run(agent, "/tools disable termnal")
    assert not reply.ok and "Did you mean terminal?" in reply.text
    assert "nothing was changed" in reply.text
    assert not (hermes_home / "config.yaml").exists()  # nothing stored harmed
    usage = run(agent, "/tools enable")
    assert not usage.ok and usage.text.startswith("Usage: /tools enable NAME")
    assert "terminal" in agent.tool_names()
    plain = run(agent, "/tools")
    assert plain.ok and "terminal" in plain.data["tools"]


def test_tools_turns_off_an_mcp_server_that_is_down_by_either_name(make_agent, hermes_home: Path):
    config = {"mcp_servers": {"gone": {"command": "/nonexistent/mcp-server"}}}
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    agent = make_agent()
    try:
        assert run(agent, "/tools list").data["mcp-gone"] == "enabled"  # down, yet chosen
        assert run(agent, "/tools disable gone").ok  # the server's own name
        entries = saved_toolsets(hermes_home)
        assert "mcp-gone" not in entries and "gone" not in entries and "terminal" in entries
        assert run(agent, "/tools list").data["mcp-gone"] == "disabled"
        assert run(agent, "/tools enable mcp-gone").ok
        assert "mcp-gone" in saved_toolsets(hermes_home)
    finally:
        hub().close()


# -- /skills ---------------------------------------------------------------------------


def write_skill(folder: Path, name: str, description: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\nSay hello warmly.\n", "utf-8"
    )
    return folder


def test_skills_search_inspect_install_and_remove(make_agent, owner_home: Path, hermes_home):
    agent = make_agent()
    assert "No skills yet" in run(agent, "/skills").text
    write_skill(owner_home / "project" / "src" / "greeter", "greeter", "Greets people kindly")

    reply = run(agent, "/skills install src/greeter")
    assert reply.ok, reply.text
    assert (hermes_home / "skills" / "greeter" / "SKILL.md").is_file()
    assert [s["name"] for s in run(agent, "/skills").data["skills"]] == ["greeter"]
    assert [s["name"] for s in run(agent, "/skills search kindly").data["skills"]] == ["greeter"]
    assert "No skill here matches" in run(agent, "/skills search nothing-like-it").text
    assert "Say hello warmly." in run(agent, "/skills inspect greeter").text

    again = run(agent, "/skills install src/greeter")
    assert not again.ok and "remove it first" in again.text
    assert run(agent, "/skills remove greeter").ok
    assert not (hermes_home / "skills" / "greeter").exists()


@pytest.mark.parametrize(
    ("line", "words"),
    [("/skills install", "Usage: /skills install PATH"),
     ("/skills search", "Usage: /skills search TEXT"),
     ("/skills inspect", "Usage: /skills inspect NAME"),
     ("/skills inspect nobody", "No skill named 'nobody'"),
     ("/skills install nowhere", "is not a folder"),
     ("/skills audit", "hermes keeps no skills hub"),
     ("/skills pending", "no queue of skill writes"),
     ("/skills frobnicate", "Unknown /skills action 'frobnicate'")],
)  # fmt: skip
def test_skills_answers_bad_input_in_one_sentence(make_agent, line: str, words: str):
    reply = run(make_agent(), line)
    assert not reply.ok and words in reply.text and "Traceback" not in reply.text


def test_skills_install_takes_nothing_the_tools_may_not_see(
    make_agent, owner_home: Path, hermes_home: Path
):
    """A skill is read back to the agent: a folder of the hidden home, or one holding a
    link to the SSH key, is not made a skill."""
    agent = make_agent()
    outside = write_skill(owner_home / "notes" / "keys", "keys", "Holds the keys")
    reply = run(agent, f"/skills install {outside}")
    assert not reply.ok and "hidden from the agent's tools" in reply.text

    linked = write_skill(owner_home / "project" / "linked", "linked", "A linked key")
    (linked / "key.txt").symlink_to(owner_home / ".ssh" / "id_ed25519")
    reply = run(agent, "/skills install linked")
    assert not reply.ok and "key.txt" in reply.text
    assert not (hermes_home / "skills").exists()


# -- /reload-mcp -----------------------------------------------------------------------


def test_reload_mcp_reads_config_again_and_restarts_the_servers(
    make_agent, fake_llm, hermes_home: Path, owner_home: Path
):
    starts = owner_home / "project" / "starts"  # the workspace: the sandboxed server writes it
    agent = make_agent()  # started before the server is configured
    assert "No MCP servers are configured" in run(agent, "/reload-mcp").text
    server = {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"],
              "cwd": str(REPO), "env": {"FAKE_MCP_STARTS": str(starts)}}  # fmt: skip
    missing = {"command": "/nonexistent/mcp-server"}
    config = {"mcp_servers": {"fake": server, "gone": missing}}
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    try:
        reply = run(agent, "/reload_mcp")  # 0.19's other name
        assert reply.ok, reply.text
        assert "1 of 2 servers connected" in reply.text
        assert "fake: connected" in reply.text and "gone: not connected" in reply.text
        agent.run("use the server")
        assert "mcp__fake__echo" in offered(fake_llm)
        first = starts.read_text().splitlines()
        assert len(first) == 1
        assert "fake: connected" in run(agent, "/reload-mcp").text
        assert len(starts.read_text().splitlines()) == 2  # stopped and started again
    finally:
        hub().close()


# -- /platforms ------------------------------------------------------------------------


def test_platforms_reads_the_gateways_state_file(make_agent, hermes_home: Path):
    agent = make_agent()
    none = run(agent, "/platforms")
    assert none.ok and "Gateway is not running" in none.text and "hermes gateway run" in none.text
    assert "no messaging platform" in none.text
    (hermes_home / "config.yaml").write_text(
        yaml.safe_dump({"gateway": {"platforms": {"telegram": {}, "slack": {"enabled": False}}}})
    )
    state = GatewayStateFile(hermes_home)
    state.starting()
    state.running(["telegram"], api_url=None)
    try:
        reply = run(make_agent(), "/gateway")  # 0.19's other name
        assert reply.ok and reply.data["running"]
        assert f"pid {os.getpid()}" in reply.text and "telegram (connected)" in reply.text
        assert "turns on: telegram; disabled: slack" in reply.text
    finally:
        state.stopped("test over")
    assert "Gateway is not running (stopped" in run(agent, "/platforms").text


# -- /debug, /update, /version ---------------------------------------------------------


def test_debug_writes_a_report_without_secrets(make_agent, hermes_home: Path):
    (hermes_home / "config.yaml").write_text(
        yaml.safe_dump({"model": {"api_key": API_KEY}}), encoding="utf-8"
    )
    (hermes_home / "logs").mkdir()
    lines = [f"2026-01-01 00:00:{n:02d},000 INFO hermes.agent: line {n}" for n in range(80)]
    (hermes_home / "logs" / "agent.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    agent = make_agent()
    reply = run(agent, "/debug")
    assert reply.ok, reply.text
    report = Path(reply.data["path"])
    assert report.parent == hermes_home / "logs" and str(report) in reply.text
    assert report.stat().st_mode & 0o777 == 0o600
    text = report.read_text(encoding="utf-8")
    assert f"hermes: {__version__}" in text and "line 79" in text and "line 29" not in text
    assert "api_key: '[redacted]'" in text and API_KEY not in text
    assert run(agent, "/debug local").ok

    nous = run(agent, "/debug nous")
    assert not nous.ok and "uploads nothing" in nous.text
    assert not run(agent, "/debug everything").ok


KINDS = ("editable", "pipx", "uv-tool", "uv", "pip")


def test_a_builds_leftover_egg_info_in_the_working_folder_does_not_change_the_install(
    tmp_path: Path,
) -> None:
    """Run from a checkout holding setuptools' ``*.egg-info`` (first on ``sys.path``), the
    install is still the one an installer recorded, with its update command."""
    probe = "from hermes.install import this_install; i = this_install(); print(i.kind, i.where)"
    egg = tmp_path / "hermes_agent_runtime.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: hermes-agent-runtime\n"
                                  "Version: 0.0.1\n", encoding="utf-8")  # fmt: skip
    seen = [
        subprocess.run(
            [sys.executable, "-c", probe],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout  # fmt: skip
        for cwd in ("/", tmp_path, REPO)  # "/": nothing there to mistake for hermes
    ]
    assert seen[0] == seen[1] == seen[2] and seen[0].split()[0] in KINDS, seen


def test_update_says_the_command_and_version_the_version(make_agent):
    agent = make_agent()
    install = this_install()
    reply = run(agent, "/update")
    assert reply.ok and install.update in reply.text and __version__ in reply.text
    assert reply.data["kind"] == install.kind
    assert run(agent, "/v").text.startswith(f"hermes {__version__} (Python ")
    assert load_config().path == Path(os.environ["HERMES_HOME"]) / "config.yaml"
