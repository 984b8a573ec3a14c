"""Skills end to end against the fake model: listed by description, loaded with
skill_view, created with skill_manage and seen by the next conversation, and a system
prompt that stays byte-identical across turns and agents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes.state import SessionDB
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake

DEPLOY = "---\nname: deploy\ndescription: Ship the app to production.\n---\nRun BODY-ONLY-7.\n"
TIDY = "---\nname: tidy\ndescription: Tidy a repository.\n---\nRemove build output.\n"


def _system(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def _install(hermes_home: Path) -> None:
    folder = hermes_home / "skills" / "devops" / "deploy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(DEPLOY, encoding="utf-8")


def test_a_skill_is_listed_by_description_and_loaded_on_demand(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path
) -> None:
    _install(hermes_home)
    fake_llm.script(
        fake.tool_call("skill_view", {"name": "deploy"}, id="call_view"),
        fake.text("Deployed."),
        fake.text("Second turn."),
    )
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True)
        agent.run("Ship it.")
        agent.run("And again.")
        other = fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True)
        fake_llm.script(fake.text("Fresh."))
        other.run("Hello.")
    bodies = fake_llm.requests
    first = _system(bodies[0])
    assert "- deploy: Ship the app to production." in first
    assert "BODY-ONLY-7" not in first
    tool_result = bodies[1]["messages"][-1]
    assert tool_result["role"] == "tool" and "Run BODY-ONLY-7." in tool_result["content"]
    # Byte-stable: every turn, and a new agent's new conversation, send the same prompt.
    assert {_system(body) for body in bodies} == {first}


def test_a_skill_the_agent_creates_is_seen_by_the_next_conversation(
    fake_llm: fake.FakeLLMServer, hermes_home: Path, tmp_path: Path
) -> None:
    fake_llm.script(
        fake.tool_call(
            "skill_manage", {"action": "create", "name": "tidy", "content": TIDY}, id="c1"
        ),
        fake.text("Saved the procedure."),
        fake.text("Next conversation."),
    )
    asked: list[str] = []
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(
            fake_llm, db, cwd=tmp_path, skip_memory=True, interactive=True,
            approve=lambda what, why: asked.append(what) or True,
        )  # fmt: skip
        agent.run("Remember how we tidied.")
        fake_agent(fake_llm, db, cwd=tmp_path, skip_memory=True).run("Hi.")
    bodies = fake_llm.requests
    assert asked == [f"write {hermes_home / 'skills' / 'tidy' / 'SKILL.md'}"]
    assert "- tidy:" not in _system(bodies[0])
    assert "- tidy: Tidy a repository." in _system(bodies[2])
