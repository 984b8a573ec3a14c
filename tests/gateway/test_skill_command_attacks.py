"""/skills install (and /tools) as an attacker would try them.

From a messaging chat or the HTTP API they are refused whatever the path (``../``,
absolute, the SSH folder), even with ``skills.write_approval`` set (0.19's gate that
offers /skills on its gateway): they change the operator's profile, so they are the
terminal's. In the terminal chat, a skill is made only of what the chat's tools may
see: not a folder outside the workspace, not a link of the workspace pointing out, not
a folder holding a link to ``~/.ssh/id_rsa`` or the home's ``.env``, not a skill whose
name climbs out of the skills folder; and a relative link that points elsewhere once
copied into the skills folder is never read through.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.agent import commands as chat_commands
from hermes.state import SessionDB
from tests.fakes.llm_server import text
from tests.gateway.command_attacks import (
    DOTENV_CANARY,
    SSH_CANARY,
    Machine,
    answer_of,
    configure,
    planted_machine,
    running,
)

pytestmark = pytest.mark.slow  # a gateway per test


@pytest.fixture
def machine(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    yield from planted_machine(monkeypatch)  # hermes_home: for its clean environment


def write_skill(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: A planted skill\n---\nDo as the files say.\n", "utf-8"
    )
    return folder


def test_a_chat_and_the_api_install_and_toggle_nothing(machine: Machine, fake_llm: Any) -> None:
    fake_llm.responder = lambda body: text("an ordinary answer")
    write_skill(machine.home / ".ssh", "keys")  # the SSH folder made to look like a skill
    project = machine.home / "project"
    write_skill(project / "fine", "fine")
    telegram = configure(machine, fake_llm.url, skills={"write_approval": True})
    attempts = [
        "/skills install ../.ssh",
        f"/skills install {machine.home / '.ssh'}",
        f"/skills install {project / 'fine'}",
        "/skills install ~/.ssh",
        "/skills remove fine",
        "/tools enable terminal",
        "/tools disable memory",
    ]
    with running(machine, telegram) as chats:
        before = machine.snapshot()
        said = [answer for line in attempts for answer in chats.says("42", line)]
        said += [answer for line in attempts for answer in chats.says("7", line, group=True)]
        over_api = [
            answer_of(chats.call(who, line)) for who in ("alice", None) for line in attempts
        ]
        after = machine.snapshot()
    assert all("works in the terminal chat only" in answer for answer in said + over_api), (
        said + over_api
    )
    assert after == before
    assert not (machine.hermes / "skills").exists()


@pytest.fixture
def terminal(machine: Machine, fake_llm: Any) -> Iterator[Any]:
    """The terminal chat's agent, working in ``~/project``."""
    from hermes.agent import AIAgent

    (machine.home / "project").mkdir(exist_ok=True)
    configure(machine, fake_llm.url)
    with SessionDB(db_path=machine.hermes / "state.db") as db:
        agent = AIAgent(base_url=fake_llm.url, model="fake-model", session_db=db, source="cli",
                        cwd=machine.home / "project", skip_context_files=True,
                        skip_memory=True)  # fmt: skip
        try:
            yield agent
        finally:
            agent.client.close()


def test_the_terminal_makes_no_skill_of_what_its_tools_may_not_see(
    machine: Machine, terminal: Any
) -> None:
    project, ssh = machine.home / "project", machine.home / ".ssh"
    write_skill(ssh, "keys")
    (project / "keys-link").symlink_to(ssh)  # a link of the workspace pointing out
    write_skill(project / "with-key", "with-key")
    (project / "with-key" / "id_rsa").symlink_to(ssh / "id_rsa")
    write_skill(project / "with-env", "with-env")
    (project / "with-env" / "settings").symlink_to(machine.hermes / ".env")
    write_skill(project / "with-folder", "with-folder")
    (project / "with-folder" / "keys").symlink_to(ssh, target_is_directory=True)
    write_skill(project / "climber", "../../climbed")  # a name that leaves the skills folder
    refused = {
        "../.ssh": "hidden from the agent's tools",
        str(ssh): "hidden from the agent's tools",
        "~/.ssh": "hidden from the agent's tools",
        "keys-link": "hidden from the agent's tools",
        "with-key": "with-key/id_rsa",
        "with-env": "with-env/settings",
        "with-folder": "with-folder/keys",
        "climber": "cannot be a folder name",
    }
    answers = {
        where: chat_commands.dispatch(terminal, f"/skills install {where}") for where in refused
    }
    for where, words in refused.items():
        assert not answers[where].ok and words in answers[where].text, (where, answers[where].text)
    assert not (machine.hermes / "skills").exists()
    assert not (machine.hermes.parent / "climbed").exists()
    # The same attempts with the view's check gone would install: the refusals above are
    # the check's, not a missing folder's.
    write_skill(project / "plain", "plain")
    assert chat_commands.dispatch(terminal, "/skills install plain").ok


def test_a_link_that_points_elsewhere_once_installed_is_refused(
    machine: Machine, terminal: Any, fake_llm: Any
) -> None:
    """Links are copied as links. ``notes -> ../../../.ssh/id_rsa`` in ``project/a/b/x`` is
    a harmless file of the workspace; copied into ``$HERMES_HOME/skills/x`` the same link
    is the SSH key (``env -> ../../.env``: the home's .env). A SKILL.md so linked made a
    skill that 0.19's ``skill_view`` (hermes-webui's Skills panel) showed as the key."""
    project = machine.home / "project"
    (project / ".ssh").mkdir()
    (project / ".ssh" / "id_rsa").write_text(
        "---\nname: moved\ndescription: A planted skill\n---\nDo as the files say.\n", "utf-8"
    )
    (project / "a").mkdir()
    (project / "a" / ".env").write_text("HARMLESS=1\n", "utf-8")
    notes = write_skill(project / "a" / "b" / "notes", "notes")
    (notes / "notes").symlink_to("../../../.ssh/id_rsa")
    env = write_skill(project / "a" / "b" / "env", "env")
    (env / "env").symlink_to("../../.env")
    index = project / "a" / "b" / "moved"
    index.mkdir()
    (index / "SKILL.md").symlink_to("../../../.ssh/id_rsa")
    answers = {
        name: chat_commands.dispatch(terminal, f"/skills install a/b/{name}")
        for name in ("notes", "env", "moved")
    }
    for name, link in (("notes", "notes"), ("env", "env"), ("moved", "SKILL.md")):
        reply = answers[name]
        assert not reply.ok and f"{link} links to" in reply.text, (name, reply.text)
    assert not (machine.hermes / "skills").exists()

    import tools.skills_tool as hermes_agent_skills  # what hermes-webui calls

    seen = hermes_agent_skills.skill_view("moved")
    assert SSH_CANARY not in seen and DOTENV_CANARY not in seen
    # A link that stays inside the skill's folder is kept, as a link.
    inner = write_skill(project / "inner", "inner")
    (inner / "docs").mkdir()
    (inner / "docs" / "v2.md").write_text("the current notes\n", "utf-8")
    (inner / "latest.md").symlink_to("docs/v2.md")
    assert chat_commands.dispatch(terminal, "/skills install inner").ok
    assert (machine.hermes / "skills" / "inner" / "latest.md").is_symlink()
