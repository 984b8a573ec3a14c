"""The background review sends nothing the user took back while it ran (invariant 16).

The review is a fork holding a snapshot of the conversation. The user tells a secret,
the turn ends and the review asks the model; while that request is held, the turn is
undone (by this agent's ``/undo``, or by another process writing the store). No request
the model receives after that carries the secret, the review saves nothing from its
answer, and it ends withdrawn, not failed; on both stores.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from hermes.agent import review
from hermes.agent.commands import dispatch
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake
from tests.stores import DBFactory

SECRET = "4711"


class HeldReview:
    """The fake model: the review's first request is answered only once the test says
    the undo happened, with ``reply`` (a memory call quoting the secret by default)."""

    def __init__(self, reply: fake.Reply | None = None) -> None:
        self.asked = threading.Event()
        self.undone = threading.Event()
        self.reply = reply or fake.tool_call(
            "memory", {"action": "add", "target": "user", "content": f"PIN {SECRET}"}
        )

    def __call__(self, body: dict[str, Any]) -> fake.Reply:
        if review.HARNESS_PROMPT not in fake.last_user_text(body):
            return fake.text("noted")
        if self.asked.is_set():  # a later request of the review: it should never come
            return fake.text("saved")
        self.asked.set()
        self.undone.wait(30)
        return self.reply


@pytest.fixture(autouse=True)
def config(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(
        "agent:\n  review_interval: 1\nmodel:\n  max_retries: 2\n"
    )


def review_held_over_an_undo(
    fake_llm: fake.FakeLLMServer, make_db: DBFactory, model: HeldReview, how: str
) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    """Tell the secret, hold the review's request, undo the turn ``how``, let the review
    go on; returns how many requests the model had received when the undo was done,
    and the agent's events."""
    fake_llm.responder = model
    events: list[tuple[str, dict[str, Any]]] = []
    agent = fake_agent(
        fake_llm, make_db(), event_callback=lambda kind, data: events.append((kind, data))
    )
    agent.chat(f"my PIN is {SECRET}, keep it secret")
    assert model.asked.wait(30)
    if how == "here":
        assert dispatch(agent, "/undo").ok
    else:  # another process: a store handle of its own marks the turn
        other = make_db()
        rows = other.get_conversation_messages(agent.session_id)
        assert other.mark_undone(agent.session_id, [r["id"] for r in rows]) == 2
    received = len(fake_llm.requests)
    model.undone.set()
    for thread in agent.review_threads:
        thread.join(timeout=30)
        assert not thread.is_alive()
    return received, events


@pytest.mark.parametrize("how", ["here", "elsewhere"])
def test_a_review_sends_and_saves_nothing_undone_while_it_ran(
    fake_llm: fake.FakeLLMServer, make_db: DBFactory, hermes_home: Path, how: str
) -> None:
    received, events = review_held_over_an_undo(fake_llm, make_db, HeldReview(), how)

    assert SECRET not in json.dumps(fake_llm.requests[received:])
    memory = hermes_home / "memories" / "USER.md"
    assert not memory.exists() or SECRET not in memory.read_text()
    outcome = [data for kind, data in events if kind == "review"]
    assert outcome and outcome[0]["error"] is None and outcome[0]["saved"] == 0
    assert "withdrawn" in outcome[0]["summary"]


def test_a_review_does_not_retry_a_request_the_user_took_back(
    fake_llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    model = HeldReview(reply=fake.server_error(503))
    received, events = review_held_over_an_undo(fake_llm, make_db, model, "elsewhere")

    assert SECRET not in json.dumps(fake_llm.requests[received:])
    assert [d["summary"] for k, d in events if k == "review"][0].startswith("withdrawn")
