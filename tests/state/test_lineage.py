"""The chain of segments: tips, lineage and the logical conversation (invariants 4, 9)."""

from __future__ import annotations

import pytest

from hermes.state import SessionDB, SessionNotFoundError

from .helpers import SUMMARY, chain, contents, rotate


def test_a_fresh_conversation_is_its_own_tip(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    assert db.resolve_tip("root") == "root"
    assert db.get_lineage("root") == ["root"]


def test_any_id_of_a_long_chain_resolves_to_the_tip(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    ids = chain(db, "root", 30)
    for sid in ids:
        assert db.resolve_tip(sid) == ids[-1]
        assert db.get_lineage(sid) == ids
    segments = db.get_segments(ids[5])
    assert [s["id"] for s in segments] == ids
    assert [s["lineage"] for s in segments] == ["root"] + ["compression"] * 29
    assert all(s["conversation_id"] == "root" for s in segments)
    assert [s["parent_session_id"] for s in segments[1:]] == ids[:-1]


def test_resolution_of_unknown_ids_raises(db: SessionDB) -> None:
    with pytest.raises(SessionNotFoundError):
        db.resolve_tip("ghost")
    with pytest.raises(SessionNotFoundError):
        db.get_lineage("ghost")


def test_resolve_tip_of_a_conversation_ended_for_another_reason_is_its_last_segment(
    db: SessionDB,
) -> None:
    db.create_session("root", source="cli")
    child = rotate(db, "root")
    db.end_session(child, "user_exit")
    assert db.resolve_tip("root") == child


def test_branches_are_never_followed(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    db.append_message("root", "user", "shared start")
    branch = db.branch_session("root")
    # The origin keeps its own chain; a branch is not a compression child.
    child = rotate(db, "root")
    assert db.resolve_tip("root") == child
    assert db.get_lineage("root") == ["root", child]
    assert db.resolve_tip(branch) == branch
    assert db.get_lineage(branch) == [branch]
    # Rotating the branch never moves the origin either.
    branch_child = rotate(db, branch)
    assert db.resolve_tip(branch) == branch_child
    assert db.resolve_tip("root") == child
    assert db.append_message(branch, "user", "x").session_id == branch_child
    assert db.invariant_violations() == []


def test_a_branch_taken_from_an_ended_segment_never_receives_its_writes(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    db.append_message("root", "user", "start")
    child = rotate(db, "root")
    branch = db.branch_session("root")
    assert db.append_message("root", "user", "late").session_id == child
    assert contents(db.get_messages(branch)) == ["start"]


def test_conversation_messages_show_each_original_once(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    history = [{"role": "user", "content": f"m{n}", "message_uid": f"u{n}"} for n in range(6)]
    db.append_messages("root", history[:4])
    watermark = db.last_message_id("root")
    db.append_messages("root", history[4:])  # written while the summary was being made
    kept_tail = [history[3]]
    child = rotate(db, "root", messages=[SUMMARY, *kept_tail], watermark=watermark)
    db.append_message(child, "assistant", "after")
    # The child holds the compacted context and the carried-over late messages...
    assert contents(db.get_messages(child)) == [SUMMARY["content"], "m3", "m4", "m5", "after"]
    assert [m["compacted"] for m in db.get_messages(child)] == [True] * 4 + [False]
    # ...but the logical conversation shows every original exactly once, in order.
    logical = db.get_conversation_messages(child)
    assert contents(logical) == [f"m{n}" for n in range(6)] + ["after"]
    assert db.get_conversation_messages("root") == logical


def test_paged_iteration_equals_the_whole(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    db.append_messages("root", [{"role": "user", "content": f"a{n}"} for n in range(7)])
    child = rotate(db, "root")
    db.append_messages(child, [{"role": "user", "content": f"b{n}"} for n in range(5)])
    whole = db.get_conversation_messages("root")
    assert list(db.iter_conversation_messages("root", page=2)) == whole
    with_summaries = contents(db.iter_conversation_messages(child, include_summaries=True, page=3))
    assert with_summaries == [f"a{n}" for n in range(7)] + [SUMMARY["content"]] + [
        f"b{n}" for n in range(5)
    ]


def test_segment_messages_list_compacted_context_first(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    db.append_message("root", "user", "q")
    child = rotate(db, "root", messages=[SUMMARY, {"role": "user", "content": "tail"}])
    db.append_message(child, "assistant", "a")
    rows = db.get_messages(child)
    assert contents(rows) == [SUMMARY["content"], "tail", "a"]
    assert [r["session_id"] for r in rows] == [child] * 3
