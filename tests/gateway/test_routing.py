"""Session keys and the router: lookups resolve to the tip; a reset key never moves back."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.gateway.messages import Origin
from hermes.gateway.routing import Router, SessionKey
from hermes.state import SessionDB


@pytest.fixture
def db(tmp_path: Path):
    with SessionDB(db_path=tmp_path / "state.db") as store:
        yield store


def rotate(db: SessionDB, parent: str) -> str:
    assert db.try_acquire_compression_lock(parent, "test-holder")
    child = db.publish_compression_child(
        parent, holder="test-holder", messages=[{"role": "user", "content": "summary"}]
    )
    db.release_compression_lock(parent, "test-holder")
    return child


def test_keys_per_chat_thread_and_group_user() -> None:
    dm = Origin("telegram", "5", user_id="5")
    group = Origin("telegram", "-100", thread_id="7", user_id="5", is_group=True)
    assert str(SessionKey.for_origin(dm, group_per_user=True)) == "telegram:5"
    assert str(SessionKey.for_origin(group, group_per_user=False)) == "telegram:-100:t7"
    assert str(SessionKey.for_origin(group, group_per_user=True)) == "telegram:-100:t7:u5"
    key = SessionKey.parse("slack:C1:t1700000000.0001:uU9")
    assert key == SessionKey("slack", "C1", "1700000000.0001", "U9")
    assert key.origin() == Origin("slack", "C1", thread_id="1700000000.0001")


def test_lookup_resolves_to_the_tip_and_moves_the_row(db: SessionDB) -> None:
    router = Router(db)
    root = router.conversation_for(
        "telegram:1", lambda: db.create_session(source="telegram"), platform="telegram"
    )
    child = rotate(db, root)
    assert router.tip("telegram:1", root) == child
    assert (
        db._conn.execute("SELECT session_id FROM gateway_routes").fetchone()["session_id"] == child
    )


def test_after_turn_never_moves_a_reset_key_back(db: SessionDB) -> None:
    router = Router(db)
    old = router.conversation_for(
        "k:1", lambda: db.create_session(source="telegram"), platform="telegram"
    )
    fresh = router.reset("k:1", lambda: db.create_session(source="telegram"), platform="telegram")
    router.after_turn("k:1", old, old, platform="telegram")  # a turn of the old conversation ends
    assert db.get_route("k:1") == fresh
    assert Router(db).current_conversation("k:1") == fresh  # also for a restarted gateway


def test_after_turn_takes_the_agents_session(db: SessionDB) -> None:
    router = Router(db)
    root = router.conversation_for(
        "k:2", lambda: db.create_session(source="telegram"), platform="telegram"
    )
    child = rotate(db, root)
    router.after_turn("k:2", root, child, platform="telegram")
    assert db.get_route("k:2") == child
    assert router.current_conversation("k:2") == root
