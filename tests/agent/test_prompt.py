"""The system prompt: built once per segment, byte-stable, refreshed by rotation."""

from __future__ import annotations

from pathlib import Path

from hermes.agent.prompt import build_system_prompt
from hermes.state import SessionDB
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake


def system_prompts(server) -> list[str]:
    return [r["messages"][0]["content"] for r in server.requests if r.get("tools") is not None]


def test_prompt_holds_identity_memory_context_files_and_tools(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    (home / "memories" / "MEMORY.md").write_text("prefers pytest")
    (home / "memories" / "USER.md").write_text("name is Ada")
    (tmp_path / "AGENTS.md").write_text("run make test before committing")
    prompt = build_system_prompt(hermes_home=home, cwd=tmp_path, tool_names=["memory", "terminal"])
    for piece in ("hermes", "prefers pytest", "name is Ada", "run make test", "memory, terminal"):
        assert piece in prompt
    bare = build_system_prompt(
        hermes_home=home, cwd=tmp_path, tool_names=[], skip_memory=True, skip_context_files=True
    )
    assert "Ada" not in bare and "make test" not in bare


def test_memory_changes_show_from_the_next_segment_only(fake_llm, tmp_path, hermes_home) -> None:
    (hermes_home / "config.yaml").write_text(
        "model:\n  context_length: 3000\ncompression:\n  threshold: 0.95\n"
        "agent:\n  review_interval: 0\n"
    )
    (hermes_home / "memories").mkdir()
    (hermes_home / "memories" / "MEMORY.md").write_text("note A")
    db = SessionDB(db_path=tmp_path / "state.db")
    agent = fake_agent(fake_llm, db)
    agent.run("first " + "f" * 1500)
    (hermes_home / "memories" / "MEMORY.md").write_text("note B")
    agent.run("second " + "s" * 1500)
    agent.run("third " + "t" * 1500)
    same_segment = system_prompts(fake_llm)
    assert len(set(same_segment)) == 1 and "note A" in same_segment[0]

    fake_llm.script(fake.text("SUMMARY"))
    assert agent.compress_now().rotated
    agent.run("fourth")
    latest = system_prompts(fake_llm)[-1]
    assert "note B" in latest and "note A" not in latest
    assert db.get_session(agent.session_id)["system_prompt"] == latest
    db.close()


def test_a_resumed_agent_reuses_the_stored_prompt(fake_llm, tmp_path, hermes_home) -> None:
    (hermes_home / "memories").mkdir()
    (hermes_home / "memories" / "MEMORY.md").write_text("note A")
    db = SessionDB(db_path=tmp_path / "state.db")
    first = fake_agent(fake_llm, db)
    first.run("hello")
    (hermes_home / "memories" / "MEMORY.md").write_text("note B")
    resumed = fake_agent(fake_llm, db, session_id=first.session_id)
    resumed.run("again")
    prompts = system_prompts(fake_llm)
    assert prompts[0] == prompts[-1]
    db.close()


def test_memories_kept_in_hermes_home_itself_move_and_reach_the_prompt(
    tmp_path: Path, capsys
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "MEMORY.md").write_text("prefers pytest")
    (home / "USER.md").write_text("name is Ada")
    prompt = build_system_prompt(hermes_home=home, cwd=tmp_path, tool_names=[])
    assert "prefers pytest" in prompt and "name is Ada" in prompt
    assert (home / "memories" / "MEMORY.md").read_text() == "prefers pytest"
    assert not (home / "USER.md").exists()
    assert capsys.readouterr().err.count("moved") == 2


def test_a_jobs_own_folder_gives_no_context_files_and_no_project_skills(tmp_path: Path) -> None:
    """What a run wrote in its own folder never instructs a later run (issue 54): neither
    its AGENTS.md nor a skill in its .hermes/skills/, in the prompt or to skill_view. A
    workdir the operator chose is a project: both count there, as in Hermes Agent 0.19."""
    from hermes.config import Config, defaults
    from hermes.tools.skills import load_skills

    home = tmp_path / "home"
    config = Config(values=defaults(), path=home / "config.yaml")
    own = home / "workspaces" / "cron" / "job-1"
    workdir = tmp_path / "project"
    for folder in (own, workdir):
        (folder / ".hermes" / "skills" / "left").mkdir(parents=True)
        (folder / ".hermes" / "skills" / "left" / "SKILL.md").write_text(
            "---\nname: left\ndescription: left-behind-skill-9a1\n---\nobey\n"
        )
        (folder / "AGENTS.md").write_text("left-behind-rule-4c2")

    def prompt(cwd: Path) -> str:
        return build_system_prompt(
            hermes_home=home, cwd=cwd, tool_names=["skill_view"], config=config, source="cron"
        )

    assert "left-behind" not in prompt(own)
    assert load_skills(home, own, config, source="cron").find("left") is None
    assert "left-behind-rule-4c2" in prompt(workdir) and "left-behind-skill-9a1" in prompt(workdir)
    assert load_skills(home, workdir, config, source="cron").find("left") is not None
