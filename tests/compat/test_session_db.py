"""hermes_state.SessionDB with Hermes Agent 0.19's argument shapes, checked against the store.

Each test calls a name the way Hermes Agent's users do, then reads the result back
through the plain ``hermes.state.SessionDB`` on the same file, so a compatibility
method that only pretended would fail here.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

import hermes.state
from hermes_state import SessionDB


@pytest.fixture
def db(tmp_path: Path):
    with SessionDB(db_path=tmp_path / "state.db") as db:
        yield db


@pytest.fixture
def store(db: SessionDB):
    """The plain store on the same file, to check what the compat layer wrote."""
    with hermes.state.SessionDB(db.location) as plain:
        yield plain


def rotate(db: SessionDB, parent: str, child: str) -> None:
    """A rotation the Hermes Agent way: end for compression, then a child with a parent."""
    db.end_session(parent, "compression")
    db.create_session(child, "cli", parent_session_id=parent)


# -- sessions -------------------------------------------------------------------------


def test_create_session_takes_source_positionally(db: SessionDB, store) -> None:
    assert db.create_session("s1", "cli") == "s1"
    assert store.get_session("s1")["source"] == "cli"


def test_create_session_accepts_hermes_agent_keywords(db: SessionDB, store) -> None:
    db.create_session(
        "s1",
        "telegram",
        model="m1",
        model_config={"temperature": 0.2},
        system_prompt="be brief",
        user_id="u1",
    )
    row = store.get_session("s1")
    assert (row["model"], row["system_prompt"], row["user_id"]) == ("m1", "be brief", "u1")


def test_creating_an_existing_session_is_a_no_op_keeping_the_first_row(
    db: SessionDB, store
) -> None:
    db.create_session("s1", "cli", model="first")
    assert db.create_session("s1", "telegram", model="second") == "s1"
    row = store.get_session("s1")
    assert (row["source"], row["model"]) == ("cli", "first")


def test_ensure_session_defaults_and_is_idempotent(db: SessionDB, store) -> None:
    assert db.ensure_session("s1") == "s1"
    assert db.ensure_session("s1", source="cli", model="m") == "s1"
    assert store.get_session("s1")["source"] == "unknown"


def test_a_child_of_a_session_ended_for_compression_continues_its_conversation(
    db: SessionDB, store
) -> None:
    db.create_session("p", "cli")
    db.append_message("p", "user", "before")
    rotate(db, "p", "c")
    assert store.get_lineage("p") == ["p", "c"]
    assert store.resolve_tip("p") == "c"
    assert store.get_session("c")["lineage"] == "compression"
    assert store.invariant_violations() == []


def test_a_child_of_a_live_session_is_a_branch(db: SessionDB, store) -> None:
    db.create_session("p", "cli")
    db.create_session("b", "cli", parent_session_id="p")
    row = store.get_session("b")
    assert (row["lineage"], row["conversation_id"], row["parent_session_id"]) == (
        "branch",
        "b",
        "p",
    )
    assert store.resolve_tip("p") == "p"


def test_a_second_compression_child_becomes_a_branch_not_a_fork(db: SessionDB, store) -> None:
    db.create_session("p", "cli")
    rotate(db, "p", "c1")
    db.create_session("c2", "cli", parent_session_id="p")
    assert store.get_lineage("p") == ["p", "c1"]
    assert store.get_session("c2")["lineage"] == "branch"
    assert store.invariant_violations() == []


# -- messages -------------------------------------------------------------------------


def test_append_message_takes_hermes_agent_positional_order_and_returns_the_id(
    db: SessionDB, store
) -> None:
    db.create_session("s1", "cli")
    calls = [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
    first = db.append_message("s1", "assistant", None, None, calls, None, 7, "tool_calls", "why")
    second = db.append_message("s1", "tool", "a b", "ls", None, "call_1")
    assert isinstance(first, int) and second > first
    rows = store.get_messages("s1")
    assert [r["id"] for r in rows] == [first, second]
    assert rows[0]["tool_calls"] == calls
    assert (rows[0]["token_count"], rows[0]["reasoning"]) == (7, "why")
    assert (rows[1]["tool_name"], rows[1]["tool_call_id"]) == ("ls", "call_1")


def test_append_message_to_a_rotated_session_lands_in_the_tip(db: SessionDB, store) -> None:
    db.create_session("p", "cli")
    rotate(db, "p", "c")
    db.append_message("p", "user", "late")
    assert [m["content"] for m in store.get_messages("c")] == ["late"]
    assert store.get_messages("p") == []


def test_get_messages_returns_hermes_agent_rows_with_paging(db: SessionDB) -> None:
    db.create_session("s1", "cli")
    for i in range(5):
        db.append_message("s1", "user", f"m{i}")
    rows = db.get_messages("s1", limit=2, offset=1)
    assert [r["content"] for r in rows] == ["m1", "m2"]
    assert {"id", "session_id", "role", "timestamp", "active", "tool_calls"} <= set(rows[0])
    assert rows[0]["active"] == 1 and rows[0]["timestamp"] > 0
    assert db.get_messages("missing") == []


def test_get_messages_include_inactive_shows_undone_rows(db: SessionDB, store) -> None:
    db.create_session("s1", "cli")
    keep = db.append_message("s1", "user", "keep")
    drop = db.append_message("s1", "user", "drop")
    store.mark_undone("s1", [drop])
    assert [r["id"] for r in db.get_messages("s1")] == [keep]
    rows = db.get_messages("s1", include_inactive=True)
    assert [(r["id"], r["active"]) for r in rows] == [(keep, 1), (drop, 0)]


def test_get_messages_as_conversation_is_openai_shaped(db: SessionDB) -> None:
    db.create_session("s1", "cli")
    calls = [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
    db.append_message("s1", "user", "list files")
    db.append_message("s1", "assistant", None, tool_calls=calls, reasoning="look")
    db.append_message("s1", "tool", "a.txt", tool_name="ls", tool_call_id="c1")
    conversation = db.get_messages_as_conversation("s1")
    assert [m["role"] for m in conversation] == ["user", "assistant", "tool"]
    assert conversation[1]["tool_calls"] == calls
    assert conversation[1]["reasoning"] == "look"
    assert conversation[2]["tool_call_id"] == "c1"
    assert "id" not in conversation[0] and "session_id" not in conversation[0]


def test_get_messages_as_conversation_with_ancestors_spans_the_chain(db: SessionDB) -> None:
    db.create_session("p", "cli")
    db.append_message("p", "user", "one")
    rotate(db, "p", "c")
    db.append_message("c", "user", "two")
    assert [m["content"] for m in db.get_messages_as_conversation("c")] == ["two"]
    with_ancestors = db.get_messages_as_conversation("c", include_ancestors=True)
    assert [m["content"] for m in with_ancestors] == ["one", "two"]


def test_counts(db: SessionDB) -> None:
    db.create_session("a", "cli")
    db.create_session("b", "telegram")
    db.append_message("a", "user", "x")
    db.append_message("a", "user", "y")
    db.append_message("b", "user", "z")
    assert db._conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 3
    assert (db.message_count(), db.message_count("a"), db.message_count(session_id="b")) == (
        3,
        2,
        1,
    )
    assert (db.session_count(), db.session_count(source="cli")) == (2, 1)
    assert db.session_count(exclude_sources=["cli"]) == 1
    rotate(db, "a", "a2")
    assert (db.session_count(), db.session_count(exclude_children=True)) == (3, 2)


# -- titles and metadata ------------------------------------------------------------


def test_titles(db: SessionDB, store) -> None:
    db.create_session("s1", "cli")
    db.create_session("s2", "cli")
    assert db.set_session_title("s1", "  my   project ") is True
    assert db.get_session_title("s1") == "my project"
    assert store.get_session("s1")["title"] == "my project"
    assert db.get_session_by_title("my project")["id"] == "s1"
    with pytest.raises(ValueError, match="already in use"):
        db.set_session_title("s2", "my project")
    assert db.set_session_title("missing", "x") is False
    assert db.get_session_title("missing") is None


def test_auto_title_only_while_the_conversation_has_none(db: SessionDB, store) -> None:
    """hermes-webui titles a new chat with ``set_auto_title_if_empty`` (0.19's name); a
    title the user gave stands, and one the conversation's earlier segment holds too."""
    db.create_session("web1", "webui")
    assert db.set_auto_title_if_empty("web1", "  Planning  the trip ") is True
    assert store.get_session("web1")["title"] == "Planning the trip"
    assert db.set_auto_title_if_empty("web1", "Something else") is False
    assert store.get_session("web1")["title"] == "Planning the trip"
    assert [r["title"] for r in db.list_sessions_rich()] == ["Planning the trip"]

    db.create_session("web2", "webui")
    db.set_session_title("web2", "mine")
    assert db.set_auto_title_if_empty("web2", "auto") is False
    rotate(db, "web2", "web2b")
    titles = (db.get_session_title("web2"), db.get_session_title("web2b"))
    assert db.set_auto_title_if_empty("web2b", "auto") is False
    assert (db.get_session_title("web2"), db.get_session_title("web2b")) == titles

    db.create_session("web3", "webui")
    with pytest.raises(ValueError, match="already in use"):
        db.set_auto_title_if_empty("web3", "mine")
    assert db.set_auto_title_if_empty("missing", "x") is False


def test_resolve_session_by_title_follows_the_numbered_continuation(db: SessionDB) -> None:
    db.create_session("p", "cli")
    db.set_session_title("p", "work")
    rotate(db, "p", "c")
    assert db.resolve_session_by_title("work") == "c"
    assert db.resolve_session_by_title("nothing") is None


def test_update_system_prompt_model_and_token_counts(db: SessionDB, store) -> None:
    db.create_session("s1", "cli")
    db.update_system_prompt("s1", "sys")
    db.update_session_model("s1", "m2")
    db.update_token_counts("s1", 10, 5)
    db.update_token_counts("s1", input_tokens=1, output_tokens=2, model="ignored")
    row = store.get_session("s1")
    assert (row["system_prompt"], row["model"]) == ("sys", "m2")
    assert (row["input_tokens"], row["output_tokens"]) == (11, 7)
    db.update_token_counts("s1", input_tokens=100, output_tokens=50, absolute=True)
    row = store.get_session("s1")
    assert (row["input_tokens"], row["output_tokens"]) == (100, 50)


def test_update_token_counts_creates_a_missing_session_like_hermes_agent(
    db: SessionDB, store
) -> None:
    db.update_token_counts("new", 3, 4, model="m")
    row = store.get_session("new")
    assert (row["source"], row["model"], row["input_tokens"]) == ("unknown", "m", 3)


# -- search and lookup ----------------------------------------------------------------


def test_search_messages_filters_and_shapes(db: SessionDB) -> None:
    db.create_session("cli1", "cli")
    db.create_session("tg1", "telegram")
    db.append_message("cli1", "user", "before")
    db.append_message("cli1", "user", "deploy the kubernetes cluster")
    db.append_message("cli1", "assistant", "kubernetes is deployed")
    db.append_message("cli1", "user", "after")
    db.append_message("tg1", "user", "kubernetes on telegram")
    hits = db.search_messages("kubernetes")
    assert len(hits) == 3
    assert {"session_id", "role", "snippet", "source", "timestamp", "context"} <= set(hits[0])
    assert {h["source"] for h in db.search_messages("kubernetes", source_filter=["telegram"])} == {
        "telegram"
    }
    assert {
        h["source"] for h in db.search_messages("kubernetes", exclude_sources=["telegram"])
    } == {"cli"}
    roles = db.search_messages("kubernetes", role_filter=["assistant"])
    assert [h["role"] for h in roles] == ["assistant"]
    assert len(db.search_messages("kubernetes", limit=1, offset=1)) == 1
    user_hit = next(h for h in db.search_messages("deploy", role_filter=["user"]))
    assert [c["content"] for c in user_hit["context"]] == [
        "before",
        "deploy the kubernetes cluster",
        "kubernetes is deployed",
    ]


def test_search_sessions_and_list_sessions_rich(db: SessionDB) -> None:
    db.create_session("p", "cli")
    db.append_message("p", "user", "first question")
    rotate(db, "p", "c")
    db.append_message("c", "user", "later")
    db.create_session("t", "telegram")
    assert {r["id"] for r in db.search_sessions()} == {"p", "c", "t"}
    assert [r["id"] for r in db.search_sessions(source="telegram")] == ["t"]
    rich = db.list_sessions_rich()
    by_root = {r.get("_lineage_root_id", r["id"]): r for r in rich}
    assert set(by_root) == {"p", "t"}
    assert by_root["p"]["id"] == "c" and by_root["p"]["preview"] == "later"
    assert {
        "id",
        "source",
        "title",
        "started_at",
        "message_count",
        "preview",
        "last_active",
    } <= set(by_root["t"])
    assert [r["id"] for r in db.list_sessions_rich(source="telegram")] == ["t"]
    assert len(db.list_sessions_rich(include_children=True)) == 3


def test_resolve_session_id(db: SessionDB) -> None:
    db.create_session("20260101_aaa111", "cli")
    db.create_session("20260101_aab222", "cli")
    assert db.resolve_session_id("20260101_aaa111") == "20260101_aaa111"
    assert db.resolve_session_id("20260101_aaa") == "20260101_aaa111"
    assert db.resolve_session_id("20260101_aa") is None
    assert db.resolve_session_id("zzz") is None


def test_compression_tip_lineage_and_root(db: SessionDB) -> None:
    db.create_session("a", "cli")
    rotate(db, "a", "b")
    rotate(db, "b", "c")
    assert db.get_compression_tip("a") == "c"
    assert db.get_compression_lineage("b") == ["a", "b", "c"]
    assert db.get_conversation_root("c") == "a"
    assert db.get_compression_tip("unknown") == "unknown"
    assert db.get_compression_lineage("unknown") == []


def test_resolve_resume_session_id_goes_to_the_segment_holding_the_newest_messages(
    db: SessionDB,
) -> None:
    db.create_session("a", "webui")
    db.append_message("a", "user", "first")
    rotate(db, "a", "b")
    db.append_message("b", "user", "after compression")
    assert db.resolve_resume_session_id("a") == "b"
    assert db.resolve_resume_session_id("b") == "b"
    db.create_session("br", "webui", parent_session_id="b")  # a branch: not followed
    db.append_message("br", "user", "elsewhere")
    assert db.resolve_resume_session_id("a") == "b"
    assert db.resolve_resume_session_id("unknown") == "unknown"
    assert db.resolve_resume_session_id("") == ""


def conversation_of(db: SessionDB, sid: str, count: int) -> list[int]:
    db.create_session(sid, "cli")
    ids = []
    for n in range(count):
        ids.append(db.append_message(sid, "user" if n % 2 == 0 else "assistant", f"m{n}"))
    return ids


def test_get_messages_around_is_a_window_on_an_anchor(db: SessionDB) -> None:
    """session_search's primitive: up to ``window`` rows each side, with the counts."""
    ids = conversation_of(db, "s", 12)
    around = db.get_messages_around("s", ids[5], window=2)
    assert [m["id"] for m in around["window"]] == ids[3:8]
    assert [m["content"] for m in around["window"]] == ["m3", "m4", "m5", "m6", "m7"]
    assert (around["messages_before"], around["messages_after"]) == (2, 2)
    edge = db.get_messages_around("s", ids[1], window=3)
    assert [m["id"] for m in edge["window"]] == ids[:5]
    assert (edge["messages_before"], edge["messages_after"]) == (1, 3)
    conversation_of(db, "other", 1)
    empty = {"window": [], "messages_before": 0, "messages_after": 0}
    assert db.get_messages_around("other", ids[5]) == empty
    assert db.get_messages_around("s", 10**9) == empty


def test_get_anchored_view_adds_the_sessions_opening_and_close(db: SessionDB) -> None:
    ids = conversation_of(db, "s", 12)
    tool = db.append_message("s", "tool", "tool output", tool_call_id="c1")
    ids.append(tool)
    ids.append(db.append_message("s", "assistant", "done"))
    view = db.get_anchored_view("s", ids[6], window=1, bookend=2)
    assert [m["content"] for m in view["window"]] == ["m5", "m6", "m7"]
    assert [m["content"] for m in view["bookend_start"]] == ["m0", "m1"]
    assert [m["content"] for m in view["bookend_end"]] == ["m11", "done"]
    near_end = db.get_anchored_view("s", ids[-1], window=2, bookend=2)
    assert [m["role"] for m in near_end["window"]] == ["assistant", "assistant"]  # no tool
    raw = db.get_anchored_view("s", ids[-1], window=2, bookend=0, keep_roles=None)
    assert [m["content"] for m in raw["window"]] == ["m11", "tool output", "done"]
    assert raw["bookend_start"] == [] and raw["bookend_end"] == []
    assert db.get_anchored_view("s", 10**9)["window"] == []


# -- export and deletion ----------------------------------------------------------------


def test_export_session_and_export_all(db: SessionDB) -> None:
    db.create_session("a", "cli")
    db.create_session("b", "telegram")
    db.append_message("a", "user", "hello")
    exported = db.export_session("a")
    assert exported["id"] == "a" and [m["content"] for m in exported["messages"]] == ["hello"]
    assert db.export_session("missing") is None
    assert {s["id"] for s in db.export_all()} == {"a", "b"}
    assert [s["id"] for s in db.export_all(source="telegram")] == ["b"]


def test_delete_session_removes_its_conversation(db: SessionDB, store) -> None:
    db.create_session("a", "cli")
    db.append_message("a", "user", "x")
    rotate(db, "a", "b")
    assert db.delete_session("b") is True
    assert store.get_session("a") is None and store.get_session("b") is None
    assert db.delete_session("b") is False


def test_prune_sessions_deletes_old_ended_sessions_only(db: SessionDB, store) -> None:
    for sid, source in (
        ("old", "cli"),
        ("old_live", "cli"),
        ("old_tg", "telegram"),
        ("new", "cli"),
    ):
        db.create_session(sid, source)
    for sid in ("old", "old_tg", "new"):
        db.end_session(sid, "user_exit")
    long_ago = time.time() - 100 * 86400
    db._conn.execute(
        "UPDATE sessions SET started_at = ?, last_active_at = ? WHERE id != 'new'",
        (long_ago, long_ago),
    )
    assert db.prune_sessions(older_than_days=90, source="cli") == 1
    assert store.get_session("old") is None
    assert store.get_session("old_live") is not None and store.get_session("old_tg") is not None
    assert db.prune_sessions() == 1
    assert store.get_session("new") is not None


# -- the lease and the raw connection ---------------------------------------------------


def test_compression_lock_refuses_empty_ids_and_leases_unknown_ones(db: SessionDB) -> None:
    """Hermes Agent 0.19 leases an id its store does not know yet (upstream's lock
    tests take the lease before creating the session)."""
    db.create_session("s1", "cli")
    assert db.try_acquire_compression_lock("", "me") is False
    assert db.try_acquire_compression_lock("nope", "me") is True
    assert db.get_compression_lock_holder("nope") == "me"
    assert db.try_acquire_compression_lock("nope", "other") is False
    assert db.try_acquire_compression_lock("s1", "me") is True
    assert db.try_acquire_compression_lock("s1", "other") is False
    assert db.get_compression_lock_holder("s1") == "me"
    db.release_compression_lock("s1", "me")
    assert db.get_compression_lock_holder("s1") is None


def test_conn_rows_support_index_and_column_name_access(db: SessionDB) -> None:
    db.create_session("s1", "cli")
    row = db._conn.execute("SELECT id, source FROM sessions").fetchone()
    assert isinstance(row, sqlite3.Row)
    assert (row[0], row["id"], row["source"]) == ("s1", "s1", "cli")
    assert db._conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 1
    assert [r["id"] for r in db._conn.execute("SELECT id FROM sessions").fetchall()] == ["s1"]


def test_the_plain_store_keeps_its_own_rows(db: SessionDB, store) -> None:
    """The compat layer must not change the store's row factory for everyone else."""
    db.create_session("s1", "cli")
    db._conn.execute("SELECT 1").fetchone()
    assert store.get_session("s1")["id"] == "s1"
    assert isinstance(store._conn.execute("SELECT id FROM sessions").fetchone(), dict)
