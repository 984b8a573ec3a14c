"""AIAgent turns end to end: the real openai client talks to the fake server over HTTP,
the transcript lands in a real SQLite store."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from hermes.agent import AIAgent
from hermes.agent.errors import ModelAuthError
from hermes.config import load_config
from hermes.state import SessionDB
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake


def write_config(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")


def make_agent(server, db, **kwargs) -> AIAgent:
    kwargs.setdefault("skip_memory", True)
    return fake_agent(server, db, **kwargs)


@pytest.fixture
def db(tmp_path: Path):
    with SessionDB(db_path=tmp_path / "state.db") as store:
        yield store


def stored(db: SessionDB, session_id: str) -> list[tuple[str, str | None]]:
    return [(m["role"], m["content"]) for m in db.get_messages(session_id)]


def test_a_turn_with_tool_calls_is_persisted_exactly_once(fake_llm, db, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    fake_llm.script(
        fake.tool_call("read_file", {"path": "notes.txt"}),
        fake.text("It says 42."),
        fake.text("You're welcome."),
    )
    agent = make_agent(fake_llm, db, cwd=tmp_path)

    first = agent.run("What is in notes.txt?")
    second = agent.run("Thanks")

    assert first.answer == "It says 42."
    assert second.answer == "You're welcome."
    assert first.session_id == second.session_id == agent.session_id
    rows = db.get_messages(agent.session_id)
    assert [r["role"] for r in rows] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert "42" in rows[2]["content"]
    assert rows[1]["tool_calls"][0]["function"]["name"] == "read_file"
    uids = [r["message_uid"] for r in rows]
    assert len(set(uids)) == len(uids)
    # The second request carried the whole history, the tool result included.
    sent = fake_llm.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]


def test_replaying_a_history_writes_nothing_twice(fake_llm, db) -> None:
    agent = make_agent(fake_llm, db)
    result = agent.run("hello")
    before = len(db.get_messages(agent.session_id))

    again = make_agent(fake_llm, db, session_id=agent.session_id)
    again.run("once more", conversation_history=result.messages)

    rows = db.get_messages(agent.session_id)
    assert len(rows) == before + 2
    assert Counter(r["message_uid"] for r in rows).most_common(1)[0][1] == 1


def test_an_undo_by_another_handle_leaves_a_kept_agents_context(fake_llm, db, tmp_path) -> None:
    """Another gateway's /undo or response DELETE changes no row count: the cache must
    still see it, or the undone turn goes on being sent to the model."""
    agent = make_agent(fake_llm, db)
    agent.run("keep this")
    agent.run("forget this")
    with SessionDB(db_path=db.location) as other:
        rows = other.get_messages(agent.session_id)
        other.mark_undone(agent.session_id, [r["id"] for r in rows[-2:]])
    agent.run("what is left?")
    sent = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == ["keep this", "echo: keep this", "what is left?"]


def test_the_system_prompt_is_stored_and_byte_stable_for_the_segment(fake_llm, db) -> None:
    agent = make_agent(fake_llm, db)
    agent.run("one")
    agent.run("two")
    prompts = {r["messages"][0]["content"] for r in fake_llm.requests}
    assert len(prompts) == 1
    assert db.get_session(agent.session_id)["system_prompt"] == prompts.pop()


def test_token_usage_is_recorded_on_the_segment(fake_llm, db) -> None:
    fake_llm.script(fake.text("hi", prompt_tokens=123, completion_tokens=7))
    agent = make_agent(fake_llm, db)
    agent.run("hello")
    segment = db.get_session(agent.session_id)
    assert (segment["input_tokens"], segment["output_tokens"]) == (123, 7)


def compressing_responder(body: dict):
    text = str(body.get("messages"))
    if "summar" in text.lower() and not body.get("tools"):
        return fake.text("SUMMARY OF EARLIER TURNS")
    return fake.text("x" * 400)


def test_automatic_compression_rotates_and_loses_nothing(fake_llm, db, hermes_home: Path) -> None:
    write_config(hermes_home, "model:\n  context_length: 1200\ncompression:\n  threshold: 0.5\n")
    fake_llm.responder = compressing_responder
    agent = make_agent(fake_llm, db)
    root = None
    for i in range(8):
        agent.run(f"question {i} " + "y" * 300)
        root = root or db.get_lineage(agent.session_id)[0]

    chain = db.get_lineage(agent.session_id)
    assert len(chain) >= 2, "the conversation never compressed"
    assert chain[0] == root and chain[-1] == agent.session_id
    child = db.get_messages(chain[1])
    assert all(row["compacted"] for row in child[:3])
    assert any("SUMMARY OF EARLIER TURNS" in (row["content"] or "") for row in child[:3])
    # The parent keeps its whole transcript; the logical conversation has every turn once.
    logical = [m["content"] for m in db.get_conversation_messages(agent.session_id)]
    questions = [c for c in logical if c and c.startswith("question")]
    assert questions == [f"question {i} " + "y" * 300 for i in range(8)]
    assert db.invariant_violations() == []


def test_a_failing_summary_model_changes_nothing_and_says_which(fake_llm, db, hermes_home) -> None:
    write_config(
        hermes_home,
        "model:\n  context_length: 1200\n  max_retries: 0\n"
        "compression:\n  summary_model: broken-summariser\n",
    )

    def responder(body):
        if body.get("model") == "broken-summariser":
            return fake.server_error(500)
        return fake.text("fine")

    fake_llm.responder = responder
    agent = make_agent(fake_llm, db)
    for letter in "abcd":
        agent.run(letter * 800)

    assert len(db.get_lineage(agent.session_id)) == 1
    assert any(r.get("model") == "broken-summariser" for r in fake_llm.requests)
    assert agent.window.compressor.in_cooldown()
    assert "broken-summariser" in (agent.window.compressor.failure_message() or "")
    assert [r for r, _ in stored(db, agent.session_id)].count("user") == 4


def test_a_stale_session_id_follows_the_tip(fake_llm, db) -> None:
    parent = db.create_session(source="cli")
    db.append_message(parent, "user", "first")
    holder = "other-host:pid=1:agent=x"
    assert db.try_acquire_compression_lock(parent, holder)
    tip = db.publish_compression_child(
        parent, holder=holder, messages=[{"role": "user", "content": "[CONTEXT COMPACTION] s"}]
    )
    db.release_compression_lock(parent, holder)

    stale = make_agent(fake_llm, db, session_id=parent)
    stale.run("are you there?")

    assert stale.session_id == tip
    assert "are you there?" not in [c for _, c in stored(db, parent)]
    assert "are you there?" in [c for _, c in stored(db, tip)]


def test_a_write_forwarded_mid_turn_is_adopted(fake_llm, db) -> None:
    agent = make_agent(fake_llm, db)
    agent.run("hello")
    parent = agent.session_id
    holder = "elsewhere:pid=1:agent=y"
    db.try_acquire_compression_lock(parent, holder)
    child = db.publish_compression_child(
        parent, holder=holder, messages=[{"role": "user", "content": "s"}]
    )

    agent.binding.persist({"role": "user", "content": "late", "message_uid": "late-1"})

    assert agent.session_id == child
    assert ("user", "late") in stored(db, child)


def test_malformed_tool_json_unknown_tools_and_empty_answers_are_told_to_the_model(fake_llm, db):
    fake_llm.script(
        fake.malformed_tool_call("read_file", '{"path": '),
        fake.tool_call("no_such_tool", {}),
        fake.empty(),
        fake.text("recovered"),
    )
    agent = make_agent(fake_llm, db)
    result = agent.run("go")

    assert result.answer == "recovered"
    tool_results = [m["content"] for m in result.messages if m["role"] == "tool"]
    assert len(tool_results) == 2 and all(t.startswith("Error") for t in tool_results)
    assert "no_such_tool" in tool_results[1]


def test_rate_limits_and_server_errors_are_retried_within_a_turn(fake_llm, db) -> None:
    fake_llm.script(fake.rate_limited(0.01), fake.server_error(503), fake.text("made it"))
    agent = make_agent(fake_llm, db)
    agent.client.backoff_base = 0.01
    assert agent.chat("hi") == "made it"
    assert len(fake_llm.requests) == 3


def test_a_context_length_error_compresses_once_and_retries(fake_llm, db) -> None:
    agent = make_agent(fake_llm, db)
    for i in range(4):
        fake_llm.script(fake.text(f"answer {i} " + "z" * 200))
        agent.run(f"turn {i} " + "w" * 200)
    fake_llm.script(fake.context_length_exceeded(900), fake.text("SUMMARY"), fake.text("after"))

    assert agent.chat("one more") == "after"
    assert len(db.get_lineage(agent.session_id)) == 2


def test_authentication_errors_fail_at_once_with_a_sentence(fake_llm, db) -> None:
    fake_llm.script(fake.auth_error())
    agent = make_agent(fake_llm, db)
    with pytest.raises(ModelAuthError) as info:
        agent.chat("hi")
    assert fake_llm.url.split("/v1")[0] in str(info.value) or "401" in str(info.value)
    assert len(fake_llm.requests) == 1
    assert stored(db, agent.session_id) == [("user", "hi")]  # stored on arrival


def test_interrupt_stops_a_streaming_turn(fake_llm, db) -> None:
    fake_llm.script(fake.stall("one two three four", after_chunks=3, seconds=20))
    pieces: list[str] = []
    agent = make_agent(fake_llm, db, stream_callback=pieces.append)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(outcome=agent.run("talk")))
    worker.start()
    deadline = time.monotonic() + 10
    while not pieces and time.monotonic() < deadline:
        time.sleep(0.01)
    agent.interrupt()
    worker.join(timeout=10)

    assert not worker.is_alive()
    assert result["outcome"].interrupted is True
    assert pieces  # text arrived before the interrupt
    assert stored(db, agent.session_id) == [("user", "talk")]
    fake_llm.script(fake.text("back"))
    assert agent.chat("again") == "back"  # the next turn works


def test_streaming_delivers_text_as_it_arrives(fake_llm, db) -> None:
    fake_llm.script(fake.text("alpha beta gamma"))
    pieces: list[str] = []
    agent = make_agent(fake_llm, db, stream_callback=pieces.append)
    assert agent.chat("hi") == "alpha beta gamma"
    assert len(pieces) > 1 and "".join(pieces) == "alpha beta gamma"


def test_an_agent_without_a_store_compresses_in_memory(fake_llm, hermes_home) -> None:
    write_config(hermes_home, "model:\n  context_length: 1200\n")
    agent = AIAgent(
        api_key="k",
        base_url=fake_llm.url,
        model=fake.DEFAULT_MODEL,
        skip_context_files=True,
        skip_memory=True,
        config=load_config(),
    )
    fake_llm.script(fake.text("SUMMARY"))
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "q" * 300}
        for i in range(12)
    ]
    out, system = agent._compress_context(messages, "sys")
    assert len(out) < len(messages)
    assert system == "sys" and agent.session_id is None


def test_construction_makes_no_request_and_writes_nothing(fake_llm, tmp_path: Path) -> None:
    db = SessionDB(db_path=tmp_path / "s.db")
    AIAgent(api_key="k", base_url=fake_llm.url, model="m", session_db=db, session_id="X")
    assert fake_llm.requests == []
    assert db.get_session("X") is None
    db.close()


def test_undo_reaches_a_turn_compressed_into_the_child(fake_llm, db) -> None:
    agent = make_agent(fake_llm, db)
    agent.run("keep me")
    agent.run("undo me")
    parent = agent.session_id
    holder = "h:pid=1:agent=z"
    db.try_acquire_compression_lock(parent, holder)
    context = [{**m} for m in agent.binding.load_history()]
    db.publish_compression_child(parent, holder=holder, messages=context)
    agent.binding.follow_tip()

    undone = agent.undo(1)

    assert [m["content"] for m in undone][0] == "undo me"
    assert "undo me" not in [m["content"] for m in agent.binding.load_history()]
    assert "keep me" in [m["content"] for m in agent.binding.load_history()]
    logical = {m["content"]: m["undone"] for m in db.get_conversation_messages(parent)}
    assert logical["undo me"] is True and logical["keep me"] is False


def test_a_turn_rebound_to_another_conversation_waits_for_that_conversations_lock(
    fake_llm, db
) -> None:
    # The agent knows the conversation of a segment it has seen; bound to a segment of
    # another conversation, its next turn must find that one's and take its lock.
    fake_llm.script(fake.text("first"), fake.text("second"))
    agent = make_agent(fake_llm, db)
    agent.run("hello")
    other = db.create_session(None, source="cli")
    other_conversation = db.get_session(other)["conversation_id"]
    waiting = threading.Event()
    agent.event_callback = lambda kind, data: kind == "turn_waiting" and waiting.set()
    agent.session_id = other
    assert db.gateway.try_lock_turn(other_conversation)  # another turn runs there
    turn = threading.Thread(target=agent.run, args=("over here",))
    try:
        turn.start()
        assert waiting.wait(10)
        assert stored(db, other) == []
    finally:
        db.gateway.unlock_turn(other_conversation)
        turn.join(10)
    assert stored(db, other) == [("user", "over here"), ("assistant", "second")]


def test_a_turn_reads_its_tip_and_history_stamp_in_one_read_transaction(fake_llm, db) -> None:
    # Before its first write a kept agent's turn needs the tip (it may have moved) and
    # the tip's stamp (is the history cache still valid?): one read, not two.
    fake_llm.script(fake.text("one"), fake.text("two"))
    agent = make_agent(fake_llm, db)
    agent.run("first")  # warm: the history is cached now
    statements: list[str] = []
    connections = [db._conn, *db.backend._shared.idle]
    for connection in connections:
        connection.set_trace_callback(statements.append)
    try:
        assert agent.run("second").answer == "two"
    finally:
        for connection in connections:
            connection.set_trace_callback(None)
    before_writing = statements[: statements.index("BEGIN IMMEDIATE")]
    assert [s for s in before_writing if s.startswith("BEGIN")] == ["BEGIN"], before_writing
    assert any("AS undone" in s for s in before_writing), "the stamp was not read"
