"""The user's incident, in our own tests: two paths compress one session at once.

A main turn and a background-review fork share a session id and both reach
``_compress_context`` together. Exactly one may rotate; the other returns its input
list object unchanged without calling the compressor; the lease is free afterwards.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from hermes.agent import AIAgent
from hermes.state import SessionDB


class SlowCompressor:
    """Stands in for the summary model: deterministic output after a pause."""

    def __init__(self, pause: float = 0.25) -> None:
        self.pause = pause
        self.calls = 0
        self.compression_count = 0
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self._last_summary_error = None
        self._last_compress_aborted = False
        self._last_aux_model_failure_model = None
        self._last_aux_model_failure_error = None

    def compress(self, messages, *, current_tokens=None, focus_topic=None):
        self.calls += 1
        time.sleep(self.pause)
        return [
            {"role": "user", "content": "[CONTEXT COMPACTION] summary"},
            {"role": "user", "content": "tail"},
        ]


def make_agent(db: SessionDB, session_id: str, pause: float = 0.25) -> AIAgent:
    agent = AIAgent(
        api_key="test-key",
        base_url="http://127.0.0.1:9/v1",  # never contacted: the compressor is local
        model="test/model",
        quiet_mode=True,
        session_db=db,
        session_id=session_id,
        skip_context_files=True,
        skip_memory=True,
    )
    agent.window.compressor = SlowCompressor(pause)
    return agent


def children_of(db: SessionDB, parent: str) -> list[str]:
    rows = db._conn.execute(
        "SELECT id FROM sessions WHERE parent_session_id = ?", (parent,)
    ).fetchall()
    return [r["id"] for r in rows]


@pytest.mark.parametrize("round_", range(10))
def test_two_agents_compressing_one_session_fork_nothing(tmp_path: Path, round_: int) -> None:
    db = SessionDB(db_path=tmp_path / "state.db")
    parent = db.create_session("PARENT", source="discord")
    agents = [make_agent(db, parent), make_agent(db, parent)]
    messages = [{"role": "user", "content": f"m{i}"} for i in range(20)]
    results: dict[int, tuple] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = agents[i]._compress_context(messages, "sys", approx_tokens=120_000)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)

    assert not errors
    assert len(children_of(db, parent)) == 1
    assert sum(a.session_id != parent for a in agents) == 1
    loser = next(i for i, a in enumerate(agents) if a.session_id == parent)
    assert results[loser][0] is messages
    assert db.get_compression_lock_holder(parent) is None
    winner = agents[1 - loser]
    assert winner.session_id == children_of(db, parent)[0]
    assert db.resolve_tip(parent) == winner.session_id


def test_the_loser_returns_its_input_and_never_calls_the_compressor(tmp_path: Path) -> None:
    db = SessionDB(db_path=tmp_path / "state.db")
    parent = db.create_session("LOSER", source="discord")
    assert db.try_acquire_compression_lock(parent, "external_holder") is True
    agent = make_agent(db, parent)
    messages = [{"role": "user", "content": "m1"}, {"role": "user", "content": "m2"}]

    compressed, system = agent._compress_context(messages, "sys", approx_tokens=120_000)

    assert compressed is messages
    assert system == "sys"
    assert agent.session_id == parent
    assert agent.window.compressor.calls == 0
    assert "external_holder" in agent.window.last_compression.reason


def test_a_stale_session_id_is_not_rotated_again(tmp_path: Path) -> None:
    db = SessionDB(db_path=tmp_path / "state.db")
    parent = db.create_session("STALE", source="cli")
    first = make_agent(db, parent, pause=0)
    messages = [{"role": "user", "content": f"m{i}"} for i in range(6)]
    first._compress_context(messages, "sys")
    late = make_agent(db, parent, pause=0)

    out, _ = late._compress_context(messages, "sys")

    assert out is messages
    assert late.window.compressor.calls == 0
    # Only the call that rotates moves an agent (issue 11): the late one keeps its
    # id and follows the tip at its next store access.
    assert late.session_id == parent
    late.binding.ensure_session()
    assert late.session_id == first.session_id
    assert len(children_of(db, parent)) == 1
    assert db.get_compression_lock_holder(parent) is None


def test_a_failed_summary_changes_nothing(tmp_path: Path) -> None:
    db = SessionDB(db_path=tmp_path / "state.db")
    parent = db.create_session("FAILS", source="cli")
    db.append_message(parent, "user", "hello")
    agent = make_agent(db, parent, pause=0)

    def broken(messages, **_kw):
        agent.window.compressor._last_summary_error = "HTTP 500"
        agent.window.compressor._last_aux_model_failure_model = "summary/model"
        return messages

    agent.window.compressor.compress = broken
    messages = [{"role": "user", "content": f"m{i}"} for i in range(6)]

    out, _ = agent._compress_context(messages, "sys")

    assert out is messages
    assert agent.session_id == parent
    assert db.get_session(parent)["ended_at"] is None
    assert children_of(db, parent) == []
    assert [m["content"] for m in db.get_messages(parent)] == ["hello"]
    assert "summary/model" in agent.window.last_compression.reason
    assert db.get_compression_lock_holder(parent) is None


def test_a_message_written_by_another_path_during_the_snapshot_is_carried_over(
    tmp_path: Path,
) -> None:
    db = SessionDB(db_path=tmp_path / "state.db")
    parent = db.create_session("SNAP", source="gateway")
    for i in range(6):
        db.append_message(parent, "user" if i % 2 == 0 else "assistant", f"m{i}")
    agent = make_agent(db, parent, pause=0)
    snapshot = agent.binding.load_history()
    # Another process writes after our snapshot but before our watermark is read.
    db.append_message(parent, "user", "written elsewhere")

    out, _ = agent._compress_context(snapshot, "sys")

    child = agent.session_id
    assert child != parent and len(out) == 2
    copies = [m for m in db.get_messages(child) if m["content"] == "written elsewhere"]
    assert len(copies) == 1 and copies[0]["compacted"]
    logical = [m["content"] for m in db.get_conversation_messages(child)]
    assert logical.count("written elsewhere") == 1
    # The agent's next history is the child's, with the late message in it.
    assert "written elsewhere" in [m["content"] for m in agent.binding.load_history()]
