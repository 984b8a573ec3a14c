"""The background review fork (invariant 8): it saves memories and nothing else."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hermes.agent import AIAgent, review
from hermes.state import SessionDB
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake


def reviewing_responder(body: dict):
    last = fake.last_user_text(body)
    if review.HARNESS_PROMPT in last:
        if body["messages"][-1]["role"] == "tool":
            return fake.text("saved 1 memory")
        return fake.tool_call("memory", {"action": "add", "target": "user", "content": "likes tea"})
    return fake.text("ok " + last[:20])


@pytest.fixture
def setup(fake_llm, tmp_path: Path, hermes_home: Path):
    (hermes_home / "config.yaml").write_text("agent:\n  review_interval: 1\n")
    fake_llm.responder = reviewing_responder
    db = SessionDB(db_path=tmp_path / "state.db")
    events: list[tuple[str, dict]] = []
    agent = fake_agent(fake_llm, db, event_callback=lambda kind, data: events.append((kind, data)))
    yield agent, db, events
    db.close()


def wait_for_reviews(agent: AIAgent) -> None:
    for thread in agent.review_threads:
        thread.join(timeout=30)
        assert not thread.is_alive()


def all_contents(db: SessionDB) -> list[str]:
    rows = db._conn.execute("SELECT content FROM messages").fetchall()
    return [r["content"] or "" for r in rows]


def test_a_review_saves_memory_and_writes_no_transcript(setup, hermes_home: Path) -> None:
    agent, db, events = setup
    agent.run("I drink tea every morning")
    wait_for_reviews(agent)

    assert "likes tea" in (hermes_home / "memories" / "USER.md").read_text()
    contents = all_contents(db)
    assert not any(review.HARNESS_PROMPT in c for c in contents)
    assert "saved 1 memory" not in contents
    assert [r["role"] for r in db.get_messages(agent.session_id)] == ["user", "assistant"]
    assert ("review", {"saved": 1, "summary": "saved 1 memory", "error": None}) in events
    # The parent's resources are intact: its next turn works.
    assert agent.chat("and coffee?").startswith("ok")


def test_the_fork_uses_the_same_session_and_byte_identical_system_prompt(setup, fake_llm) -> None:
    agent, db, _ = setup
    agent.run("hello")
    wait_for_reviews(agent)
    prompts = {r["messages"][0]["content"] for r in fake_llm.requests}
    assert len(prompts) == 1
    review_request = next(
        r for r in fake_llm.requests if review.HARNESS_PROMPT in fake.last_user_text(r)
    )
    offered = [t["function"]["name"] for t in review_request["tools"]]
    assert offered == ["memory", "skill_view", "skill_manage"]


def test_a_fork_never_compresses_or_rotates(setup) -> None:
    agent, db, _ = setup
    agent.run("hello")
    fork = review.make_fork(agent)
    messages = [{"role": "user", "content": f"m{i}"} for i in range(30)]
    out, _ = fork._compress_context(messages, "sys")
    assert out is messages
    assert db.get_lineage(agent.session_id) == [agent.session_id]
    assert db.get_compression_lock_holder(agent.session_id) is None


def test_a_failing_review_only_logs(setup, fake_llm, caplog) -> None:
    agent, db, events = setup
    fake_llm.responder = lambda body: (
        fake.auth_error() if review.HARNESS_PROMPT in fake.last_user_text(body) else fake.text("ok")
    )
    agent.run("hello")
    wait_for_reviews(agent)
    kind, data = events[-1]
    assert kind == "review" and data["error"]
    assert [r["role"] for r in db.get_messages(agent.session_id)] == ["user", "assistant"]


def test_review_concurrent_with_the_main_agents_compression(fake_llm, tmp_path, hermes_home):
    """The user's incident with a real fork: the review runs while the main agent
    compresses the same session. Exactly one child, the harness prompt nowhere."""
    (hermes_home / "config.yaml").write_text(
        "model:\n  context_length: 3000\ncompression:\n  threshold: 0.9\n"
    )
    release = threading.Event()

    def responder(body):
        if review.HARNESS_PROMPT in fake.last_user_text(body):
            release.wait(10)  # hold the review open across the compression
            return fake.text("nothing new")
        if "summar" in str(body["messages"]).lower() and not body.get("tools"):
            return fake.text("SUMMARY")
        return fake.text("ok")

    fake_llm.responder = responder
    db = SessionDB(db_path=tmp_path / "state.db")
    agent = fake_agent(fake_llm, db, skip_memory=True)
    for i in range(5):
        agent.run(f"turn {i} " + "t" * 1200)
    parent = agent.session_id
    db.gateway.set_route("discord:channel-1", parent, platform="discord")
    review_thread = review.spawn(agent, agent.binding.load_history())
    outcome = agent.compress_now()
    release.set()
    review_thread.join(timeout=30)

    assert outcome.rotated
    children = db._conn.execute(
        "SELECT id FROM sessions WHERE parent_session_id = ?", (parent,)
    ).fetchall()
    assert len(children) == 1 and agent.session_id == children[0]["id"]
    assert not any(review.HARNESS_PROMPT in c for c in all_contents(db))
    assert db.invariant_violations() == []
    # The route moved with the rotation, to the main agent's segment, and nowhere else.
    assert db.gateway.get_route("discord:channel-1") == agent.session_id
    db.close()


def skill_reviewing_responder(body: dict):
    last = fake.last_user_text(body)
    if review.HARNESS_PROMPT in last:
        if body["messages"][-1]["role"] == "tool":
            return fake.text("saved a skill")
        content = "---\nname: brew-tea\ndescription: Brew tea the user's way.\n---\nSteep 3 min.\n"
        return fake.tool_call(
            "skill_manage", {"action": "create", "name": "brew-tea", "content": content}
        )
    return fake.text("ok " + last[:20])


def test_the_review_changes_skills_only_when_the_user_allowed_it(
    fake_llm, tmp_path: Path, hermes_home: Path
) -> None:
    fake_llm.responder = skill_reviewing_responder
    created = hermes_home / "skills" / "brew-tea" / "SKILL.md"
    for allowed in (False, True):
        (hermes_home / "config.yaml").write_text(
            f"agent:\n  review_interval: 1\nskills:\n  review_may_edit: {str(allowed).lower()}\n"
        )
        with SessionDB(db_path=tmp_path / f"state-{allowed}.db") as db:
            agent = fake_agent(fake_llm, db)
            agent.run("I brew tea for 3 minutes")
            wait_for_reviews(agent)
        request = next(
            r
            for r in reversed(fake_llm.requests)
            if review.HARNESS_PROMPT in fake.last_user_text(r)
        )
        offered = [t["function"]["name"] for t in request["tools"]]
        assert ("skill_manage" in offered) is allowed
        assert (review.SKILLS_HINT in fake.last_user_text(request)) is allowed
        assert created.exists() is allowed
