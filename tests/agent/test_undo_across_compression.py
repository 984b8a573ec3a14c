"""What the user takes back never reaches the model again (invariant 16), on both stores.

A secret is told, the conversation is compressed (the summary quotes it), the turn is
taken back with /undo or /retry: no later request body to the model holds the secret,
also from a new agent on a new store handle, and also when the summary model fails
once (the undo is then refused and nothing changes).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.commands import dispatch
from hermes.agent.summariser import SUMMARY_PREFIX
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake
from tests.stores import DBFactory

SECRET = "4711"
AFTER = 4  # turns after the secret's, so the summary (not the kept tail) holds it
UNDO = f"/undo {AFTER + 1}"
PADDING = " and some words so the history has a middle to summarise" * 6


@pytest.fixture(autouse=True)
def config(hermes_home: Path) -> None:
    # Compression only when asked (/compress), so each test knows what its summary read.
    (hermes_home / "config.yaml").write_text(
        "model:\n  context_length: 2000\n  max_retries: 0\n"
        "compression:\n  enabled: false\n  cooldown_seconds: 0\n"
    )


class Summaries:
    """The fake model: summaries quote what they read (so a secret lands in them), and
    fail ``failing`` times when asked to; other requests are echoed."""

    def __init__(self) -> None:
        self.failing = 0

    def __call__(self, body: dict[str, Any]) -> fake.Reply | None:
        system = str(body["messages"][0].get("content"))
        if "compact the history" not in system:
            return None
        if self.failing:
            self.failing -= 1
            return fake.server_error(500)
        asked = fake.last_user_text(body)
        so_far = re.findall(r"<summary>\n(.*)\n</summary>", asked, re.DOTALL)
        said = re.findall(r"\[(?:user|assistant)\]\n(.{0,40})", asked)
        return fake.text("; ".join(so_far or ["SUMMARY: the user said"]) + "; " + "; ".join(said))


@pytest.fixture
def llm(fake_llm: fake.FakeLLMServer) -> fake.FakeLLMServer:
    fake_llm.strict_context = True
    fake_llm.responder = Summaries()
    return fake_llm


def secret_told_and_compressed(llm: fake.FakeLLMServer, make_db: DBFactory) -> Any:
    """An agent whose conversation had a few turns, then the secret, then a few more,
    compressed into a summary that quotes the secret."""
    agent = fake_agent(llm, make_db(), skip_memory=True, tools=[])
    for n in range(8):
        agent.chat(f"question {n}{PADDING}")
    agent.chat(f"my PIN is {SECRET}, keep it secret")
    for n in range(AFTER):
        agent.chat(f"then {n}{PADDING}")
    reply = dispatch(agent, "/compress")
    assert reply.ok, reply.text
    summary = [
        m for m in agent.binding.load_history() if str(m["content"]).startswith(SUMMARY_PREFIX)
    ]
    assert summary and SECRET in summary[0]["content"]
    return agent


def bodies_since(llm: fake.FakeLLMServer, start: int) -> str:
    return json.dumps(llm.requests[start:])


def test_undo_of_a_summarised_secret_keeps_it_from_every_later_request(
    llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    agent = secret_told_and_compressed(llm, make_db)
    start = len(llm.requests)

    reply = dispatch(agent, UNDO)
    agent.chat("what do you know about me?")
    later = fake_agent(llm, make_db(), session_id=agent.session_id, skip_memory=True, tools=[])
    later.chat("and now, after a restart?")

    assert reply.ok and "will not come back on resume" in reply.text, reply.text
    assert SECRET not in bodies_since(llm, start)
    # The rest of the conversation is still in the context: a summary of it, or itself.
    assert "question 0" in json.dumps(llm.requests[-1]["messages"])
    assert llm.stats()["invalid_contexts"] == 0
    history = agent.binding.session_db.get_conversation_messages(agent.session_id)
    told = [m["undone"] for m in history if SECRET in str(m["content"])]
    assert told and all(told)  # still in the history, marked
    assert agent.binding.session_db.coverage_violations() == []


def test_an_undo_whose_summary_cannot_be_made_again_is_refused_and_changes_nothing(
    llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    agent = secret_told_and_compressed(llm, make_db)
    db = agent.binding.session_db
    tip, before = agent.session_id, db.get_conversation_messages(agent.session_id)
    llm.responder.failing = 1

    refused = dispatch(agent, UNDO)

    assert not refused.ok and "nothing was changed" in refused.text, refused.text
    assert db.resolve_tip(tip) == tip
    assert db.get_conversation_messages(tip) == before
    start = len(llm.requests)
    again = dispatch(agent, UNDO)
    agent.chat("what do you know about me?")
    assert again.ok, again.text
    assert SECRET not in bodies_since(llm, start)


def test_retry_of_a_summarised_turn_sends_neither_the_old_answer_nor_its_summary(
    llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    agent = fake_agent(llm, make_db(), skip_memory=True, tools=[])
    for n in range(8):
        agent.chat(f"question {n}{PADDING}")
    # An answer longer than the kept tail, so the summary reads it.
    llm.enqueue(fake.text(f"the old answer is {SECRET}" + PADDING * 8))
    agent.chat("tell me a number")
    assert dispatch(agent, "/compress").ok
    start = len(llm.requests)

    reply = dispatch(agent, "/retry")
    assert reply.ok and reply.rerun == "tell me a number", reply.text
    agent.chat(reply.rerun)
    later = fake_agent(llm, make_db(), session_id=agent.session_id, skip_memory=True, tools=[])
    later.chat("and after a restart?")

    assert SECRET not in bodies_since(llm, start)
    assert llm.stats()["invalid_contexts"] == 0


def test_an_undo_through_another_handle_is_made_good_before_the_next_model_call(
    llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    """A deleted response, or a turn a gateway's shutdown gave back, marks rows undone
    without the agent: the next turn makes the context again before calling the model,
    or refuses while the summary model fails."""
    agent = secret_told_and_compressed(llm, make_db)
    other = make_db()
    rows = [m for m in other.get_conversation_messages(agent.session_id) if not m["undone"]]
    told = next(i for i, m in enumerate(rows) if SECRET in str(m["content"]))
    other.mark_undone(agent.session_id, [m["id"] for m in rows[told:]])
    start = len(llm.requests)
    llm.responder.failing = 1

    with pytest.raises(Exception, match="nothing was changed"):
        agent.chat("what do you know about me?")
    agent.chat("what do you know about me now?")

    assert SECRET not in bodies_since(llm, start)
    assert "question 0" in json.dumps(llm.requests[-1]["messages"])
