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


def planted(rng: random.Random, turn: int) -> list[tuple[str, str]]:
    """(handle, fact): a commit hash the user names, and a plain phrase said with it
    that no anchor index picks out (reachable only through the hash)."""
    return [
        (f"{rng.getrandbits(160):040x}", f"codeword {' '.join(rng.sample(WORDS, 3))} {turn}-{n}")
        for n in range(FACTS_PER_TURN)
    ]


def test_every_fact_stays_within_one_recall_after_every_compression(
    make_db: DBFactory, fake_llm: fake.FakeLLMServer
) -> None:
    fake_llm.responder = responder
    db = make_db()
    agent = fake_agent(fake_llm, db, skip_memory=True, tools=["recall"])
    rng = random.Random(55)
    facts: list[tuple[str, str]] = []
    turn = 0
    for round_ in range(1, ROUNDS + 1):
        for _ in range(TURNS_PER_ROUND):
            said = planted(rng, turn)
            facts += said
            notes = " ".join(f"Commit {h} shipped with {fact}." for h, fact in said)
            agent.chat(f"Turn {turn}. {notes} " + "Padding words to give it weight. " * 30)
            turn += 1
        outcome = agent.compress_now()
        assert outcome.rotated, outcome.reason
        agent.chat("What next?")
        request = str(fake_llm.requests[-1]["messages"])
        lost = [
            fact
            for handle, fact in facts
            if fact not in request and not (handle in request and fact in recall(agent, handle))
        ]
        assert lost == [], f"after compression {round_}: {len(lost)} of {len(facts)} lost"
        assert db.coverage_violations() == []


def recall(agent: Any, query: str) -> str:
    context = ToolContext(
        session_db=agent.session_db,
        session_id=agent.session_id,
        conversation_id=agent.conversation_id,
        hermes_home=agent.hermes_home,
        config=agent.config,
        cwd=agent.cwd,
    )
    return str(agent.registry.dispatch("recall", {"query": query}, context))
