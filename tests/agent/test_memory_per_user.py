"""Memory per gateway user: one user's facts never reach another's prompt.

Two Telegram users talk to agents on one HERMES_HOME; the background review of user
42's conversation saves a fact with the memory tool. It lands in 42's own memory only:
user 7's system prompt never shows it, the terminal chat's memory stays empty, and an
operator who opts into one shared memory (``memory.shared``) gets the old behaviour.
"""

from __future__ import annotations

from pathlib import Path

from hermes.agent import AIAgent, review
from hermes.state import SessionDB
from hermes.tools.memory import memory_home, memory_path
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake

PIN = "my bank PIN is 7391"


def _review_saves_the_pin(body: dict) -> fake.Reply:
    if review.HARNESS_PROMPT in fake.last_user_text(body):
        if body["messages"][-1]["role"] == "tool":
            return fake.text("saved 1 memory")
        return fake.tool_call("memory", {"action": "add", "target": "user", "content": PIN})
    return fake.text("ok")


def _talk(agent: AIAgent, text: str) -> None:
    agent.run(text)
    for thread in agent.review_threads:
        thread.join(timeout=30)


def _system_prompt(fake_llm: fake.FakeLLMServer) -> str:
    return str(fake_llm.requests[-1]["messages"][0]["content"])


def test_a_users_memory_stays_theirs(fake_llm, tmp_path: Path, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("agent:\n  review_interval: 1\n")
    fake_llm.responder = _review_saves_the_pin
    with SessionDB(db_path=tmp_path / "state.db") as db:
        _talk(fake_agent(fake_llm, db, source="telegram", user_id="42"), PIN)
        own = memory_home(hermes_home, "telegram", "42", shared=False)
        assert PIN in memory_path(own, "user").read_text(encoding="utf-8")
        assert not memory_path(hermes_home, "user").exists()

        fake_llm.responder = lambda body: fake.text("hello")
        fake_agent(fake_llm, db, source="telegram", user_id="7").run("hi")
        assert PIN not in _system_prompt(fake_llm)
        fake_agent(fake_llm, db, source="telegram", user_id="42").run("hi")
        assert PIN in _system_prompt(fake_llm)


def test_an_operator_may_opt_into_one_shared_memory(
    fake_llm, tmp_path: Path, hermes_home: Path
) -> None:
    (hermes_home / "config.yaml").write_text(
        "agent:\n  review_interval: 1\nmemory:\n  shared: true\n"
    )
    fake_llm.responder = _review_saves_the_pin
    with SessionDB(db_path=tmp_path / "state.db") as db:
        _talk(fake_agent(fake_llm, db, source="telegram", user_id="42"), PIN)
        assert PIN in memory_path(hermes_home, "user").read_text(encoding="utf-8")


def test_a_user_id_cannot_climb_out_of_the_memory_folder(hermes_home: Path) -> None:
    for user in ("../../..", "/etc", "a/b", ".."):
        folder = memory_home(hermes_home, "telegram", user, shared=False)
        assert folder.parent == hermes_home / "memories" / "users" / "telegram"


def test_a_local_web_ui_shares_the_operators_memory(
    fake_llm, tmp_path: Path, hermes_home: Path
) -> None:
    """hermes-webui talks as ``webui``: the operator's own UI on their machine, not a
    gateway user, so its chats see and save the memory its Memory panel shows."""
    memory_path(hermes_home, "user").parent.mkdir(parents=True, exist_ok=True)
    memory_path(hermes_home, "user").write_text("the operator likes tea", encoding="utf-8")
    fake_llm.responder = lambda body: fake.text("hello")
    with SessionDB(db_path=tmp_path / "state.db") as db:
        fake_agent(fake_llm, db, source="webui").run("hi")
        assert "the operator likes tea" in _system_prompt(fake_llm)
        fake_agent(fake_llm, db, source="telegram", user_id="7").run("hi")
        assert "the operator likes tea" not in _system_prompt(fake_llm)
    assert memory_home(hermes_home, "webui", None, shared=False) == hermes_home
    assert memory_home(hermes_home, "cron", None, shared=False) == hermes_home
