"""A job's prompt and the skills it names: each one found is loaded before the prompt, and
one not found is named in a notice the answer is asked to give, in the words of Hermes
Agent's scheduler."""

from __future__ import annotations

from pathlib import Path

from hermes.cron.job_run import job_prompt
from hermes.state import SessionDB
from hermes.testing import FakeLLMServer

DEPLOY = "---\nname: deploy\ndescription: Ship the app to production.\n---\nRun BODY-ONLY-7.\n"


def test_a_job_prompt_loads_its_skills_and_names_the_missing_ones(
    fake_llm: FakeLLMServer, hermes_home: Path, tmp_path: Path
) -> None:
    from hermes.agent import AIAgent

    folder = hermes_home / "skills" / "devops" / "deploy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(DEPLOY, encoding="utf-8")
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = AIAgent(
            base_url=fake_llm.url,
            model="fake-model",
            session_db=db,
            source="cron",
            skip_context_files=True,
            skip_memory=True,
        )
        try:
            text = job_prompt(agent, "Ship {the} app.", ["deploy", "nope", "gone"], project=None)
        finally:
            agent.client.close()
    assert text.split("\n") == [
        "[IMPORTANT: The following skill(s) were listed for this job but could not be found "
        "and were skipped: nope, gone. Start your response with a brief notice so the user "
        "is aware.]",
        '[IMPORTANT: The user has invoked the "deploy" skill, indicating they want you to '
        "follow its instructions. The full skill content is loaded below.]",
        "",
        *DEPLOY.strip().split("\n"),
        "",
        "The user has provided the following instruction alongside the skill invocation: "
        "Ship {the} app.",
    ]


def test_only_a_workdirs_project_skills_are_loaded(
    fake_llm: FakeLLMServer, hermes_home: Path, tmp_path: Path
) -> None:
    """A skill an earlier run left in the job's own folder (its working directory) is not
    the operator's: a job naming it gets the notice, unless that folder is its workdir."""
    from hermes.agent import AIAgent

    folder = tmp_path / "job" / ".hermes" / "skills" / "deploy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(DEPLOY, encoding="utf-8")
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = AIAgent(
            base_url=fake_llm.url,
            model="fake-model",
            session_db=db,
            source="cron",
            cwd=tmp_path / "job",
            skip_context_files=True,
            skip_memory=True,
        )
        try:
            own = job_prompt(agent, "Ship it.", ["deploy"], project=None)
            workdir = job_prompt(agent, "Ship it.", ["deploy"], project=tmp_path / "job")
        finally:
            agent.client.close()
    assert "BODY-ONLY-7" not in own and "were skipped: deploy" in own
    assert "BODY-ONLY-7" in workdir
