"""The model's context is as lossless as the store (issue 11, invariants 11, 14, 15).

Real SQLite files, real agents, the fake model over HTTP in provider-strict mode: a
request a provider would refuse is refused here too, and counted.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hermes.agent.summariser import Summariser, is_summary_message
from hermes.state import SessionDB
from hermes.state.context import wellformed
from hermes.state.context.wellformed import INTERRUPTED_RESULT
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake
from tests.state.helpers import tool_call as _call
from tests.state.helpers import tool_result as _result


@pytest.fixture(autouse=True)
def small_window(hermes_home: Path) -> None:
    """A window small enough that these conversations have a middle to summarise."""
    (hermes_home / "config.yaml").write_text("model:\n  context_length: 2000\n")


@pytest.fixture
def strict_llm(fake_llm: fake.FakeLLMServer) -> fake.FakeLLMServer:
    fake_llm.strict_context = True
    return fake_llm


def test_a_tool_call_left_by_a_dead_turn_is_answered_once(
    tmp_path: Path, strict_llm: fake.FakeLLMServer
) -> None:
    """Failure 3: a process killed mid-tool left a call without its result."""
    db = SessionDB(db_path=tmp_path / "state.db")
    sid = db.create_session("CRASHED", source="cli")
    db.append_messages(sid, [{"role": "user", "content": "run it"}, _call("c1")])

    for _ in range(2):  # two later agents load it: the repair is written once
        agent = fake_agent(strict_llm, db, session_id=sid, tools=[])
        assert agent.chat("and now?").startswith("echo:")

    assert strict_llm.stats()["invalid_contexts"] == 0
    results = [m for m in db.get_messages(sid) if m["role"] == "tool"]
    assert [r["content"] for r in results] == [INTERRUPTED_RESULT]


def test_an_event_written_between_a_call_and_its_result_is_sent_after_them(
    tmp_path: Path, strict_llm: fake.FakeLLMServer
) -> None:
    """Failure 1's cause: another writer stored a message while the tool ran."""
    db = SessionDB(db_path=tmp_path / "state.db")
    sid = db.create_session("EVENT", source="cli")
    db.append_messages(
        sid,
        [
            {"role": "user", "content": "run it"},
            _call("c1"),
            {"role": "user", "content": "[process proc_1 finished]"},
            _result("c1", "done"),
        ],
    )
    agent = fake_agent(strict_llm, db, session_id=sid, tools=[])
    agent.chat("so?")
    assert strict_llm.stats()["invalid_contexts"] == 0
    roles = [m["role"] for m in strict_llm.last_request["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user", "user"]


def test_compression_never_splits_a_displaced_tool_pair(
    tmp_path: Path, strict_llm: fake.FakeLLMServer
) -> None:
    """Failure 1: the cut must keep a tail that is valid as a whole."""
    db = SessionDB(db_path=tmp_path / "state.db")
    sid = db.create_session("SPLIT", source="cli")
    rows = []
    for n in range(8):
        rows += [{"role": "user", "content": f"q{n} " + "x" * 400}, _call(f"c{n}")]
        rows += [{"role": "user", "content": f"event {n}"}, _result(f"c{n}", "r" * 400)]
    db.append_messages(sid, rows)
    strict_llm.responder = lambda body: (
        "the summary" if "compact the history" in str(body["messages"][0]["content"]) else None
    )
    agent = fake_agent(strict_llm, db, session_id=sid, tools=[])
    agent.compress_now()

    assert agent.window.last_compression is not None and agent.window.last_compression.rotated
    agent.chat("next")
    assert strict_llm.stats()["invalid_contexts"] == 0
    assert db.coverage_violations() == []


def test_a_stale_agent_never_drops_a_message_it_never_saw(
    tmp_path: Path, fake_llm: fake.FakeLLMServer
) -> None:
    """Failure 2: X loads S1; M is written; Y rotates S1 -> S2 carrying M; X adopts S2
    and compresses its stale view. S3 must still hold M (or a summary that read it)."""
    db = SessionDB(db_path=tmp_path / "state.db")
    sid = db.create_session("S1", source="cli")
    db.append_messages(sid, [{"role": "user", "content": f"m{n} " + "x" * 300} for n in range(10)])
    fake_llm.responder = lambda body: (
        "summary" if "compact the history" in str(body["messages"][0]["content"]) else None
    )
    x = fake_agent(fake_llm, db, session_id=sid, tools=[])
    stale = x.binding.load_history()
    db.append_message(sid, "user", "M: the message X never saw")
    y = fake_agent(fake_llm, db, session_id=sid, tools=[])
    assert y.compress_now().rotated
    s2 = y.session_id
    x.binding.persist({"role": "user", "content": "x-new", "message_uid": "x-new-uid"})
    assert x.session_id == s2  # forwarded and adopted
    stale.append({"role": "user", "content": "x-new", "message_uid": "x-new-uid"})

    out, _ = x._compress_context(stale, "sys")

    assert len(out) < len(stale)
    s3 = x.session_id
    assert s3 != s2
    texts = [m["content"] for m in db.get_messages(s3)]
    assert "M: the message X never saw" in texts
    assert db.coverage_violations() == []


def test_a_long_middle_is_summarised_in_pieces_that_each_read_everything(
    fake_llm: fake.FakeLLMServer,
) -> None:
    """Failure 4: nothing is clipped silently; every message reaches the summary model."""
    fake_llm.responder = lambda body: "summary so far"
    agent = fake_agent(fake_llm, None)
    compressor = Summariser(agent.client, model=fake.DEFAULT_MODEL, context_length=2_000)
    messages = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"}]
    for n in range(16):
        messages.append({"role": "user", "content": f"marker{n:02d} " + "w" * 700})
        messages.append({"role": "assistant", "content": f"reply{n:02d}"})
    messages.append({"role": "user", "content": "newest"})

    result = compressor.compress(messages)

    assert result is not messages and any(is_summary_message(m) for m in result)
    sent = "\n".join(str(r["messages"][-1]["content"]) for r in fake_llm.requests)
    assert len(fake_llm.requests) > 1
    kept = "\n".join(str(m["content"]) for m in result)
    for n in range(16):
        assert f"marker{n:02d}" in sent or f"marker{n:02d}" in kept
    assert "omitted" not in sent


def test_a_middle_too_long_for_the_configured_requests_is_summarised_oldest_first(
    fake_llm: fake.FakeLLMServer,
) -> None:
    """A conversation that outgrew max_summary_requests (the soak's summary model was down
    for a while) must still shrink: it once failed every compression for ever."""
    fake_llm.responder = lambda body: "summary"
    agent = fake_agent(fake_llm, None)
    compressor = Summariser(
        agent.client, model=fake.DEFAULT_MODEL, context_length=2_000, max_summary_requests=2
    )
    messages = [{"role": "user", "content": f"m{n:02d} " + "w" * 700} for n in range(40)]
    for n, message in enumerate(messages):
        message["message_uid"] = f"uid-{n:02d}"

    rounds = 0
    while len(messages) > 6:
        before = len(fake_llm.requests)
        result = compressor.compress(messages)
        assert result is not messages, compressor.failure_message()
        assert len(fake_llm.requests) - before <= 2  # never more requests than allowed
        sent = "\n".join(str(r["messages"][-1]["content"]) for r in fake_llm.requests[before:])
        kept = "\n".join(str(m["content"]) for m in result)
        for message in messages:  # each message was read by the summary or is still here
            if is_summary_message(message):
                continue
            marker = message["content"][:3]
            covered = message["message_uid"] in compressor.last_covered_uids
            assert (marker in sent) if covered else (marker in kept), marker
        assert compressor.last_covered_uids  # something was read and can leave the context
        assert not wellformed.problems(result)
        messages, rounds = result, rounds + 1
        assert rounds < 20
    assert rounds > 1  # it took several compressions, each within the limit


def test_a_first_message_too_long_for_the_configured_requests_changes_nothing(
    fake_llm: fake.FakeLLMServer,
) -> None:
    fake_llm.responder = lambda body: "summary"
    agent = fake_agent(fake_llm, None)
    compressor = Summariser(
        agent.client, model=fake.DEFAULT_MODEL, context_length=2_000, max_summary_requests=1
    )
    messages = [{"role": "user", "content": f"m{n} " + "w" * 7_000} for n in range(4)]

    assert compressor.compress(messages) is messages
    assert "max_summary_requests" in (compressor.failure_message() or "")


def test_a_failed_publish_leaves_the_segment_and_the_turn_goes_on(
    tmp_path: Path, fake_llm: fake.FakeLLMServer
) -> None:
    """Smaller defect 2: any store error from the rotation is a failed compression."""
    db = SessionDB(db_path=tmp_path / "state.db")
    sid = db.create_session("PUBLISH", source="cli")
    agent = fake_agent(fake_llm, db, session_id=sid, tools=[])

    class InvalidChild(Summariser):
        def compress(self, messages, **_kw):  # a child the store must refuse
            self.last_covered_uids = frozenset()
            return [_result("nobody-called", "orphan")]

    agent.window.compressor = InvalidChild(agent.client, model="m", context_length=1_000)
    messages = [{"role": "user", "content": f"m{n}"} for n in range(4)]

    out, _ = agent._compress_context(messages, "sys")

    assert out is messages
    assert agent.session_id == sid
    assert db.get_lineage(sid) == [sid]
    assert db.get_compression_lock_holder(sid) is None
    assert "could not be saved" in agent.window.last_compression.reason
    assert agent.window.compressor.in_cooldown()


def test_turns_of_one_conversation_never_interleave_between_threads(
    tmp_path: Path, fake_llm: fake.FakeLLMServer
) -> None:
    """Invariant 11 for every surface: two agents, two threads, one conversation."""
    fake_llm.latency = 0.05
    db = SessionDB(db_path=tmp_path / "state.db")
    sid = db.create_session("TURNS", source="cli")
    agents = [fake_agent(fake_llm, db, session_id=sid, tools=[]) for _ in range(3)]

    def talk(agent, name: str) -> None:
        for n in range(4):
            agent.chat(f"{name}-{n}")

    threads = [threading.Thread(target=talk, args=(a, f"a{i}")) for i, a in enumerate(agents)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    rows = db.get_messages(sid)
    assert len(rows) == 24
    for question, answer in zip(rows[::2], rows[1::2], strict=True):
        assert question["role"] == "user" and answer["role"] == "assistant"
        assert answer["content"] == f"echo: {question['content']}"


def test_a_partial_summary_rotates_with_full_coverage_in_the_store(
    tmp_path: Path, fake_llm: fake.FakeLLMServer
) -> None:
    fake_llm.responder = lambda body: "summary"
    db = SessionDB(db_path=tmp_path / "state.db")
    sid = db.create_session("PARTIAL", source="cli")
    for n in range(40):
        db.append_message(sid, "user" if n % 2 == 0 else "assistant", f"m{n:02d} " + "w" * 700)
    agent = fake_agent(fake_llm, db, session_id=sid, tools=[])
    agent.window.compressor.context_length = 2_000
    agent.window.compressor.max_summary_requests = 2

    assert agent.compress_now().rotated
    assert agent.compress_now().rotated  # and again: the unread rest is still compressible

    assert db.coverage_violations() == []
    assert db.invariant_violations() == []
    assert len(db.get_lineage(agent.session_id)) == 3
