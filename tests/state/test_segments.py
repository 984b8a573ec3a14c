"""Segments: creating, reading, ending and naming them; closing the store."""

from __future__ import annotations

import pytest

from hermes.state import (
    MessageNotFoundError,
    ReadOnlyStoreError,
    SessionDB,
    SessionNotFoundError,
    StateError,
)

from .helpers import SUMMARY, rotate

TURNS = [("user", "one"), ("assistant", "two"), ("user", "three"), ("assistant", "four")]
SESSION_KEYS = {
    "id",
    "conversation_id",
    "parent_session_id",
    "lineage",
    "source",
    "user_id",
    "session_key",
    "title",
    "model",
    "started_at",
    "ended_at",
    "end_reason",
    "message_count",
}


def test_create_session_returns_a_root_segment(db: SessionDB) -> None:
    sid = db.create_session(
        "s1",
        source="telegram",
        user_id="u1",
        session_key="telegram:42",
        title="Plans",
        model="m/one",
        system_prompt="be brief",
    )
    assert sid == "s1"
    row = db.get_session("s1")
    assert row is not None
    assert set(row) >= SESSION_KEYS
    assert row["id"] == row["conversation_id"] == "s1"
    assert row["parent_session_id"] is None
    assert row["lineage"] == "root"
    assert (row["source"], row["user_id"], row["session_key"]) == ("telegram", "u1", "telegram:42")
    assert (row["title"], row["model"], row["system_prompt"]) == ("Plans", "m/one", "be brief")
    assert row["ended_at"] is None and row["end_reason"] is None
    assert row["message_count"] == 0
    assert row["started_at"] > 0


def test_create_session_generates_unique_ids(db: SessionDB) -> None:
    ids = {db.create_session(source="cli") for _ in range(20)}
    assert len(ids) == 20
    assert all(db.get_session(i)["conversation_id"] == i for i in ids)


def test_create_session_with_an_existing_id_fails_and_keeps_the_first(db: SessionDB) -> None:
    db.create_session("dup", source="cli", title="first")
    with pytest.raises(Exception):  # noqa: B017 - the engine's integrity error, either backend
        db.create_session("dup", source="api", title="second")
    assert db.get_session("dup")["title"] == "first"


def test_get_session_of_unknown_id_is_none(db: SessionDB) -> None:
    assert db.get_session("nope") is None


def test_end_session_records_time_and_reason(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.end_session("s", "user_exit")
    row = db.get_session("s")
    assert row["ended_at"] is not None and row["ended_at"] >= row["started_at"]
    assert row["end_reason"] == "user_exit"


def test_end_session_twice_keeps_the_first_reason(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.end_session("s", "user_exit")
    first = db.get_session("s")
    db.end_session("s", "reset")
    assert db.get_session("s") == first


def test_end_session_of_unknown_id_raises(db: SessionDB) -> None:
    with pytest.raises(SessionNotFoundError) as info:
        db.end_session("ghost", "user_exit")
    assert info.value.session_id == "ghost"


def test_set_title(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.set_title("s", "Renamed")
    assert db.get_session("s")["title"] == "Renamed"
    db.set_title("s", None)
    assert db.get_session("s")["title"] is None


def test_set_title_of_unknown_id_raises(db: SessionDB) -> None:
    with pytest.raises(SessionNotFoundError):
        db.set_title("ghost", "x")


def test_set_model_system_prompt_and_token_usage(db: SessionDB) -> None:
    db.create_session("s", source="cli", model="a")
    db.set_model("s", "b")
    db.set_system_prompt("s", "new prompt")
    db.add_token_usage("s", 10, 3)
    db.add_token_usage("s", 5, None)  # type: ignore[arg-type]
    row = db.get_session("s")
    assert row["model"] == "b"
    assert row["system_prompt"] == "new prompt"
    assert (row["input_tokens"], row["output_tokens"]) == (15, 3)


# Regression (found by this suite; fixed in ae4a419): set_model / set_system_prompt /
# add_token_usage on an unknown id did nothing and returned normally, unlike
# set_title/end_session: a write that lands nowhere was swallowed (invariant 10).
@pytest.mark.parametrize(
    "call",
    [
        lambda db: db.set_model("ghost", "m"),
        lambda db: db.set_system_prompt("ghost", "p"),
        lambda db: db.add_token_usage("ghost", 1, 1),
    ],
    ids=["set_model", "set_system_prompt", "add_token_usage"],
)
def test_setters_on_unknown_id_raise(db: SessionDB, call) -> None:
    with pytest.raises(SessionNotFoundError):
        call(db)


def test_branch_session_starts_a_new_conversation_with_a_copy(db: SessionDB) -> None:
    db.create_session("origin", source="cli", title="Origin", model="m")
    db.append_message("origin", "user", "one")
    db.append_message("origin", "assistant", "two")
    branch = db.branch_session("origin")
    row = db.get_session(branch)
    assert row["lineage"] == "branch"
    assert row["conversation_id"] == branch
    assert row["parent_session_id"] == "origin"
    assert (row["title"], row["model"], row["source"]) == ("Origin", "m", "cli")
    assert [m["content"] for m in db.get_conversation_messages(branch)] == ["one", "two"]
    # The copy has identities of its own: the origin's uids stay unique to it.
    origin_uids = {m["message_uid"] for m in db.get_messages("origin")}
    assert not origin_uids & {m["message_uid"] for m in db.get_messages(branch)}
    # Writing to the branch never touches the origin.
    db.append_message(branch, "user", "only in the branch")
    assert len(db.get_messages("origin")) == 2


def test_branch_session_of_a_rotated_conversation_copies_its_logical_history(
    db: SessionDB,
) -> None:
    db.create_session("origin", source="cli")
    db.append_message("origin", "user", "before")
    child = rotate(db, "origin")
    db.append_message(child, "user", "after")
    branch = db.branch_session("origin", source="api")
    assert db.get_session(branch)["source"] == "api"
    assert [m["content"] for m in db.get_messages(branch)] == ["before", "after"]


def test_branch_session_at_a_message_keeps_the_history_up_to_it(db: SessionDB) -> None:
    db.create_session("origin", source="api")
    ids = [db.append_message("origin", role, text).message_id for role, text in TURNS]
    branch = db.branch_session("origin", at_message_id=ids[1])
    assert db.get_session(branch)["lineage"] == "branch"
    assert [m["content"] for m in db.get_conversation_messages(branch)] == ["one", "two"]
    assert len(db.get_messages("origin")) == 4  # the origin keeps its whole history


def test_a_branch_leaves_undone_messages_behind(db: SessionDB) -> None:
    """An /undo (or a deleted response) before the branch point does not come back."""
    db.create_session("origin", source="api")
    ids = [db.append_message("origin", role, text).message_id for role, text in TURNS]
    db.mark_undone("origin", ids[:2])
    branch = db.branch_session("origin")
    assert [m["content"] for m in db.get_conversation_messages(branch)] == [
        m["content"] for m in db.get_messages("origin")
    ]
    assert len(db.get_conversation_messages(branch)) == len(TURNS) - 2


def test_branch_session_at_a_message_before_a_rotation(db: SessionDB) -> None:
    db.create_session("origin", source="api")
    ids = [db.append_message("origin", role, text).message_id for role, text in TURNS[:3]]
    kept = db.get_messages("origin")[-1]  # "three" is carried into the child as a copy
    child = rotate(db, "origin", messages=[SUMMARY, kept])
    db.append_message(child, "assistant", "four")
    by_original = db.branch_session(child, at_message_id=ids[0])
    assert [m["content"] for m in db.get_conversation_messages(by_original)] == ["one"]
    copy_id = next(m["id"] for m in db.get_messages(child) if m["content"] == "three")
    assert copy_id != ids[2]
    by_copy = db.branch_session(child, at_message_id=copy_id)
    assert [m["content"] for m in db.get_conversation_messages(by_copy)] == [
        "one",
        "two",
        "three",
    ]


def test_branch_session_at_a_message_of_another_conversation_fails_and_writes_nothing(
    db: SessionDB,
) -> None:
    db.create_session("origin", source="api")
    db.append_message("origin", "user", "one")
    db.create_session("other", source="api")
    foreign = db.append_message("other", "user", "elsewhere").message_id
    with pytest.raises(MessageNotFoundError, match="branch at a message of that conversation"):
        db.branch_session("origin", at_message_id=foreign)
    assert len(db.list_conversations()) == 2


def test_close_and_context_manager(make_db) -> None:
    with make_db() as db:
        db.create_session("s", source="cli")
    with pytest.raises(StateError):
        db.get_session("s")
    db.close()  # closing twice is harmless
    reopened = make_db()
    assert reopened.get_session("s")["source"] == "cli"


def test_closing_one_instance_leaves_others_usable(make_db) -> None:
    first, second = make_db(), make_db()
    first.create_session("s", source="cli")
    first.close()
    second.append_message("s", "user", "still works")
    assert [m["content"] for m in second.get_messages("s")] == ["still works"]


def test_a_read_only_instance_reads_but_never_writes(make_db) -> None:
    writer = make_db()
    writer.create_session("s", source="cli", title="T")
    writer.append_message("s", "user", "hello reader")
    reader = make_db(read_only=True)
    assert reader.get_messages("s")[0]["content"] == "hello reader"
    assert reader.search_messages("reader")
    assert reader.get_compression_lock_holder("s") is None
    writes = [
        lambda: reader.create_session(source="cli"),
        lambda: reader.append_message("s", "user", "no"),
        lambda: reader.end_session("s", "user_exit"),
        lambda: reader.set_title("s", "no"),
        lambda: reader.try_acquire_compression_lock("s", "x"),
        lambda: reader.gateway.set_route("k", "s"),
        lambda: reader.delete_conversation("s"),
    ]
    for write in writes:
        with pytest.raises(ReadOnlyStoreError):
            write()
    assert writer.get_session("s")["title"] == "T"
    assert len(writer.get_messages("s")) == 1
    writer.append_message("s", "user", "later")  # a reader sees later commits
    assert len(reader.get_messages("s")) == 2


def test_location_names_the_store_without_a_password(db: SessionDB, store) -> None:
    if store.kind == "sqlite":
        assert db.location == store.path
    else:
        assert db.location.startswith("postgres")


def test_find_tip_follows_any_segment_to_the_live_one(db: SessionDB) -> None:
    root = db.create_session("root", source="cli")
    assert db.find_tip(root)["id"] == root
    child = rotate(db, root)
    grandchild = rotate(db, child)

    for segment in (root, child, grandchild):
        tip = db.find_tip(segment)
        assert tip is not None
        assert (tip["id"], tip["conversation_id"]) == (grandchild, root)
        assert tip["ended_at"] is None
    assert db.find_tip("nobody") is None
