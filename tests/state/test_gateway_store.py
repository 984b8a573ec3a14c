"""The gateway's part of the store is reached as ``db.gateway``, apart from SessionDB.

Routes, the queue, heartbeats and turn locks are the gateway's concern: ``SessionDB``
keeps the names every caller uses, and ``db.gateway`` (one per SessionDB, on the same
backend) holds the rest. Its rows are typed: a ``Route``, a ``QueuedInput``.
Each test runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

from typing import get_type_hints

import pytest

from hermes.state import ReadOnlyStoreError, SessionDB
from hermes.state.gateway.routes import Route
from hermes.state.gateway.store import GatewayStore, QueuedInput
from tests.stores import DBFactory

GATEWAY_METHODS = (
    "try_lock_turn",
    "unlock_turn",
    "lookup_route",
    "get_route",
    "claim_route",
    "advance_route",
    "set_route",
    "delete_route",
    "enqueue_gateway_input",
    "pending_gateway_inputs",
    "delete_gateway_input",
    "claim_gateway_inputs",
    "release_gateway_inputs",
    "gateway_heartbeat",
)


def test_the_gateway_methods_live_behind_db_gateway(db: SessionDB) -> None:
    assert isinstance(db.gateway, GatewayStore)
    assert db.gateway is db.gateway  # built once
    assert [m for m in GATEWAY_METHODS if hasattr(db, m)] == []
    assert [m for m in GATEWAY_METHODS if not callable(getattr(db.gateway, m, None))] == []


def test_the_facade_shares_its_store(make_db: DBFactory) -> None:
    first, second = make_db(), make_db()
    sid = first.create_session(source="telegram")
    assert first.gateway.claim_route("telegram:1", sid, platform="telegram")
    assert second.gateway.lookup_route("telegram:1") == Route(sid, sid)
    first.delete_conversation(sid)  # the store's own write sees the route go with it
    assert second.gateway.lookup_route("telegram:1") is None


def test_queued_inputs_are_typed_rows(db: SessionDB) -> None:
    queued = db.gateway.enqueue_gateway_input("telegram:1", {"text": "hi"}, owner="g1")
    (row,) = db.gateway.pending_gateway_inputs()
    assert set(row) == set(get_type_hints(QueuedInput))
    assert (row["id"], row["session_key"], row["payload"], row["owner"]) == (
        queued,
        "telegram:1",
        {"text": "hi"},
        "g1",
    )
    (claimed,) = db.gateway.claim_gateway_inputs("g2", takeover_after=0.0)
    assert set(claimed) == set(get_type_hints(QueuedInput))


def test_a_read_only_store_has_no_turn_lock(make_db: DBFactory) -> None:
    make_db().create_session("s1", source="cli")
    reader = make_db(read_only=True)
    with pytest.raises(ReadOnlyStoreError):
        reader.gateway.try_lock_turn("s1")
    reader.gateway.unlock_turn("s1")  # nothing to give back, nothing raised
