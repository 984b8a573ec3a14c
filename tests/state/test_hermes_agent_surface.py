"""Hermes Agent 0.19's columns over a store that already holds conversations: the
migration fills them from what is stored, and the store keeps them right afterwards."""

from __future__ import annotations

import pytest

from hermes.state import SessionDB
from hermes.state.schema.hermes_agent import _MESSAGE_COLUMNS, _SESSION_COLUMNS
from hermes.state.sqlite.schema import MIGRATIONS
from tests.state.helpers import StoreSpec

CALLS = [
    {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}},
    {"id": "c2", "type": "function", "function": {"name": "search", "arguments": "{}"}},
]


def write_conversation(db: SessionDB) -> tuple[str, str]:
    """A rotated conversation with two tool calls and an undone pair; (parent, child)."""
    parent = db.create_session("p", source="cli", model="m")
    db.append_message(parent, "user", "look twice")
    db.append_message(parent, "assistant", None, tool_calls=CALLS)
    db.append_message(parent, "tool", "one", tool_call_id="c1", tool_name="search")
    db.append_message(parent, "tool", "two", tool_call_id="c2", tool_name="search")
    db.append_message(parent, "assistant", "found it")
    db.append_message(parent, "user", "take this back")
    undone = db.append_message(parent, "assistant", "taken back")
    rows = db.get_messages(parent)
    db.mark_undone(parent, [rows[-2]["id"], undone.message_ids[0]])  # type: ignore[list-item]
    holder = "h:pid=1:agent=a"
    assert db.try_acquire_compression_lock(parent, holder)
    child = db.publish_compression_child(
        parent,
        holder=holder,
        messages=[{"role": "user", "content": "[summary]"}],
        covered_uids=[r["message_uid"] for r in rows[:2]],
    )
    db.release_compression_lock(parent, holder)
    db.append_message(child, "user", "and now?")
    return parent, child


def forget_the_surface(store: StoreSpec) -> None:
    """Put the store back as schema 9 left it, its rows kept."""
    store.execute("DROP VIEW gateway_routing")
    store.execute("DROP TABLE session_model_usage")
    store.execute("DROP TABLE state_meta")
    for name, _ in _SESSION_COLUMNS:
        store.execute(f"ALTER TABLE sessions DROP COLUMN {name}")
    for name, _ in _MESSAGE_COLUMNS:
        store.execute(f"ALTER TABLE messages DROP COLUMN {name}")
    for table in ("cron_outbox", "cron_runs", "cron_jobs"):  # migration 12's (17's column too)
        store.execute(f"DROP TABLE {table}")
    for table in ("api_run_inputs", "api_run_events", "api_runs"):  # migration 11's
        store.execute(f"DROP TABLE {table}")
    store.execute("DROP TABLE blobs")  # migration 13's
    store.execute("DROP TABLE api_requests")  # migration 15's
    store.execute("ALTER TABLE segment_coverage DROP COLUMN by_stub")  # migration 16's
    store.execute("DROP TABLE webhook_deliveries")  # migration 18's
    store.execute("DELETE FROM schema_version WHERE version >= 10")


def surface(store: StoreSpec) -> dict[str, object]:
    return {
        "active": store.execute(
            "SELECT session_id, content, compacted, undone, active FROM messages ORDER BY id"
        ),
        "timestamps": store.execute("SELECT COUNT(*) FROM messages WHERE timestamp = created_at"),
        "tool_calls": store.execute("SELECT id, tool_call_count FROM sessions ORDER BY id"),
    }


def test_the_migration_fills_the_columns_from_what_is_stored(store: StoreSpec) -> None:
    with store.open() as db:
        parent, child = write_conversation(db)
    written = surface(store)
    forget_the_surface(store)
    with store.open() as db:  # migration 10 (and what follows) runs again, over the rows
        assert db.backend.schema_version() == MIGRATIONS[-1].version
    assert surface(store) == written
    rows = {(sid, content): active for sid, content, _, _, active in written["active"]}  # type: ignore[union-attr]
    assert rows[(parent, "look twice")] == 1
    assert rows[(parent, "taken back")] == 0  # undone
    assert rows[(child, "[summary]")] == 0  # a compacted copy
    assert rows[(child, "and now?")] == 1
    assert written["tool_calls"] == [(child, 0), (parent, 2)]  # copies are not calls
    assert written["timestamps"] == [(len(written["active"]),)]  # type: ignore[arg-type]


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_a_child_segment_keeps_the_working_directory(store: StoreSpec) -> None:
    with store.open() as db:
        db.create_session("p", source="cli", cwd="/srv/project")
        db.append_message("p", "user", "hi")
        holder = "h:pid=1:agent=a"
        db.try_acquire_compression_lock("p", holder)
        child = db.publish_compression_child(
            "p", holder=holder, messages=[{"role": "user", "content": "[summary]"}]
        )
    assert store.execute("SELECT cwd FROM sessions WHERE id = ?", (child,)) == [("/srv/project",)]
