"""Whole conversations: listing, finding, deleting, pruning; gateway routes; health."""

from __future__ import annotations

import time

import pytest

from hermes.state import SessionDB, SessionNotFoundError

from .helpers import chain, raw_one, rotate


def test_list_conversations_has_one_row_per_conversation_newest_first(db: SessionDB) -> None:
    db.create_session("a", source="cli", title="A")
    db.append_message("a", "user", "a1")
    db.create_session("b", source="telegram", title="B")
    db.append_message("b", "user", "b1")
    db.create_session("c", source="cli", title="C")
    ids = chain(db, "c", 3)  # three segments, still one conversation
    rows = db.list_conversations()
    assert [r["conversation_id"] for r in rows] == ["c", "b", "a"]
    newest = rows[0]
    assert newest["tip_id"] == ids[-1]
    assert newest["title"] == "C"
    assert newest["message_count"] == 2  # originals only, not the compacted copies
    assert newest["last_active_at"] >= rows[1]["last_active_at"]
    # Activity on the oldest conversation moves it to the front.
    db.append_message("a", "user", "a2")
    assert [r["conversation_id"] for r in db.list_conversations()] == ["a", "c", "b"]


def test_list_conversations_filters_by_source_and_limits(db: SessionDB) -> None:
    for n in range(5):
        db.create_session(f"cli{n}", source="cli")
        db.create_session(f"tg{n}", source="telegram")
    assert {r["conversation_id"] for r in db.list_conversations(source="telegram")} == {
        f"tg{n}" for n in range(5)
    }
    assert len(db.list_conversations(limit=3)) == 3
    assert [r["conversation_id"] for r in db.list_conversations(limit=2, source="cli")] == [
        "cli4",
        "cli3",
    ]
    assert db.list_conversations(source="discord") == []


def test_list_conversations_counts_a_branch_as_its_own_conversation(db: SessionDB) -> None:
    db.create_session("a", source="cli")
    db.append_message("a", "user", "x")
    branch = db.branch_session("a")
    assert {r["conversation_id"] for r in db.list_conversations()} == {"a", branch}


def test_find_conversation_by_title_returns_its_tip(db: SessionDB) -> None:
    db.create_session("a", source="cli", title="Trip to Kyoto")
    child = rotate(db, "a")
    assert db.get_session(child)["title"] == "Trip to Kyoto #2"
    assert db.find_conversation_by_title("Trip to Kyoto") == child
    assert db.find_conversation_by_title("Trip to Kyoto #2") is None
    assert db.find_conversation_by_title("nothing") is None


def test_delete_conversation_removes_every_segment(db: SessionDB) -> None:
    db.create_session("keep", source="cli")
    db.append_message("keep", "user", "keep this aardvark")
    db.create_session("gone", source="cli")
    ids = chain(db, "gone", 3)
    db.append_message(ids[-1], "user", "delete this aardvark")
    db.gateway.set_route("k", ids[-1])
    db.try_acquire_compression_lock(ids[-1], "someone")
    total = sum(len(db.get_messages(s, include_undone=True)) for s in ids)
    assert db.delete_conversation(ids[1]) == total
    assert all(db.get_session(s) is None for s in ids)
    assert db.get_compression_lock_holder(ids[-1]) is None
    assert db.gateway.get_route("k") is None
    assert [h["conversation_id"] for h in db.search_messages("aardvark")] == ["keep"]
    assert [r["conversation_id"] for r in db.list_conversations()] == ["keep"]
    assert db.invariant_violations() == []


def test_delete_then_write_never_resurrects_old_search_hits(db: SessionDB) -> None:
    # Message ids may be reused after the newest rows are deleted; the deleted text must
    # not stay in the search index and match the new rows.
    db.create_session("old", source="cli")
    db.append_messages("old", [{"role": "user", "content": f"zebra {n}"} for n in range(5)])
    db.delete_conversation("old")
    db.create_session("new", source="cli")
    db.append_messages("new", [{"role": "user", "content": f"giraffe {n}"} for n in range(5)])
    assert db.search_messages("zebra") == []
    assert len(db.search_messages("giraffe")) == 5


def test_delete_conversation_keeps_branches_taken_from_it(db: SessionDB) -> None:
    db.create_session("origin", source="cli")
    db.append_message("origin", "user", "hello")
    branch = db.branch_session("origin")
    db.delete_conversation("origin")
    row = db.get_session(branch)
    assert row is not None and row["parent_session_id"] is None
    assert [m["content"] for m in db.get_messages(branch)] == ["hello"]


def test_delete_unknown_conversation_raises(db: SessionDB) -> None:
    with pytest.raises(SessionNotFoundError):
        db.delete_conversation("ghost")


def test_prune_conversations_deletes_only_the_inactive(
    db: SessionDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = time.time
    with monkeypatch.context() as m:
        m.setattr(time, "time", lambda: real() - 40 * 86400)
        db.create_session("old", source="cli")
        chain(db, "old", 2)
        db.create_session("revived", source="cli")
    db.append_message("revived", "user", "recent activity")
    db.create_session("new", source="cli")
    assert db.prune_conversations(older_than_days=30) == 1
    assert db.get_session("old") is None
    assert db.get_session("revived") is not None and db.get_session("new") is not None
    assert db.prune_conversations(older_than_days=30) == 0


# -- gateway routes ------------------------------------------------------------------


def test_routes_set_get_delete(db: SessionDB) -> None:
    db.create_session("a", source="telegram")
    db.create_session("b", source="telegram")
    assert db.gateway.get_route("telegram:1") is None
    db.gateway.set_route("telegram:1", "a", platform="telegram")
    assert db.gateway.get_route("telegram:1") == "a"
    db.gateway.set_route("telegram:1", "b")
    assert db.gateway.get_route("telegram:1") == "b"
    db.gateway.delete_route("telegram:1")
    assert db.gateway.get_route("telegram:1") is None


def test_rotation_moves_routes_to_the_child_in_the_same_transaction(db: SessionDB) -> None:
    db.create_session("a", source="telegram")
    db.gateway.set_route("telegram:1", "a")
    db.gateway.set_route("telegram:2", "a")
    child = rotate(db, "a")
    for key in ("telegram:1", "telegram:2"):
        row = raw_one(db, "SELECT session_id FROM gateway_routes WHERE session_key = ?", (key,))
        assert row["session_id"] == child


def test_get_route_follows_the_tip_and_updates_the_row(db: SessionDB) -> None:
    db.create_session("a", source="telegram")
    ids = chain(db, "a", 4)
    db.gateway.set_route("k", "a")  # a stale id, e.g. restored from an old gateway file
    assert db.gateway.get_route("k") == ids[-1]
    row = raw_one(db, "SELECT session_id FROM gateway_routes WHERE session_key = ?", ("k",))
    assert row["session_id"] == ids[-1]


def test_get_route_of_a_deleted_conversation_is_none_and_forgets_it(db: SessionDB) -> None:
    db.create_session("a", source="telegram")
    db.create_session("b", source="telegram")
    db.gateway.set_route("k", "b")
    db._write(
        lambda tx: tx.run(
            "UPDATE gateway_routes SET session_id = ? WHERE session_key = ?", ("missing", "k")
        )
    )
    assert db.gateway.get_route("k") is None
    assert (
        raw_one(db, "SELECT session_id FROM gateway_routes WHERE session_key = ?", ("k",)) is None
    )


def test_lookup_route_names_the_conversation_and_its_tip(make_db) -> None:
    db = make_db()
    db.create_session("a", source="telegram")
    ids = chain(db, "a", 3)
    assert db.gateway.lookup_route("k") is None
    db.gateway.set_route("k", ids[-1])
    route = make_db().gateway.lookup_route("k")  # another gateway's connection sees it too
    assert (route.conversation_id, route.session_id) == ("a", ids[-1])


def test_claim_route_takes_only_a_free_key(db: SessionDB) -> None:
    db.create_session("a", source="telegram")
    db.create_session("b", source="telegram")
    assert db.gateway.claim_route("k", "a", platform="telegram")
    assert not db.gateway.claim_route("k", "b")
    assert db.gateway.get_route("k") == "a"
    db.gateway.set_route("k", "deleted-long-ago")  # a route to nothing is free
    assert db.gateway.claim_route("k", "b")
    assert db.gateway.get_route("k") == "b"


def test_advance_route_moves_only_within_the_conversation_it_serves(db: SessionDB) -> None:
    db.create_session("old", source="telegram")
    db.create_session("new", source="telegram")
    child = rotate(db, "old")
    db.gateway.set_route("k", "old")
    assert db.gateway.advance_route("k", "old", child)  # the agent's rotation: forward
    assert db.gateway.get_route("k") == child
    assert db.gateway.advance_route("k", "old", "old")  # a lagging agent never moves it back
    assert raw_one(db, "SELECT session_id FROM gateway_routes WHERE session_key = ?", ("k",)) == {
        "session_id": child
    }
    db.gateway.set_route("k", "new")  # /new, here or in another gateway
    assert not db.gateway.advance_route("k", "old", child)
    assert db.gateway.get_route("k") == "new"
    assert not db.gateway.advance_route("k", "new", child)  # not a segment of that conversation
    assert not db.gateway.advance_route("k", "new", "missing")
    assert db.gateway.advance_route("free", "new", "new", platform="telegram")  # no route yet
    assert db.gateway.get_route("free") == "new"


# -- the gateway's input queue ---------------------------------------------------------


def test_gateway_inputs_are_kept_in_arrival_order(make_db) -> None:
    db = make_db()
    first = db.gateway.enqueue_gateway_input("telegram:1", {"text": "hello", "n": 1})
    second = db.gateway.enqueue_gateway_input("telegram:2", {"text": "другой"})
    third = db.gateway.enqueue_gateway_input(
        "telegram:1", {"text": "北京", "parts": [1, {"a": None}]}
    )
    assert first < second < third
    every = db.gateway.pending_gateway_inputs()
    assert [i["id"] for i in every] == [first, second, third]
    mine = db.gateway.pending_gateway_inputs("telegram:1")
    assert [i["payload"] for i in mine] == [
        {"text": "hello", "n": 1},
        {"text": "北京", "parts": [1, {"a": None}]},
    ]
    assert all(i["session_key"] == "telegram:1" and i["enqueued_at"] > 0 for i in mine)
    db.gateway.delete_gateway_input(first)
    db.gateway.delete_gateway_input(first)  # already gone: nothing to do
    db.close()
    reopened = make_db()  # the queue survives a restart
    assert [i["id"] for i in reopened.gateway.pending_gateway_inputs()] == [second, third]
    assert reopened.gateway.pending_gateway_inputs("nobody") == []


# -- health --------------------------------------------------------------------------


def test_a_healthy_store_has_no_invariant_violations(db: SessionDB) -> None:
    assert db.invariant_violations() == []
    db.create_session("a", source="cli")
    ids = chain(db, "a", 4)
    db.append_message("a", "user", "forwarded")
    db.branch_session(ids[1])
    db.end_session(ids[-1], "user_exit")
    assert db.invariant_violations() == []


# Regression (found by this suite; fixed in 22687ea): every write reads the clock
# before it waits for the write lock, so two writers can commit in the opposite order
# to their timestamps. A message appended just before a rotation commits then carries
# a created_at later than the parent's ended_at; invariant_violations() compared
# timestamps and reported an orphan write that never happened. The race tests hit this
# naturally; here the two clock reads are replayed in that order.
def test_invariant_violations_does_not_trust_clock_order(
    db: SessionDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    db.create_session("a", source="cli")
    start = time.time()
    with monkeypatch.context() as m:
        m.setattr(time, "time", lambda: start + 2.0)  # the append read the clock last...
        db.append_message("a", "user", "committed before the rotation")
        m.setattr(time, "time", lambda: start + 1.0)  # ...the rotation first, then waited
        rotate(db, "a")
    assert db.get_messages("a")[-1]["content"] == "committed before the rotation"
    assert db.invariant_violations() == []
