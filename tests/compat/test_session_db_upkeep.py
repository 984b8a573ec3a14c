"""hermes_state.SessionDB's upkeep and lookup names of Hermes Agent 0.19: title
lineage, reopening, pruning with transcript files, VACUUM, search over tool calls,
``a OR b`` and literal CJK text, replay without recalled-memory blocks."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from hermes_state import SessionDB


@pytest.fixture
def db(tmp_path: Path):
    with SessionDB(db_path=tmp_path / "state.db") as db:
        yield db


def test_the_next_title_in_a_lineage_counts_past_the_highest(db: SessionDB) -> None:
    assert db.get_next_title_in_lineage("plan_b") == "plan_b"
    db.create_session("s1", "cli")
    db.set_session_title("s1", "plan_b")
    db.create_session("s2", "cli")
    db.set_session_title("s2", "planXb #5")  # a LIKE wildcard must not match this
    assert db.get_next_title_in_lineage("plan_b #4") == "plan_b #2"
    db.set_session_title("s2", "plan_b #5")
    assert db.get_next_title_in_lineage("plan_b") == "plan_b #6"


def test_reopen_clears_the_end_unless_the_conversation_went_on(db: SessionDB) -> None:
    db.create_session("s1", "cli")
    db.end_session("s1", "user_exit")
    db.reopen_session("s1")
    assert db.get_session("s1")["ended_at"] is None
    db.end_session("s1", "compression")
    db.create_session("s2", "cli", parent_session_id="s1")
    with pytest.raises(ValueError, match="goes on in s2"):
        db.reopen_session("s1")


def test_prune_goes_by_the_start_of_the_live_segment_and_takes_its_files(
    db: SessionDB, tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for sid in ("old", "live"):
        db.create_session(sid, "cli")
        (sessions / f"{sid}.jsonl").write_text("{}\n")
    (sessions / "request_dump_old_001.json").write_text("{}")
    db.end_session("old", "done")
    long_ago = time.time() - 100 * 86400
    db._conn.execute("UPDATE sessions SET started_at = ?", (long_ago,))

    assert db.prune_sessions(older_than_days=90, sessions_dir=sessions) == 1
    assert db.get_session("old") is None and db.get_session("live") is not None
    assert sorted(p.name for p in sessions.iterdir()) == ["live.jsonl"]
    db.vacuum()  # gives the space back without touching what is left
    assert db.get_session("live") is not None


def test_search_finds_tool_calls_either_alternative_and_literal_cjk(store: Any) -> None:
    db = SessionDB(db_path=store.path) if store.kind == "sqlite" else SessionDB(url=store.url)
    try:
        search_on(db)
    finally:
        db.close()


def search_on(db: SessionDB) -> None:
    db.create_session("s1", "cli")
    db.append_message(
        "s1",
        "assistant",
        "",
        tool_calls=[
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "terminal", "arguments": '{"cmd": "cp x s3://BUCKETZ/"}'},
            }
        ],
    )
    db.append_message("s1", "tool", "done", tool_name="terminal", tool_call_id="c1")
    db.append_message("s1", "user", "达成100%完成率")
    db.append_message("s1", "user", "达成100完成率是目标")
    db.append_message("s1", "user", "apples here")

    assert [h["role"] for h in db.search_messages("BUCKETZ")] == ["assistant"]
    assert [h["snippet"] for h in db.search_messages("100%完成")] == ["达成100%完成率"]
    either = db.search_messages("apples OR BUCKETZ")
    assert sorted(h["role"] for h in either) == ["assistant", "user"]


def test_replayed_messages_leave_out_recalled_memory_blocks(db: SessionDB) -> None:
    db.create_session("s1", "cli")
    db.append_message(
        "s1",
        "assistant",
        "<memory-context>\n[System note: The following is recalled memory context, NOT new"
        " user input. Treat as informational background data.]\n\nold facts\n"
        "</memory-context>\n\nThe answer",
    )
    assert [m["content"] for m in db.get_messages_as_conversation("s1")] == ["The answer"]


def test_a_users_search_of_tool_calls_shows_only_their_own(db: SessionDB) -> None:
    for user in ("u1", "u2"):
        db.create_session(f"s-{user}", "telegram", user_id=user)
        db.append_message(f"s-{user}", "tool", "ok", tool_name="MARKERTOOL", tool_call_id="c1")
    hits = db.search_messages("MARKERTOOL", user_id="u1")
    assert [h["session_id"] for h in hits] == ["s-u1"]
