"""Anchors are never dropped (issue 55): what one summary keeps the way back to stays
within one ``recall`` after every later compression of the same conversation, even when
the summary is summarised again and the summary model writes nothing exact."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from hermes.tools.registry import ToolContext
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake
from tests.stores import DBFactory

WORDS = ("ledger", "shard", "replica", "cursor", "quota", "merge", "branch", "patch", "cache")
GENERIC = "The user and the assistant worked through several routine steps. " * 20
ROUNDS, TURNS_PER_ROUND, FACTS_PER_TURN = 6, 6, 1


@pytest.fixture(autouse=True)
def config(hermes_home: Path) -> None:
    # A small window: the summary outgrows its limit and is summarised again.
    (hermes_home / "config.yaml").write_text(
        "model:\n  context_length: 8000\n  max_retries: 0\n"
        "compression:\n  enabled: false\n  cooldown_seconds: 0\n"
    )


def responder(body: dict[str, Any]) -> fake.Reply:
    if "compact the history" in str(body["messages"][0]["content"]):
        return fake.text(GENERIC)  # quotes nothing, whatever it is asked
    return fake.text("Noted, carrying on.")


def planted(rng: random.Random, turn: int, per_turn: int) -> list[tuple[str, str]]:
    """(handle, fact): a commit hash the user names, and a plain phrase said with it
    that no anchor index picks out (reachable only through the hash)."""
    return [
        (f"{rng.getrandbits(160):040x}", f"codeword {' '.join(rng.sample(WORDS, 3))} {turn}-{n}")
        for n in range(per_turn)
    ]


def test_every_fact_stays_within_one_recall_after_every_compression(
    make_db: DBFactory, fake_llm: fake.FakeLLMServer
) -> None:
    fake_llm.responder = responder
    db = make_db()
    agent = fake_agent(fake_llm, db, skip_memory=True, tools=["recall"])
    facts: list[tuple[str, str]] = []
    for round_ in range(1, ROUNDS + 1):
        facts += chat_and_compress(agent, random.Random(round_), len(facts))
        agent.chat("What next?")
        lost = out_of_reach(agent, fake_llm, facts)
        assert lost == [], f"after compression {round_}: {len(lost)} of {len(facts)} lost"
        assert db.coverage_violations() == []


def test_a_context_made_again_after_an_undo_keeps_every_standing_facts_anchor(
    make_db: DBFactory, fake_llm: fake.FakeLLMServer
) -> None:
    """Issue 55: what brings a conversation back (an undo that reached into a summary
    makes its context again) keeps its anchors, but none that leads only to what the
    user took back."""
    fake_llm.responder = responder
    db = make_db()
    agent = fake_agent(fake_llm, db, skip_memory=True, tools=["recall"])
    facts: list[tuple[str, str]] = []
    for round_ in range(1, ROUNDS + 1):
        facts += chat_and_compress(agent, random.Random(round_), len(facts), per_turn=2)
    tip = agent.session_id

    undone = agent.undo(TURNS_PER_ROUND + 1)  # into what the last summary read

    assert undone and agent.session_id != tip  # the context was made again
    agent.chat("What next?")
    kept = facts[: -2 * (TURNS_PER_ROUND + 1)]
    assert out_of_reach(agent, fake_llm, kept) == []
    request = str(fake_llm.requests[-1]["messages"])
    assert not any(handle in request for handle, _ in facts[len(kept) :])
    assert db.coverage_violations() == []


def chat_and_compress(
    agent: Any, rng: random.Random, first: int, per_turn: int = FACTS_PER_TURN
) -> list[tuple[str, str]]:
    """One round: turns that each plant facts, then a compression; the facts."""
    facts: list[tuple[str, str]] = []
    for _ in range(TURNS_PER_ROUND):
        turn = first + len(facts)
        said = planted(rng, turn, per_turn)
        facts += said
        notes = " ".join(f"Commit {h} shipped with {fact}." for h, fact in said)
        agent.chat(f"Turn {turn}. {notes} " + "Padding words to give it weight. " * 30)
    outcome = agent.compress_now()
    assert outcome.rotated, outcome.reason
    return facts


def out_of_reach(agent: Any, llm: fake.FakeLLMServer, facts: list[tuple[str, str]]) -> list[str]:
    """The facts neither in the last request nor returned by one ``recall`` of their
    handle shown in it."""
    request = str(llm.requests[-1]["messages"])
    return [
        fact
        for handle, fact in facts
        if fact not in request and not (handle in request and fact in recall(agent, handle))
    ]


def recall(agent: Any, query: str) -> str:
    context = ToolContext(
        session_db=agent.binding.session_db,
        session_id=agent.session_id,
        conversation_id=agent.binding.conversation_id,
        hermes_home=agent.hermes_home,
        config=agent.config,
        cwd=agent.cwd,
    )
    return str(agent.toolbox.registry.dispatch("recall", {"query": query}, context))
