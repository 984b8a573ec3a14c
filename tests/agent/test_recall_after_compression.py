"""The way back from a summary, end to end on both stores: after a real compression the
next request to the model carries the anchor index under the summary, and the model's
``recall`` with one of those anchors gets the exact original message of the parent
segment in one call."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.anchors import INDEX_HEADER
from hermes.agent.summariser import is_summary_message
from hermes.tools.recall import PROMPT_LINE
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake
from tests.stores import DBFactory
from tests.transcripts import tool_exchange

LOG = (
    "deploy 9f3b2c4d1e to https://staging.example.net/api\n"
    "psycopg.OperationalError: connection to server at 10.0.3.7:5432 refused\n"
    "note: the staging password rotates every 17 days"
)
PADDING = " with enough words to give the history a middle to summarise" * 5
QUESTION = "what did the billing log say?"


@pytest.fixture(autouse=True)
def config(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(
        "model:\n  context_length: 2000\n  max_retries: 0\n"
        "compression:\n  enabled: false\n  cooldown_seconds: 0\n"
    )


class Model:
    """Summaries say nothing exact; asked QUESTION, the model calls recall with the first
    file anchor of the summary it was sent; other turns are echoed."""

    def __init__(self) -> None:
        self.anchor: str | None = None

    def __call__(self, body: dict[str, Any]) -> fake.Reply | None:
        messages = body["messages"]
        if "compact the history" in str(messages[0]["content"]):
            return fake.text("SUMMARY: the user asked about billing, and a log was read.")
        if messages[-1]["role"] == "user" and messages[-1]["content"] == QUESTION:
            summary = next(m["content"] for m in messages if is_summary_message(m))
            self.anchor = re.findall(r"^files: ([^ \n]+)", summary, re.MULTILINE)[0]
            return fake.tool_call("recall", {"query": self.anchor})
        if messages[-1]["role"] == "tool":
            return fake.text("found it")
        return None


def conversation_with_a_log(make_db: DBFactory, llm: fake.FakeLLMServer) -> Any:
    db = make_db()
    sid = db.create_session("billing-1", source="cli")
    db.append_messages(
        sid,
        [
            {"role": "user", "content": "hello" + PADDING},
            {"role": "assistant", "content": "Hello." + PADDING},
            {"role": "user", "content": "why does billing fail?" + PADDING},
            *tool_exchange("tail /var/log/billing.log", LOG),
            {"role": "assistant", "content": "The database refused the connection." + PADDING},
        ],
    )
    agent = fake_agent(llm, db, session_id=sid, skip_memory=True, tools=["recall"])
    for n in range(4):
        agent.chat(f"turn {n}{PADDING}")
    outcome = agent.compress_now()
    assert outcome.rotated, outcome.reason
    return agent


def test_the_next_request_carries_the_anchors_and_recall_returns_the_original(
    make_db: DBFactory, fake_llm: fake.FakeLLMServer
) -> None:
    fake_llm.strict_context = True
    fake_llm.responder = model = Model()
    agent = conversation_with_a_log(make_db, fake_llm)
    db, root = agent.binding.session_db, agent.binding.conversation_id
    original = next(r for r in db.get_messages(root) if r["role"] == "tool")

    assert agent.chat(QUESTION) == "found it"

    asked = next(
        body for body in fake_llm.requests if body["messages"][-1].get("content") == QUESTION
    )
    summary = next(m["content"] for m in asked["messages"] if is_summary_message(m))
    index = summary[summary.index(INDEX_HEADER) :]
    for anchor in ("/var/log/billing.log", "9f3b2c4d1e", "https://staging.example.net/api"):
        assert anchor in index
    assert "\n- psycopg.OperationalError: connection to server at 10.0.3.7:5432 refused" in index
    assert "Call recall(" in index
    assert LOG not in summary  # the log itself left the context...
    answer = fake_llm.requests[-1]["messages"][-1]
    assert answer["role"] == "tool" and model.anchor == "/var/log/billing.log"
    # ...and one recall brought it back, verbatim, from the parent segment: the call
    # that named the path, then its result.
    call = original["id"] - 1
    assert answer["content"].startswith(
        "1 stored message(s) of this conversation contain '/var/log/billing.log'"
    )
    assert f"--- message {call} · assistant · segment 1 · " in answer["content"]
    heading = f"--- message {original['id']} · tool result of terminal (answers message {call})"
    assert f"{heading} · segment 1 · " in answer["content"]
    assert LOG in answer["content"]
    assert fake_llm.stats()["invalid_contexts"] == 0


def test_the_index_is_the_same_whatever_the_summary_says(
    make_db: DBFactory, fake_llm: fake.FakeLLMServer
) -> None:
    """Same covered rows, same index bytes: two compressions of the same history by two
    agents with different summaries differ only in the summary's words."""
    fake_llm.responder = Model()
    agent = conversation_with_a_log(make_db, fake_llm)
    history = agent.binding.session_db.get_messages(agent.binding.conversation_id)
    context = [
        {k: r[k] for k in ("role", "content", "tool_calls", "tool_call_id")} for r in history
    ]
    for message in context:
        if not message["tool_calls"]:
            del message["tool_calls"]
        if message["role"] != "tool":
            del message["tool_call_id"]
    indexes = []
    for words in ("one summary", "another, longer summary of it"):
        fake_llm.responder = lambda body, w=words: fake.text(w)
        out = agent.window.compressor.compress([{"role": "system", "content": "s"}, *context])
        summary = next(m["content"] for m in out if is_summary_message(m))
        assert words in summary
        indexes.append(summary[summary.index(INDEX_HEADER) :])
    assert indexes[0] == indexes[1] and "/var/log/billing.log" in indexes[0]


def test_the_prompt_describes_recall_only_where_there_is_a_store(
    make_db: DBFactory, fake_llm: fake.FakeLLMServer
) -> None:
    with_store = fake_agent(fake_llm, make_db(), skip_memory=True)
    without = fake_agent(fake_llm, None, skip_memory=True)

    with_store.chat("hello")
    without.chat("hello")

    first, second = fake_llm.requests
    assert PROMPT_LINE in first["messages"][0]["content"]
    assert "recall" in [t["function"]["name"] for t in first["tools"]]
    assert PROMPT_LINE not in second["messages"][0]["content"]
    assert "recall" not in [t["function"]["name"] for t in second["tools"]]
