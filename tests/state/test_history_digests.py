"""History digests (hermes/state/history.py): a client's history finds the stored
conversation and message it ends at, on both backends, after rotations and undos."""

from __future__ import annotations

from pathlib import Path

from hermes.state import SessionDB
from hermes.state.copy import copy_store

from .helpers import SUMMARY, StoreSpec, raw_all, rotate

API = "api_server"


def said(*texts: str) -> list[dict[str, str]]:
    """A client's history: user and assistant messages by turns."""
    return [{"role": ("user", "assistant")[n % 2], "content": t} for n, t in enumerate(texts)]


def conversation(db: SessionDB, sid: str, *texts: str, source: str = API) -> list[int]:
    db.create_session(sid, source=source)
    return [db.append_message(sid, m["role"], m["content"]).message_id for m in said(*texts)]


def test_a_whole_stored_history_ends_at_the_latest_message(db: SessionDB) -> None:
    ids = conversation(db, "c", "one", "echo: one", "two", "echo: two")
    match = db.find_history(said("one", "echo: one", "two", "echo: two"))
    assert match is not None
    assert (match.conversation_id, match.message_id, match.matched, match.latest) == (
        "c", ids[-1], 4, True
    )  # fmt: skip
    earlier = db.find_history(said("one", "echo: one"))
    assert (earlier.message_id, earlier.matched, earlier.latest) == (ids[1], 2, False)


def test_a_diverging_history_finds_its_longest_stored_prefix(db: SessionDB) -> None:
    ids = conversation(db, "c", "one", "echo: one", "two", "echo: two")
    match = db.find_history(said("one", "echo: one", "TWO", "echo: TWO"))
    assert (match.conversation_id, match.message_id, match.matched) == ("c", ids[1], 2)
    assert db.find_history(said("something else")) is None


def test_a_history_finds_only_conversations_of_the_same_caller(db: SessionDB) -> None:
    for sid, user in (("a", "webui:alice"), ("b", "webui:bob"), ("n", None)):
        db.create_session(sid, source=API, user_id=user)
        for message in said("one", "echo: one"):
            db.append_message(sid, message["role"], message["content"])
    history = said("one", "echo: one")
    assert db.find_history(history, user_id="webui:alice").conversation_id == "a"
    assert db.find_history(history, user_id="webui:bob").conversation_id == "b"
    assert db.find_history(history).conversation_id == "n"
    assert db.find_history(history, user_id="webui:carol") is None


def test_only_conversations_of_the_http_api_are_digested(db: SessionDB) -> None:
    conversation(db, "chat", "one", "echo: one", source="telegram")
    assert db.find_history(said("one", "echo: one")) is None
    assert raw_all(db, "SELECT * FROM history_digests") == []


def test_tools_are_left_out_and_whitespace_around_text_does_not_count(db: SessionDB) -> None:
    """The text beside a tool call is shown before the answer: digested as one."""
    db.create_session("c", source=API)
    db.append_message("c", "user", "list the files")
    call = [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]
    db.append_message("c", "assistant", "let me look", tool_calls=call)
    db.append_message("c", "tool", "a.txt", tool_call_id="c1", tool_name="terminal")
    answer = db.append_message("c", "assistant", "  There is a.txt.\n").message_id
    parts = [{"type": "text", "text": "list the files"}]
    match = db.find_history(
        [{"role": "user", "content": parts}, {"role": "assistant", "content": SHOWN}]
    )
    assert (match.message_id, match.latest) == (answer, True)
    assert db.find_history(said("list the files", SHOWN + " ")).latest
    assert db.find_history(said("list  the files", SHOWN)) is None
    # A client holding the call itself (its own tools) folds its text the same way.
    held = [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": "let me look", "tool_calls": call},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        {"role": "assistant", "content": "  There is a.txt.\n"},
    ]
    assert db.find_history(held).message_id == answer


SHOWN = "let me look  There is a.txt."


def test_after_a_rotation_the_whole_original_history_ends_at_the_tip(db: SessionDB) -> None:
    ids = conversation(db, "c", "one", "echo: one", "two", "echo: two")
    kept = db.get_messages("c")[-2:]  # carried into the child as copies
    child = rotate(db, "c", messages=[SUMMARY, *kept])
    later = [db.append_message(child, m["role"], m["content"]).message_id for m in said("3", "e3")]
    child2 = rotate(db, child)  # a second compression: nothing of it is carried
    last = db.append_message(child2, "user", "four").message_id
    history = said("one", "echo: one", "two", "echo: two", "3", "e3", "four")
    match = db.find_history(history)
    assert (match.conversation_id, match.message_id, match.latest) == ("c", last, True)
    assert db.find_history(history[:6]).message_id == later[-1]
    assert db.find_history(history[:4]).message_id == ids[-1]  # an original, not its copy
    assert db.resolve_tip(match.conversation_id) == child2


def test_undone_messages_leave_the_chain(db: SessionDB) -> None:
    ids = conversation(db, "c", "one", "echo: one", "two", "echo: two")
    db.mark_undone("c", ids[2:])  # /retry or /undo of the last turn
    assert db.find_history(said("one", "echo: one")).latest
    match = db.find_history(said("one", "echo: one", "two", "echo: two"))
    assert (match.message_id, match.matched) == (ids[1], 2)
    db.append_message("c", "user", "two again")
    assert db.find_history(said("one", "echo: one", "two again")).latest


def test_undoing_a_message_in_the_middle_recomputes_the_rest(db: SessionDB) -> None:
    ids = conversation(db, "c", "one", "echo: one", "two", "echo: two")
    child = rotate(db, "c", messages=[SUMMARY, *db.get_messages("c")[1:]])
    db.mark_undone(child, [ids[1]])  # with its copy in the child
    history = [*said("one"), *said("two", "echo: two")]  # "echo: one" no longer stands
    match = db.find_history(history)
    assert (match.message_id, match.latest) == (ids[-1], True)
    assert db.find_history(said("one", "echo: one", "two", "echo: two")).matched == 1


def test_a_branch_carries_the_digests_of_its_copy(db: SessionDB) -> None:
    ids = conversation(db, "c", "one", "echo: one", "two", "echo: two")
    edit = said("one", "echo: one", "TWO")[2:]
    branch = db.branch_session("c", at_message_id=ids[1], then=edit)
    assert db.get_session(branch)["lineage"] == "branch"
    assert [m["content"] for m in db.get_conversation_messages(branch)] == [
        "one", "echo: one", "TWO"
    ]  # fmt: skip
    match = db.find_history(said("one", "echo: one", "TWO"))
    assert (match.conversation_id, match.latest) == (branch, True)
    # The original keeps its own chain: its whole history still ends at its latest message.
    assert db.find_history(said("one", "echo: one", "two", "echo: two")).conversation_id == "c"


def test_a_branch_leaves_undone_messages_out(db: SessionDB) -> None:
    ids = conversation(db, "c", "one", "echo: one", "two", "echo: two", "three")
    db.mark_undone("c", ids[2:4])
    branch = db.branch_session("c")
    assert [m["content"] for m in db.get_conversation_messages(branch)] == [
        "one", "echo: one", "three"
    ]  # fmt: skip
    assert db.find_history(said("one", "echo: one", "three")).latest


def test_deleting_a_conversation_deletes_its_digests(db: SessionDB) -> None:
    conversation(db, "c", "one", "echo: one")
    db.delete_conversation("c")
    assert db.find_history(said("one", "echo: one")) is None
    assert raw_all(db, "SELECT * FROM history_digests") == []


def test_messages_without_text_at_the_end_of_a_history_are_covered(db: SessionDB) -> None:
    ids = conversation(db, "c", "one", "echo: one")
    match = db.find_history([*said("one", "echo: one"), {"role": "assistant", "content": " "}])
    assert (match.message_id, match.matched, match.latest) == (ids[-1], 3, True)


def test_a_conversation_from_before_the_digests_is_digested_whole_at_its_next_append(
    store: StoreSpec, db: SessionDB
) -> None:
    conversation(db, "c", "one", "echo: one")
    store.execute("DELETE FROM history_digests")  # as a store migrated from version 6 holds it
    assert db.find_history(said("one", "echo: one")) is None
    last = db.append_message("c", "user", "two").message_id
    match = db.find_history(said("one", "echo: one", "two"))
    assert (match.conversation_id, match.message_id, match.latest) == ("c", last, True)


def test_a_history_without_text_finds_nothing(db: SessionDB) -> None:
    conversation(db, "c", "one", "echo: one")
    assert db.find_history([{"role": "assistant", "content": "  "}, {"role": "tool"}]) is None


def test_a_copied_store_keeps_the_digests(db: SessionDB, tmp_path: Path) -> None:
    conversation(db, "c", "one", "echo: one")
    with SessionDB(db_path=tmp_path / "copy.db") as target:
        report = copy_store(db, target)
        assert report.counts["history_digests"] == 2
        assert target.find_history(said("one", "echo: one")).conversation_id == "c"
