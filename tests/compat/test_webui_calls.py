"""hermes-webui's in-process calls, as it makes them against Hermes Agent 0.19.

The web UI builds ``run_agent.AIAgent`` with 0.19's keywords (``platform``,
``enabled_toolsets``, ``stream_delta_callback``, ...) and calls ``run_conversation``
with ``system_message``, ``conversation_history`` (the context it kept from the last
result, reduced to the API's keys), ``task_id`` and ``persist_user_message``, then keeps
``result["messages"]`` for the next turn. Real store, real HTTP, the fake model.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hermes_state import SessionDB
from run_agent import AIAgent
from tests.fakes import llm_server as fake

UI_SYSTEM = "You are chatting through the Hermes web UI; answer in Markdown."
API_SAFE_KEYS = {"role", "content", "tool_calls", "tool_call_id", "name", "reasoning_content"}


@pytest.fixture
def db(tmp_path: Path):
    with SessionDB(db_path=tmp_path / "state.db") as store:
        yield store


def webui_agent(server: fake.FakeLLMServer, db: SessionDB, session_id: str, **extra: Any):
    """The agent as hermes-webui's api/streaming.py constructs it (keywords it passes)."""
    tokens: list[str] = []
    return AIAgent(
        model=fake.DEFAULT_MODEL,
        provider=None,
        base_url=server.url,
        api_key="k",
        platform="webui",
        quiet_mode=True,
        enabled_toolsets=extra.pop("enabled_toolsets", ["file", "memory"]),
        fallback_model=None,
        session_id=session_id,
        session_db=db,
        prefill_messages=None,
        stream_delta_callback=tokens.append,
        reasoning_callback=lambda _text: None,
        tool_progress_callback=lambda *_a, **_k: None,
        clarify_callback=lambda _q, _c: "",
        **extra,
    )


def webui_context(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the web UI passes back as ``conversation_history``: the last result's
    messages with the API's keys only (its ``_sanitize_messages_for_api``)."""
    return [{k: v for k, v in m.items() if k in API_SAFE_KEYS} for m in messages]


def send(agent: AIAgent, text: str, context: list[dict[str, Any]]) -> dict[str, Any]:
    return agent.run_conversation(
        user_message=f"[Workspace: /srv/project]\n{text}",
        system_message=UI_SYSTEM,
        conversation_history=webui_context(context),
        task_id=agent.session_id,
        persist_user_message=text,
    )


def test_three_webui_turns_store_each_message_once(
    fake_llm, db, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    fake_llm.script(
        fake.text("Hello from hermes."),
        fake.tool_call("read_file", {"path": "notes.txt"}),
        fake.text("It says 42."),
        fake.text("Bye."),
    )
    agent = webui_agent(fake_llm, db, "webui-1")

    context: list[dict[str, Any]] = []
    for words in ("hello", "what is in notes.txt?", "thanks"):
        result = send(agent, words, context)
        context = result["messages"]

    assert result["final_response"] == "Bye."
    assert result["completed"] is True and result["failed"] is False
    assert result["session_id"] == "webui-1"
    assert result["api_calls"] == 1 and result["input_tokens"] > 0

    rows = db.get_messages("webui-1")
    assert [(r["role"], r["content"]) for r in rows if r["role"] != "tool"] == [
        ("user", "hello"),
        ("assistant", "Hello from hermes."),
        ("user", "what is in notes.txt?"),
        ("assistant", None),
        ("assistant", "It says 42."),
        ("user", "thanks"),
        ("assistant", "Bye."),
    ]
    assert len(rows) == 8  # the tool result is the eighth
    assert max(Counter(r["message_uid"] for r in rows).values()) == 1

    # The UI's system message reached the model after hermes's prompt, every turn; the
    # model got the message with its workspace line, the store the clean text.
    requests = fake_llm.requests
    assert len(requests) == 4
    for body in requests:
        system = body["messages"][0]
        assert system["role"] == "system"
        assert system["content"].endswith(UI_SYSTEM) and system["content"] != UI_SYSTEM
    last_users = [[m for m in b["messages"] if m["role"] == "user"][-1] for b in requests]
    assert last_users[0]["content"] == "[Workspace: /srv/project]\nhello"
    assert last_users[3]["content"] == "[Workspace: /srv/project]\nthanks"
    assert sum(m["role"] == "user" for m in requests[3]["messages"]) == 3

    # Switched-off toolsets (terminal) were never offered to the model.
    offered = {t["function"]["name"] for t in requests[0]["tools"]}
    assert offered == {"read_file", "write_file", "patch", "search_files", "memory"}


def test_a_history_that_differs_is_the_turns_context_and_is_not_stored(fake_llm, db) -> None:
    fake_llm.script(fake.text("one"), fake.text("two"))
    agent = webui_agent(fake_llm, db, "webui-2")
    send(agent, "first", [])

    trimmed = [
        {"role": "user", "content": "something else"},
        {"role": "assistant", "content": "ok"},
    ]
    send(agent, "second", trimmed)

    sent = [(m["role"], m["content"]) for m in fake_llm.requests[-1]["messages"][1:]]
    assert sent == [
        ("user", "something else"),
        ("assistant", "ok"),
        ("user", "[Workspace: /srv/project]\nsecond"),
    ]
    stored = [(r["role"], r["content"]) for r in db.get_messages("webui-2")]
    assert stored == [
        ("user", "first"),
        ("assistant", "one"),
        ("user", "second"),
        ("assistant", "two"),
    ]


def test_a_history_longer_than_the_store_seeds_it_once(fake_llm, db) -> None:
    fake_llm.script(fake.text("answer"), fake.text("again"))
    agent = webui_agent(fake_llm, db, "webui-3")
    earlier = [{"role": "user", "content": "from before"}, {"role": "assistant", "content": "yes"}]

    result = send(agent, "now", earlier)
    send(agent, "and now", result["messages"])

    stored = [(r["role"], r["content"]) for r in db.get_messages("webui-3")]
    assert stored == [
        ("user", "from before"),
        ("assistant", "yes"),
        ("user", "now"),
        ("assistant", "answer"),
        ("user", "and now"),
        ("assistant", "again"),
    ]


def test_disabled_toolsets_are_not_offered(fake_llm, db) -> None:
    fake_llm.script(fake.text("ok"))
    agent = webui_agent(fake_llm, db, "webui-4", enabled_toolsets=None)
    agent_off = AIAgent(
        base_url=fake_llm.url,
        api_key="k",
        model=fake.DEFAULT_MODEL,
        session_db=db,
        disabled_toolsets=["terminal", "file"],
    )
    assert "terminal" in agent.tool_names()
    assert agent_off.tool_names() == [
        "memory",
        "session_search",
        "recall",
        "skill_view",
        "skill_manage",
    ]
    agent_off.run_conversation("hi")
    assert {t["function"]["name"] for t in fake_llm.requests[-1]["tools"]} == {
        "memory",
        "session_search",
        "recall",
        "skill_view",
        "skill_manage",
    }


def test_positional_arguments_follow_hermes_agents_order(fake_llm) -> None:
    agent = AIAgent(fake_llm.url, "the-key", None, None, None, None, None, None, "some/model")
    assert (agent.base_url, agent.api_key, agent.model) == (fake_llm.url, "the-key", "some/model")


def test_the_agents_session_db_is_the_store_given_and_can_be_replaced(
    fake_llm, db, tmp_path
) -> None:
    agent = webui_agent(fake_llm, db, "webui-5")
    assert agent._session_db is db
    with SessionDB(db_path=tmp_path / "other.db") as other:
        agent._session_db = other
        fake_llm.script(fake.text("ok"))
        agent.run_conversation("hi")
        assert [r["content"] for r in other.get_messages("webui-5")] == ["hi", "ok"]


def compressing_responder(body: dict[str, Any]) -> fake.Reply:
    if "summar" in str(body.get("messages")).lower() and not body.get("tools"):
        return fake.text("SUMMARY OF EARLIER TURNS")
    return fake.text("x" * 400)


def test_webui_turns_across_compressions_store_each_message_once(
    fake_llm, db, hermes_home: Path
) -> None:
    (hermes_home / "config.yaml").write_text(
        "model:\n  context_length: 1200\ncompression:\n  threshold: 0.5\n", encoding="utf-8"
    )
    fake_llm.responder = compressing_responder
    agent = webui_agent(fake_llm, db, "webui-6")
    context: list[dict[str, Any]] = []
    questions = [f"question {i} " + "y" * 300 for i in range(8)]
    for words in questions:
        context = send(agent, words, context)["messages"]

    chain = db.get_lineage(agent.session_id)
    assert len(chain) >= 2, "the conversation never compressed"
    originals = db.get_conversation_messages(agent.session_id)
    assert [m["content"] for m in originals if m["role"] == "user"] == questions
    assert len(originals) == 2 * len(questions)
    # What the UI passed back after a rotation was the live segment's context: the next
    # request started from it, summary first, not from the whole history again.
    last = [m["content"] for m in fake_llm.requests[-1]["messages"][1:]]
    assert sum("SUMMARY OF EARLIER TURNS" in (c or "") for c in last) == 1
    assert sum("question" in (c or "") for c in last) < len(questions)
    assert db.invariant_violations() == []


def test_webui_cancels_with_a_message_and_is_told_steering_is_not_taken(fake_llm, db) -> None:
    agent = webui_agent(fake_llm, db, "webui-7")
    assert agent.steer("also check the tests") is False
    agent.interrupt("Cancelled by user")
    assert agent.interrupt_requested
