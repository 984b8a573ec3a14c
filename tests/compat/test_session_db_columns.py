"""hermes_state.SessionDB writes and reads Hermes Agent 0.19's columns as 0.19 does, on
both backends: the provider fields of a message, the session's tool-call count, and
``update_token_counts``'s usage, cost and route figures. Each test reads the columns
back with plain SQL too, as third-party readers of state.db do."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from hermes_state import SessionDB
from tests.state.helpers import StoreSpec

DETAILS = [
    {"type": "reasoning.summary", "summary": "weighing the tools"},
    {"type": "reasoning.encrypted_content", "encrypted_content": "abc123"},
]
CODEX_ITEMS = [{"type": "reasoning", "id": "rs_1", "encrypted_content": "xyz"}]
CODEX_MESSAGES = [{"type": "message", "id": "msg_1", "phase": "final_answer"}]


def calls(n: int) -> list[dict]:
    return [
        {"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        for i in range(n)
    ]


@pytest.fixture
def db(store: StoreSpec) -> Iterator[SessionDB]:
    if store.kind == "sqlite":
        opened = SessionDB(db_path=store.path)
    else:
        opened = SessionDB(url=store.url)
    with opened:
        yield opened


def test_provider_fields_are_kept_in_their_columns_and_replayed(
    db: SessionDB, store: StoreSpec
) -> None:
    db.create_session("s1", "cli")
    db.append_message("s1", "user", "hello")
    db.append_message(
        "s1",
        "assistant",
        "hi",
        finish_reason="stop",
        reasoning="short summary",
        reasoning_content="the provider's scratchpad",
        reasoning_details=DETAILS,
        codex_reasoning_items=CODEX_ITEMS,
        codex_message_items=CODEX_MESSAGES,
        platform_message_id="tg-42",
        api_content="hi (as sent)",
    )
    db.append_message("s1", "assistant", "again", reasoning_content="")
    stored = store.execute(
        "SELECT finish_reason, reasoning, reasoning_content, reasoning_details,"
        " codex_reasoning_items, codex_message_items, platform_message_id, api_content"
        " FROM messages WHERE content = 'hi'"
    )
    assert stored[0][:3] == ("stop", "short summary", "the provider's scratchpad")
    assert stored[0][6:] == ("tg-42", "hi (as sent)")
    assert '"encrypted_content": "abc123"' in stored[0][3]

    rows = db.get_messages("s1")
    assert rows[1]["finish_reason"] == "stop"
    assert rows[1]["reasoning_content"] == "the provider's scratchpad"
    assert rows[0]["finish_reason"] is None

    user, assistant, empty = db.get_messages_as_conversation("s1")
    assert "reasoning_content" not in user and "finish_reason" not in user
    assert assistant["finish_reason"] == "stop"
    assert (assistant["reasoning"], assistant["reasoning_content"]) == (
        "short summary",
        "the provider's scratchpad",
    )
    assert assistant["reasoning_details"] == DETAILS
    assert assistant["codex_reasoning_items"] == CODEX_ITEMS
    assert assistant["codex_message_items"] == CODEX_MESSAGES
    assert (assistant["message_id"], assistant["api_content"]) == ("tg-42", "hi (as sent)")
    assert empty["reasoning_content"] == ""  # strict replays need it, even empty
    assert "reasoning" not in empty


def test_reasoning_content_alone_is_not_the_reasoning(db: SessionDB) -> None:
    db.create_session("s1", "cli")
    db.append_message("s1", "assistant", "hi", reasoning_content="scratch")
    (row,) = db.get_messages("s1")
    assert (row["reasoning"], row["reasoning_content"]) == (None, "scratch")


def test_provider_fields_come_back_across_a_compression_chain(db: SessionDB) -> None:
    db.create_session("p", "cli")
    db.append_message("p", "assistant", "first", finish_reason="length")
    db.end_session("p", "compression")
    db.create_session("c", "cli", parent_session_id="p")
    db.append_message("c", "assistant", "second", reasoning_details=DETAILS)
    history = db.get_messages_as_conversation("c", include_ancestors=True)
    assert [m.get("finish_reason") for m in history] == ["length", None]
    assert history[1]["reasoning_details"] == DETAILS


def test_tool_call_count_counts_calls_not_results(db: SessionDB, store: StoreSpec) -> None:
    db.create_session("s1", "cli")
    db.append_message("s1", "user", "list three dirs")
    db.append_message("s1", "assistant", None, tool_calls=calls(3))
    for i in range(3):
        db.append_message("s1", "tool", "ok", tool_call_id=f"c{i}", tool_name="ls")
    db.append_message("s1", "assistant", None, tool_calls=calls(1))
    session = db.get_session("s1")
    assert session is not None
    assert (session["tool_call_count"], session["message_count"]) == (4, 6)
    assert store.execute("SELECT tool_call_count FROM sessions WHERE id = 's1'") == [(4,)]


def test_get_session_has_hermes_agent_columns(db: SessionDB) -> None:
    db.create_session("s1", "cli", cwd="/home/ada/project")
    session = db.get_session("s1")
    assert session is not None
    assert session["cwd"] == "/home/ada/project"
    assert (session["api_call_count"], session["cache_read_tokens"]) == (0, 0)
    assert session["estimated_cost_usd"] is None


def test_update_token_counts_adds_every_figure(db: SessionDB, store: StoreSpec) -> None:
    db.create_session("s1", "cli")
    for _ in range(2):
        db.update_token_counts(
            "s1",
            input_tokens=100,
            output_tokens=40,
            model="m1",
            cache_read_tokens=30,
            cache_write_tokens=5,
            reasoning_tokens=10,
            estimated_cost_usd=0.25,
            actual_cost_usd=0.2,
            cost_status="actual",
            cost_source="provider",
            billing_provider="openrouter",
            api_call_count=1,
        )
    assert store.execute(
        "SELECT model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
        " reasoning_tokens, api_call_count, estimated_cost_usd, actual_cost_usd,"
        " cost_status, billing_provider FROM sessions WHERE id = 's1'"
    ) == [("m1", 200, 80, 60, 10, 20, 2, 0.5, 0.4, "actual", "openrouter")]
    assert store.execute(
        "SELECT model, billing_provider, task, input_tokens, api_call_count,"
        " estimated_cost_usd FROM session_model_usage WHERE session_id = 's1'"
    ) == [("m1", "openrouter", "", 200, 2, 0.5)]


def test_update_token_counts_splits_usage_by_model(db: SessionDB, store: StoreSpec) -> None:
    db.create_session("s1", "cli", model="m1")
    db.update_token_counts("s1", input_tokens=10, output_tokens=1, api_call_count=1)
    db.update_token_counts("s1", input_tokens=20, output_tokens=2, model="m2", api_call_count=1)
    assert store.execute("SELECT model, api_call_count FROM sessions WHERE id = 's1'") == [
        ("m1", 2)
    ]
    assert store.execute(
        "SELECT model, input_tokens FROM session_model_usage WHERE session_id = 's1' ORDER BY model"
    ) == [("m1", 10), ("m2", 20)]


def test_update_token_counts_absolute_sets_the_totals(db: SessionDB, store: StoreSpec) -> None:
    db.create_session("s1", "cli")
    db.update_token_counts("s1", input_tokens=100, output_tokens=50, api_call_count=1)
    db.update_token_counts(
        "s1",
        input_tokens=500,
        output_tokens=70,
        cache_read_tokens=9,
        estimated_cost_usd=1.5,
        api_call_count=5,
        absolute=True,
    )
    assert store.execute(
        "SELECT input_tokens, output_tokens, cache_read_tokens, api_call_count,"
        " estimated_cost_usd FROM sessions WHERE id = 's1'"
    ) == [(500, 70, 9, 5, 1.5)]
    # Running totals cannot be split by model: only the added call is in the per-model rows.
    assert store.execute("SELECT input_tokens FROM session_model_usage") == [(100,)]


def test_update_token_counts_fills_an_empty_model_only(db: SessionDB) -> None:
    db.create_session("s1", "cli")
    db.update_token_counts("s1", input_tokens=0, output_tokens=0, model="not yet")
    assert db.get_session("s1")["model"] is None  # type: ignore[index]  # no usage: no model
    # A call that reports only its cost is usage too (0.19 fills the model then).
    db.update_token_counts("s1", model="m1", estimated_cost_usd=0.01)
    db.update_token_counts("s1", input_tokens=1, output_tokens=1, model="m2")
    assert db.get_session("s1")["model"] == "m1"  # type: ignore[index]


def test_first_accounted_call_names_the_route_that_answered(db: SessionDB) -> None:
    db.create_session("s1", "cli", model="primary")
    db.update_token_counts(
        "s1", input_tokens=5, output_tokens=1, model="fallback", billing_provider="nous",
        api_call_count=1,
    )  # fmt: skip
    db.update_token_counts(
        "s1", input_tokens=5, output_tokens=1, model="third", billing_provider="other",
        api_call_count=1,
    )  # fmt: skip
    session = db.get_session("s1")
    assert session is not None
    assert (session["model"], session["billing_provider"]) == ("fallback", "nous")


def test_provider_fields_of_a_foreign_shape_are_text_or_dropped(
    db: SessionDB, store: StoreSpec
) -> None:
    db.create_session("s1", "telegram")
    db.append_message("s1", "user", "hi", platform_message_id=12345)  # type: ignore[arg-type]
    # A client's message may carry any value under these names; the store keeps text.
    db.append_messages("s1", [{"role": "assistant", "content": "ok", "api_content": 7,
                               "reasoning_content": {"not": "text"}}])  # fmt: skip
    assert store.execute(
        "SELECT platform_message_id, api_content, reasoning_content FROM messages ORDER BY id"
    ) == [("12345", None, None), (None, None, None)]
    assert db.get_messages_as_conversation("s1")[0]["message_id"] == "12345"


# -- state_meta and the start-up upkeep -------------------------------------------------


def old_and_ended(db: SessionDB, store: StoreSpec, sid: str, days: int = 100) -> None:
    db.create_session(sid, "cli")
    db.end_session(sid, "done")
    store.execute(
        "UPDATE sessions SET started_at = ? WHERE id = ?", (time.time() - days * 86400, sid)
    )


def test_state_meta_keeps_a_value_per_key(db: SessionDB, store: StoreSpec) -> None:
    assert db.get_meta("nothing") is None
    db.set_meta("k", "v1")
    db.set_meta("k", "v2")
    db.set_meta("other", "x")
    assert (db.get_meta("k"), db.get_meta("other")) == ("v2", "x")
    assert store.execute("SELECT key, value FROM state_meta ORDER BY key") == [
        ("k", "v2"),
        ("other", "x"),
    ]


def test_auto_maintenance_runs_once_per_interval(db: SessionDB, store: StoreSpec) -> None:
    old_and_ended(db, store, "old")
    db.create_session("open", "cli")
    first = db.maybe_auto_prune_and_vacuum(retention_days=90, min_interval_hours=24)
    assert (first["skipped"], first["pruned"], first.get("error")) == (False, 1, None)
    assert first["vacuumed"] is True
    assert db.get_session("old") is None and db.get_session("open") is not None
    recorded = db.get_meta("last_auto_prune")
    assert recorded is not None and abs(float(recorded) - time.time()) < 3600

    old_and_ended(db, store, "old2")
    second = db.maybe_auto_prune_and_vacuum(retention_days=90, min_interval_hours=24)
    assert (second["skipped"], second["pruned"]) == (True, 0)
    assert db.get_session("old2") is not None

    db.set_meta("last_auto_prune", str(time.time() - 48 * 3600))
    third = db.maybe_auto_prune_and_vacuum(retention_days=90, min_interval_hours=24)
    assert (third["skipped"], third["pruned"]) == (False, 1)
    assert db.get_session("old2") is None


def test_auto_maintenance_with_nothing_to_prune_does_not_vacuum(db: SessionDB) -> None:
    db.create_session("fresh", "cli")
    result = db.maybe_auto_prune_and_vacuum(retention_days=90)
    assert (result["pruned"], result["vacuumed"]) == (0, False)
    assert db.get_meta("last_auto_prune") is not None


@pytest.mark.parametrize("carried_by", ["watermark", "coverage"])
def test_a_rotations_copies_replay_as_their_originals(db: SessionDB, carried_by: str) -> None:
    db.create_session("p", "cli")
    first = db.append_message("p", "user", "why?")
    db.append_message(
        "p", "assistant", "because", finish_reason="length", reasoning_content="scratch",
        reasoning_details=DETAILS, api_content="because (as sent)",
    )  # fmt: skip
    uids = [m["message_uid"] for m in db.get_messages("p")]
    holder = "h:pid=1:agent=a"
    assert db.try_acquire_compression_lock("p", holder)
    kept = {"watermark": {"watermark": first}, "coverage": {"covered_uids": uids[:1]}}
    child = db.publish_compression_child(
        "p", holder=holder, messages=[{"role": "user", "content": "[summary]"}],
        **kept[carried_by],  # type: ignore[arg-type]
    )  # fmt: skip
    db.release_compression_lock("p", holder)
    summary, copy = db.get_messages_as_conversation(child)
    assert copy["content"] == "because"
    assert (copy["finish_reason"], copy["reasoning_content"]) == ("length", "scratch")
    assert copy["reasoning_details"] == DETAILS
    assert copy["api_content"] == "because (as sent)"
