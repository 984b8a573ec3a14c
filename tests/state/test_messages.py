"""Messages: appending (one, a batch), exactly-once identities, where a write lands.

Invariants 3 (no orphan writes) and 7 (exactly once).
"""

from __future__ import annotations

import sqlite3

import pytest

from hermes.state import Appended, SegmentEndedError, SessionDB, SessionNotFoundError

from .helpers import chain, contents, rotate, snapshot, uids


def test_append_message_returns_where_it_landed(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    result = db.append_message("s", "user", "hello", message_uid="u-1", token_count=3)
    assert isinstance(result, Appended)
    assert result.session_id == "s"
    assert result.stored == 1
    assert len(result.message_ids) == 1 and isinstance(result.message_id, int)
    [row] = db.get_messages("s")
    assert row["id"] == result.message_id
    assert (row["role"], row["content"], row["message_uid"], row["token_count"]) == (
        "user",
        "hello",
        "u-1",
        3,
    )
    assert row["compacted"] is False and row["undone"] is False
    assert db.get_session("s")["message_count"] == 1


def test_append_message_keeps_every_field(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    calls = [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
    db.append_message("s", "assistant", None, tool_calls=calls, reasoning="thinking")
    db.append_message("s", "tool", "file.txt", tool_call_id="c1", tool_name="ls")
    assistant, tool = db.get_messages("s")
    assert assistant["tool_calls"] == calls
    assert assistant["content"] is None and assistant["reasoning"] == "thinking"
    assert (tool["tool_call_id"], tool["tool_name"], tool["content"]) == ("c1", "ls", "file.txt")


def test_generated_message_uids_are_unique(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    for n in range(10):
        db.append_message("s", "user", f"m{n}")
    got = uids(db.get_messages("s"))
    assert len(set(got)) == 10 and all(got)


# Regression (found by this suite; fixed in ae4a419): a multi-part content list (OpenAI
# image/text parts) was stored as its JSON text and came back as a string, so a resumed
# agent would have sent the model the JSON source instead of the parts.
def test_multipart_content_round_trips(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    parts = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:,"}},
    ]
    db.append_message("s", "user", parts)
    assert db.get_messages("s")[0]["content"] == parts


def test_append_messages_writes_a_batch_in_order(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    batch = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    result = db.append_messages("s", batch)
    assert result.stored == 2 and result.session_id == "s"
    assert list(result.message_ids) == sorted(result.message_ids)
    assert contents(db.get_messages("s")) == ["q", "a"]
    assert db.get_session("s")["message_count"] == 2


def test_append_messages_with_an_empty_batch_stores_nothing(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    result = db.append_messages("s", [])
    assert (result.stored, result.message_ids, result.session_id) == (0, (), "s")


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "user", "content": "x", "token_count": 2**70},  # fails inside the insert
        {"role": "assistant", "content": None, "tool_calls": [object()]},  # not JSON
    ],
    ids=["integer-overflow", "unserialisable-tool-calls"],
)
def test_a_batch_with_a_bad_row_stores_nothing(db: SessionDB, bad: dict) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "before", message_uid="before")
    before = snapshot(db, "s")
    batch = [
        {"role": "user", "content": "good one", "message_uid": "g1"},
        {"role": "assistant", "content": "good two", "message_uid": "g2"},
        bad,
    ]
    with pytest.raises(Exception):  # noqa: B017 - whatever the engine raises for the bad row
        db.append_messages("s", batch)
    assert snapshot(db, "s") == before
    assert db.search_messages("good") == []
    # The store is still usable, and the good rows can be written again.
    assert db.append_messages("s", batch[:2]).stored == 2


def test_duplicate_message_uid_is_not_stored_twice(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    first = db.append_message("s", "user", "hi", message_uid="same")
    again = db.append_message("s", "user", "hi", message_uid="same")
    assert (first.stored, again.stored) == (1, 0)
    assert again.message_ids == (None,) and again.session_id == "s"
    assert contents(db.get_messages("s")) == ["hi"]
    assert db.get_session("s")["message_count"] == 1


def test_duplicate_message_uid_within_one_batch_is_stored_once(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    result = db.append_messages(
        "s",
        [
            {"role": "user", "content": "a", "message_uid": "x"},
            {"role": "user", "content": "a again", "message_uid": "x"},
            {"role": "user", "content": "b", "message_uid": "y"},
        ],
    )
    assert result.stored == 2
    assert result.message_ids[1] is None and None not in (
        result.message_ids[0],
        result.message_ids[2],
    )
    assert contents(db.get_messages("s")) == ["a", "b"]


def test_message_uid_is_unique_across_segments_and_conversations(db: SessionDB) -> None:
    db.create_session("a", source="cli")
    db.create_session("b", source="cli")
    db.append_message("a", "user", "once", message_uid="global")
    assert db.append_message("b", "user", "once", message_uid="global").stored == 0
    assert db.get_messages("b") == []


def test_a_partly_duplicate_batch_stores_only_the_new_rows(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_messages("s", [{"role": "user", "content": c, "message_uid": c} for c in "ab"])
    result = db.append_messages(
        "s", [{"role": "user", "content": c, "message_uid": c} for c in "abcd"]
    )
    assert result.stored == 2
    assert result.message_ids[:2] == (None, None)
    assert contents(db.get_messages("s")) == list("abcd")


def test_append_to_unknown_session_raises(db: SessionDB) -> None:
    with pytest.raises(SessionNotFoundError) as info:
        db.append_message("ghost", "user", "hi")
    assert info.value.session_id == "ghost"
    assert "ghost" in str(info.value)
    with pytest.raises(SessionNotFoundError):
        db.append_messages("ghost", [{"role": "user", "content": "hi"}])


def test_append_to_a_segment_ended_for_another_reason_raises(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "before")
    db.end_session("s", "user_exit")
    with pytest.raises(SegmentEndedError) as info:
        db.append_message("s", "user", "after")
    assert info.value.session_id == "s"
    assert info.value.end_reason == "user_exit"
    assert "user_exit" in str(info.value)
    assert contents(db.get_messages("s")) == ["before"]


def test_append_to_a_segment_ended_by_compression_lands_in_the_tip(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    db.append_message("root", "user", "old")
    child = rotate(db, "root")
    parent_rows = db.get_messages("root")
    result = db.append_message("root", "user", "late write")
    assert result.session_id == child
    assert db.get_messages("root") == parent_rows  # nothing accumulates in a dead segment
    assert contents(db.get_messages(child))[-1] == "late write"
    assert contents(db.get_conversation_messages("root")) == ["old", "late write"]
    batch = db.append_messages("root", [{"role": "user", "content": "batch"}])
    assert batch.session_id == child


def test_a_stale_id_many_rotations_back_lands_in_the_tip(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    ids = chain(db, "root", 6)
    for stale in ids:
        assert db.append_message(stale, "user", f"via {stale}").session_id == ids[-1]
    assert db.invariant_violations() == []


def test_a_stale_id_whose_tip_was_ended_for_another_reason_raises(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    child = rotate(db, "root")
    db.end_session(child, "reset")
    with pytest.raises(SegmentEndedError) as info:
        db.append_message("root", "user", "nowhere to go")
    assert info.value.session_id == child
    assert all(m["content"] != "nowhere to go" for m in db.get_conversation_messages("root"))


def test_reflushing_after_a_rotation_writes_nothing_twice(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    history = [{"role": "user", "content": f"m{n}", "message_uid": f"uid-{n}"} for n in range(5)]
    db.append_messages("root", history)
    child = rotate(db, "root", messages=[{"role": "user", "content": "summary"}, history[-1]])
    result = db.append_messages("root", history)  # e.g. a resumed agent re-flushes its list
    assert (result.session_id, result.stored) == (child, 0)
    assert uids(db.get_conversation_messages(child)) == [m["message_uid"] for m in history]


def test_get_messages_of_unknown_session_raises(db: SessionDB) -> None:
    with pytest.raises(SessionNotFoundError):
        db.get_messages("ghost")
    with pytest.raises(SessionNotFoundError):
        db.get_conversation_messages("ghost")


def test_created_at_is_kept_when_given(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_messages("s", [{"role": "user", "content": "x", "created_at": 1_000_000.5}])
    assert db.get_messages("s")[0]["created_at"] == pytest.approx(1_000_000.5)


def test_last_message_id_is_the_segment_watermark(db: SessionDB) -> None:
    db.create_session("a", source="cli")
    db.create_session("b", source="cli")
    assert db.last_message_id("a") == 0
    first = db.append_message("a", "user", "1").message_id
    db.append_message("b", "user", "elsewhere")
    assert db.last_message_id("a") == first
    second = db.append_message("a", "user", "2").message_id
    assert db.last_message_id("a") == second > first


def test_mark_undone_hides_from_the_segment_but_keeps_the_history(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    ids = [db.append_message("s", "user", f"m{n}").message_id for n in range(4)]
    assert db.mark_undone("s", ids[2:]) == 2
    assert db.mark_undone("s", []) == 0
    assert contents(db.get_messages("s")) == ["m0", "m1"]
    every = db.get_messages("s", include_undone=True)
    assert [m["undone"] for m in every] == [False, False, True, True]
    assert contents(db.get_conversation_messages("s")) == ["m0", "m1", "m2", "m3"]


def test_mark_undone_reaches_the_copies_a_rotation_made(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    db.append_message("root", "user", "keep", message_uid="keep")
    oops = db.append_message("root", "user", "oops", message_uid="oops").message_id
    kept = [{"role": "user", "content": "oops", "message_uid": "oops"}]
    child = rotate(db, "root", messages=kept)
    assert contents(db.get_messages(child)) == ["oops"]
    # Undone through the tip's id: the original in the parent and its copy in the child.
    assert db.mark_undone(child, [oops]) == 2
    assert db.get_messages(child) == []
    assert contents(db.get_messages("root")) == ["keep"]
    assert [m["undone"] for m in db.get_conversation_messages(child)] == [False, True]


def test_mark_undone_never_crosses_into_another_conversation(db: SessionDB) -> None:
    db.create_session("a", source="cli")
    db.create_session("b", source="cli")
    mid = db.append_message("a", "user", "a's").message_id
    assert db.mark_undone("b", [mid]) == 0
    assert contents(db.get_messages("a")) == ["a's"]
    with pytest.raises(SessionNotFoundError):
        db.mark_undone("ghost", [mid])


def test_segment_stamp_changes_with_every_write(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    assert db.segment_stamp("s") == (0, 0, 0)
    first = db.append_message("s", "user", "one").message_id
    assert db.segment_stamp("s") == (first, 1, 0)
    second = db.append_messages("s", [{"role": "user", "content": "two"}]).message_id
    assert db.segment_stamp("s") == (second, 2, 0)
    before = db.segment_stamp("s")
    db.append_message("s", "user", "two", message_uid=uids(db.get_messages("s"))[-1])
    assert db.segment_stamp("s") == before  # a duplicate writes nothing
    child = rotate(db, "s")
    assert db.segment_stamp("s") == before  # the parent is left as it was
    assert db.segment_stamp(child)[1] == 1
    assert db.segment_stamp("ghost") == (0, 0, 0)


def test_segment_stamp_changes_with_an_undo_and_counts_only_the_segment(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.create_session("other", source="cli")
    ids = [db.append_message("s", "user", f"m{i}").message_id for i in range(3)]
    db.mark_undone("other", [db.append_message("other", "user", "x").message_id])
    before = db.segment_stamp("s")
    assert before == (ids[-1], 3, 0)
    db.mark_undone("s", ids[1:])
    assert db.segment_stamp("s") == (ids[-1], 3, 2)


def test_segment_stamp_reads_an_index_not_the_segment(tmp_path) -> None:
    """The stamp is read before every turn: its undone count must come from the
    partial index (migration 8), not from scanning a 10,000-message segment."""
    SessionDB(db_path=tmp_path / "state.db").close()
    conn = sqlite3.connect(tmp_path / "state.db")
    plan = " ".join(
        str(row[-1])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM messages WHERE session_id = 's' AND undone = 1"
        )
    )
    conn.close()
    assert "messages_undone" in plan


def test_undone_messages_are_not_carried_over_by_a_rotation(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    db.append_message("root", "user", "kept")
    watermark = db.last_message_id("root")
    undone = db.append_message("root", "user", "undone").message_id
    db.append_message("root", "user", "late")
    db.mark_undone("root", [undone])
    child = rotate(db, "root", watermark=watermark)
    assert contents(db.get_messages(child)) == [
        "[CONTEXT COMPACTION] earlier turns, summarised",
        "late",
    ]


def test_find_message_reads_a_message_by_its_uid_in_any_segment(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "question", message_uid="q-1")
    db.append_message("s", "assistant", "answer", message_uid="a-1")
    rotate(db, "s")  # the answer now lives in an ended segment, copied into the tip
    found = db.find_message("a-1")
    assert (found["session_id"], found["content"], found["role"]) == ("s", "answer", "assistant")
    assert found["compacted"] is False and found["undone"] is False
    assert db.find_message("nobody") is None
