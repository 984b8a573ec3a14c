"""Rotation: publish_compression_child, one transaction, all or nothing (invariant 2)."""

from __future__ import annotations

import time

import pytest

from hermes.state import LeaseNotHeldError, NotTipError, SessionDB, make_holder

from .helpers import SUMMARY, StoreSpec, contents, rotate, snapshot


@pytest.fixture
def parent(db: SessionDB) -> str:
    db.create_session(
        "parent",
        source="telegram",
        user_id="u7",
        session_key="telegram:7",
        title="Holiday",
        model="m/big",
        system_prompt="sys",
    )
    db.append_messages("parent", [{"role": "user", "content": f"m{n}"} for n in range(4)])
    db.gateway.set_route("telegram:7", "parent")
    return "parent"


def test_publish_opens_the_child_and_ends_the_parent(db: SessionDB, parent: str) -> None:
    holder = make_holder()
    assert db.try_acquire_compression_lock(parent, holder)
    child = db.publish_compression_child(
        parent, holder=holder, messages=[SUMMARY], child_session_id="child-1"
    )
    assert child == "child-1"
    p, c = db.get_session(parent), db.get_session(child)
    assert p["end_reason"] == "compression" and p["ended_at"] is not None
    assert c["ended_at"] is None
    assert (c["parent_session_id"], c["lineage"], c["conversation_id"]) == (
        parent,
        "compression",
        parent,
    )
    for key in ("source", "user_id", "session_key", "model"):
        assert c[key] == p[key]
    assert c["title"] == "Holiday #2"
    assert contents(db.get_messages(child)) == [SUMMARY["content"]]
    assert db.resolve_tip(parent) == child
    assert db.gateway.get_route("telegram:7") == child
    # Nothing is deleted: the parent keeps its full transcript.
    assert contents(db.get_messages(parent)) == [f"m{n}" for n in range(4)]


def test_titles_number_each_segment(db: SessionDB, parent: str) -> None:
    second = rotate(db, parent)
    third = rotate(db, second)
    assert [db.get_session(s)["title"] for s in (parent, second, third)] == [
        "Holiday",
        "Holiday #2",
        "Holiday #3",
    ]
    db.create_session("untitled", source="cli")
    assert db.get_session(rotate(db, "untitled"))["title"] is None


def test_publish_without_the_lease_changes_nothing(db: SessionDB, parent: str) -> None:
    before = snapshot(db, parent)
    with pytest.raises(LeaseNotHeldError) as info:
        db.publish_compression_child(parent, holder=make_holder(), messages=[SUMMARY])
    assert info.value.session_id == parent and info.value.current_holder is None
    assert snapshot(db, parent) == before
    assert db.resolve_tip(parent) == parent


def test_publish_with_someone_elses_lease_changes_nothing(db: SessionDB, parent: str) -> None:
    owner, intruder = make_holder(), make_holder()
    assert db.try_acquire_compression_lock(parent, owner)
    before = snapshot(db, parent)
    with pytest.raises(LeaseNotHeldError) as info:
        db.publish_compression_child(parent, holder=intruder, messages=[SUMMARY])
    assert info.value.current_holder == owner
    assert owner in str(info.value)
    assert snapshot(db, parent) == before


def test_publish_with_an_expired_lease_changes_nothing(db: SessionDB, parent: str) -> None:
    holder = make_holder()
    assert db.try_acquire_compression_lock(parent, holder, ttl_seconds=0.2)
    time.sleep(0.3)
    before = snapshot(db, parent)
    with pytest.raises(LeaseNotHeldError):
        db.publish_compression_child(parent, holder=holder, messages=[SUMMARY])
    assert snapshot(db, parent) == before


def test_publish_on_a_segment_that_is_no_longer_the_tip_changes_nothing(
    db: SessionDB, parent: str
) -> None:
    child = rotate(db, parent)
    late = make_holder()
    assert db.try_acquire_compression_lock(parent, late)  # the lease is free again
    before = snapshot(db, parent)
    with pytest.raises(NotTipError) as info:
        db.publish_compression_child(parent, holder=late, messages=[SUMMARY])
    assert (info.value.session_id, info.value.tip) == (parent, child)
    assert child in str(info.value)
    assert snapshot(db, parent) == before


def test_publish_on_a_segment_ended_for_another_reason_changes_nothing(
    db: SessionDB, parent: str
) -> None:
    db.end_session(parent, "user_exit")
    holder = make_holder()
    assert db.try_acquire_compression_lock(parent, holder)
    before = snapshot(db, parent)
    with pytest.raises(NotTipError):
        db.publish_compression_child(parent, holder=holder, messages=[SUMMARY])
    assert snapshot(db, parent) == before


@pytest.mark.parametrize("failure", ["taken-child-id", "bad-message"])
def test_a_rotation_failing_midway_changes_nothing(
    db: SessionDB, parent: str, failure: str
) -> None:
    """Parent ended, child half-written, then an error: all of it must roll back."""
    db.create_session("taken", source="cli")
    holder = make_holder()
    assert db.try_acquire_compression_lock(parent, holder)
    before = snapshot(db, parent)
    if failure == "taken-child-id":
        kwargs = {"messages": [SUMMARY], "child_session_id": "taken"}
    else:
        kwargs = {"messages": [SUMMARY, {"role": "user", "content": "x", "token_count": 2**70}]}
    with pytest.raises(Exception):  # noqa: B017 - the engine's error for the bad input
        db.publish_compression_child(parent, holder=holder, watermark=0, **kwargs)
    assert snapshot(db, parent) == before
    assert db.resolve_tip(parent) == parent
    assert db.gateway.get_route("telegram:7") == parent
    assert db.invariant_violations() == []
    # The lease survives the failure and a retry succeeds.
    assert db.publish_compression_child(parent, holder=holder, messages=[SUMMARY])


def test_watermark_carries_late_messages_into_the_child(db: SessionDB, parent: str) -> None:
    holder = make_holder()
    assert db.try_acquire_compression_lock(parent, holder)
    watermark = db.last_message_id(parent)
    # Written while the summary was being made, e.g. by the gateway or a tool result.
    db.append_messages(
        parent, [{"role": "assistant", "content": "late1"}, {"role": "user", "content": "late2"}]
    )
    child = db.publish_compression_child(
        parent, holder=holder, messages=[SUMMARY], watermark=watermark
    )
    rows = db.get_messages(child)
    assert contents(rows) == [SUMMARY["content"], "late1", "late2"]
    assert all(r["compacted"] for r in rows)
    late_ids = [m["id"] for m in db.get_messages(parent)[-2:]]
    assert [r["origin_id"] for r in rows[1:]] == late_ids
    assert contents(db.get_conversation_messages(child)) == [f"m{n}" for n in range(4)] + [
        "late1",
        "late2",
    ]


def test_seen_uids_carry_every_original_the_compressor_never_saw(
    db: SessionDB, parent: str
) -> None:
    holder = make_holder()
    assert db.try_acquire_compression_lock(parent, holder)
    given = db.get_messages(parent)[:3]  # the compressor's input: m0..m2
    # m3 was written before the watermark was read but after the snapshot was taken,
    # and "late" after both: neither reached the compressor.
    watermark = db.last_message_id(parent)
    db.append_message(parent, "user", "late")
    child = db.publish_compression_child(
        parent,
        holder=holder,
        messages=[SUMMARY],
        watermark=watermark,
        seen_uids={m["message_uid"] for m in given},
    )
    rows = db.get_messages(child)
    assert contents(rows) == [SUMMARY["content"], "m3", "late"]
    assert all(r["compacted"] for r in rows)
    assert contents(db.get_conversation_messages(child)) == [f"m{n}" for n in range(4)] + ["late"]


def test_seen_uids_never_carry_the_compacted_context_again(db: SessionDB, parent: str) -> None:
    child = rotate(db, parent)
    db.append_message(child, "user", "new")
    holder = make_holder()
    assert db.try_acquire_compression_lock(child, holder)
    grandchild = db.publish_compression_child(
        child, holder=holder, messages=[SUMMARY], seen_uids=set()
    )
    assert contents(db.get_messages(grandchild)) == [SUMMARY["content"], "new"]


def test_without_a_watermark_nothing_is_carried_over(db: SessionDB, parent: str) -> None:
    child = rotate(db, parent, watermark=None)
    assert contents(db.get_messages(child)) == [SUMMARY["content"]]


def test_a_kept_message_is_not_carried_over_twice(db: SessionDB, parent: str) -> None:
    db.append_message(parent, "user", "tail", message_uid="tail-uid")
    tail = {"role": "user", "content": "tail", "message_uid": "tail-uid"}
    child = rotate(db, parent, messages=[SUMMARY, tail], watermark=0)
    assert contents(db.get_messages(child)) == [SUMMARY["content"], "tail", "m0", "m1", "m2", "m3"]
    logical = db.get_conversation_messages(child)
    assert contents(logical).count("tail") == 1


# Regression (found by the property test; fixed in ae4a419): a compacted list holding
# the same stored message twice (say the kept tail already ends with the newest user
# message and the compressor appends it again, DESIGN invariant 12) gave both copies
# the uid "<uid>@<child>", and the rotation died on the UNIQUE index with a raw engine
# error, so compression could never succeed for that conversation. The same happened
# for a new message (a summary with a uid) listed twice.
@pytest.mark.parametrize("twice", ["stored-message", "new-summary"])
def test_a_message_listed_twice_in_the_compacted_list_still_rotates(
    db: SessionDB, parent: str, twice: str
) -> None:
    db.append_message(parent, "user", "newest question", message_uid="newest")
    if twice == "stored-message":
        repeated = {"role": "user", "content": "newest question", "message_uid": "newest"}
    else:
        repeated = {**SUMMARY, "message_uid": "summary-uid"}
    child = rotate(db, parent, messages=[SUMMARY, repeated, repeated])
    assert db.resolve_tip(parent) == child
    assert contents(db.get_conversation_messages(child)) == [f"m{n}" for n in range(4)] + [
        "newest question"
    ]


def test_a_summary_with_a_uid_is_not_stored_again_by_a_reflush(db: SessionDB, parent: str) -> None:
    summary = {**SUMMARY, "message_uid": "summary-1"}
    child = rotate(db, parent, messages=[summary])
    assert db.append_messages(child, [summary]).stored == 0
    assert contents(db.get_messages(child)) == [SUMMARY["content"]]
    assert SUMMARY["content"] not in contents(db.get_conversation_messages(child))


def test_the_child_is_open_for_writes_and_the_lease_can_be_released(
    db: SessionDB, parent: str
) -> None:
    holder = make_holder()
    assert db.try_acquire_compression_lock(parent, holder)
    child = db.publish_compression_child(parent, holder=holder, messages=[SUMMARY])
    assert db.release_compression_lock(parent, holder)
    assert db.append_message(child, "user", "next").session_id == child
    assert db.get_compression_lock_holder(child) is None


def _plant(spec: StoreSpec, sql: str, params: tuple = ()) -> None:
    spec.execute(sql, params)


def test_the_schema_rejects_a_second_compression_child(
    db: SessionDB, parent: str, store: StoreSpec
) -> None:
    child = rotate(db, parent)
    # A second child of the same parent, ended so only the one-child index can object.
    with pytest.raises(Exception) as info:  # noqa: PT011 - sqlite3 or psycopg integrity error
        _plant(
            store,
            "INSERT INTO sessions (id, conversation_id, parent_session_id, lineage, segment_index,"
            " source, started_at, last_active_at, ended_at, end_reason)"
            " SELECT 'second-child', conversation_id, parent_session_id, lineage,"
            " segment_index + 100, source, started_at, last_active_at, started_at, 'planted'"
            " FROM sessions WHERE id = ?",
            (child,),
        )
    assert "unique" in str(info.value).lower()
    assert db.get_session("second-child") is None


def test_the_schema_rejects_a_second_live_tip(db: SessionDB, parent: str, store: StoreSpec) -> None:
    child = rotate(db, parent)
    with pytest.raises(Exception) as info:  # noqa: PT011 - sqlite3 or psycopg integrity error
        _plant(
            store,
            "INSERT INTO sessions (id, conversation_id, parent_session_id, lineage, segment_index,"
            " source, started_at, last_active_at)"
            " SELECT 'second-tip', conversation_id, NULL, 'branch', segment_index + 100, source,"
            " started_at, last_active_at FROM sessions WHERE id = ?",
            (child,),
        )
    assert "unique" in str(info.value).lower()
    assert db.get_session("second-tip") is None
    # Re-opening a compression-ended parent by hand is refused too.
    with pytest.raises(Exception):  # noqa: B017
        _plant(store, "UPDATE sessions SET ended_at = NULL WHERE id = ?", (parent,))
    assert db.invariant_violations() == []


def test_publishing_with_a_child_id_that_exists_is_a_state_error(
    db: SessionDB, parent: str
) -> None:
    from hermes.state import StateError, make_holder

    db.create_session("taken", source="cli")
    holder = make_holder()
    assert db.try_acquire_compression_lock(parent, holder)
    with pytest.raises(StateError):
        db.publish_compression_child(
            parent, holder=holder, messages=[SUMMARY], child_session_id="taken"
        )
    assert db.get_session(parent)["ended_at"] is None  # nothing changed
    assert db.resolve_tip(parent) == parent
