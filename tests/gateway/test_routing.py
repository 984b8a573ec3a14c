"""Session keys and the router: the store is the only truth for key -> conversation.

Two ``Router``s over two ``SessionDB``s on one store stand for two gateways sharing it;
every test runs on SQLite and on PostgreSQL (the store suite's ``store`` fixture).
"""

from __future__ import annotations

import concurrent.futures
import logging
import random
import threading
import time

import pytest

from hermes.gateway.envelopes import Origin
from hermes.gateway.routing import Router, SessionKey
from hermes.state import SessionDB
from tests.state.helpers import StoreSpec, raw_one, rotate


@pytest.fixture
def db(make_db) -> SessionDB:
    return make_db()


@pytest.fixture
def gateways(make_db) -> tuple[Router, Router]:
    """Two gateways on one store: each its own SessionDB and router."""
    return Router(make_db()), Router(make_db())


def new(router: Router, key: str = "telegram:1"):
    """``create`` for ``key``, as the runner passes it."""
    return lambda: router.db.create_session(source="telegram", session_key=key)


def route_row(db: SessionDB, key: str) -> str | None:
    row = raw_one(db, "SELECT session_id FROM gateway_routes WHERE session_key = ?", (key,))
    return row and row["session_id"]


def test_keys_per_chat_thread_and_group_user() -> None:
    dm = Origin("telegram", "5", user_id="5")
    group = Origin("telegram", "-100", thread_id="7", user_id="5", is_group=True)
    assert str(SessionKey.for_origin(dm, group_per_user=True)) == "telegram:5"
    assert str(SessionKey.for_origin(group, group_per_user=False)) == "telegram:-100:t7"
    assert str(SessionKey.for_origin(group, group_per_user=True)) == "telegram:-100:t7:u5"
    key = SessionKey.parse("slack:C1:t1700000000.0001:uU9")
    assert key == SessionKey("slack", "C1", "1700000000.0001", "U9")
    assert key.origin() == Origin("slack", "C1", thread_id="1700000000.0001")


def test_lookup_resolves_to_the_tip_and_moves_a_lagging_row(db: SessionDB) -> None:
    router = Router(db)
    root = router.conversation_for("telegram:1", new(router), platform="telegram")
    child = rotate(db, root)
    assert router.tip(root) == child
    assert route_row(db, "telegram:1") == child  # rotation moved it in its transaction
    db.gateway.set_route("telegram:1", root)  # a stale id, as an old gateway might have left it
    assert db.gateway.lookup_route("telegram:1").session_id == child
    assert route_row(db, "telegram:1") == child


def test_after_turn_never_moves_a_reset_key_back(db: SessionDB) -> None:
    router = Router(db)
    old = router.conversation_for("k:1", new(router, "k:1"), platform="telegram")
    fresh = router.reset("k:1", new(router, "k:1"), platform="telegram")
    assert not router.after_turn("k:1", old, old, platform="telegram")  # an old turn ends
    assert db.gateway.get_route("k:1") == fresh
    assert Router(db).current_conversation("k:1") == fresh  # also for a restarted gateway


def test_after_turn_takes_the_agents_session(db: SessionDB) -> None:
    router = Router(db)
    root = router.conversation_for("k:2", new(router, "k:2"), platform="telegram")
    child = rotate(db, root)
    db.gateway.set_route("k:2", root)
    assert router.after_turn("k:2", root, child, platform="telegram")
    assert route_row(db, "k:2") == child
    assert router.current_conversation("k:2") == root
    # An agent still on the old segment moves the route forward to the tip, never back.
    assert router.after_turn("k:2", root, root, platform="telegram")
    assert route_row(db, "k:2") == child


def test_a_turn_ending_where_the_last_one_did_skips_the_store(db: SessionDB) -> None:
    """The router remembers the route it settled: the next turn ending on that segment
    neither reads nor writes it (here the row, deleted behind its back, stays gone);
    a turn ending anywhere else, or after a reset through this router, asks the store."""
    router = Router(db)
    root = router.conversation_for("k:3", new(router, "k:3"), platform="telegram")
    assert router.after_turn("k:3", root, root, platform="telegram")  # read: settled
    db.gateway.delete_route("k:3")
    assert router.after_turn("k:3", root, root, platform="telegram")
    assert route_row(db, "k:3") is None  # not recreated: the store was not asked
    child = rotate(db, root)
    assert router.after_turn("k:3", root, child, platform="telegram")
    assert route_row(db, "k:3") == child  # a new segment: asked, and routed again
    newer = router.reset("k:3", new(router, "k:3"), platform="telegram")
    # A turn of the conversation reset away ends where the last one did: still asked.
    assert router.after_turn("k:3", root, child, platform="telegram") is False
    assert route_row(db, "k:3") == newer


def test_a_reset_in_one_gateway_redirects_the_next_lookup_in_the_other(gateways) -> None:
    a, b = gateways
    old = b.conversation_for("telegram:1", new(b), platform="telegram")
    assert a.current_conversation("telegram:1") == old
    fresh = a.reset("telegram:1", new(a), platform="telegram")
    assert b.conversation_for("telegram:1", new(b), platform="telegram") == fresh
    assert b.current_conversation("telegram:1") == fresh


def test_the_other_gateways_finishing_turn_does_not_undo_a_reset(gateways, caplog) -> None:
    caplog.set_level(logging.INFO, logger="hermes.gateway")
    a, b = gateways
    old = b.conversation_for("telegram:1", new(b), platform="telegram")
    child = rotate(b.db, old)  # B's turn rotated the old conversation meanwhile
    fresh = a.reset("telegram:1", new(a), platform="telegram")
    assert not b.after_turn("telegram:1", old, child, platform="telegram")
    assert route_row(a.db, "telegram:1") == fresh
    assert f"now serves conversation {fresh}; not moving it back to {old}" in caplog.text
    # A's own turns in the new conversation still move its route forward.
    fresh_child = rotate(a.db, fresh)
    assert a.after_turn("telegram:1", fresh, fresh_child, platform="telegram")
    assert b.db.gateway.get_route("telegram:1") == fresh_child


def test_adopt_never_overwrites_a_route(gateways) -> None:
    a, b = gateways
    mine = a.conversation_for("telegram:1", new(a), platform="telegram")
    other = b.db.create_session(source="api_server")
    assert not b.adopt("telegram:1", other, platform="api_server")
    assert a.current_conversation("telegram:1") == mine
    assert b.adopt("api_server:x", other, platform="api_server")
    assert not a.adopt("api_server:x", mine, platform="api_server")
    assert a.current_conversation("api_server:x") == other


def test_a_route_to_a_deleted_conversation_is_free_again(gateways) -> None:
    a, b = gateways
    gone = a.conversation_for("telegram:1", new(a), platform="telegram")
    a.db.delete_conversation(gone)  # deletes the rows routed to it
    a.db.gateway.set_route("telegram:1", gone)  # a row left behind anyway
    assert b.current_conversation("telegram:1") is None
    assert route_row(b.db, "telegram:1") is None  # forgotten by the lookup
    a.db.gateway.set_route("telegram:1", gone)
    assert b.adopt("telegram:1", b.db.create_session(source="telegram"), platform="telegram")


def test_two_gateways_starting_one_chat_at_once_agree(gateways) -> None:
    a, b = gateways
    barrier = threading.Barrier(2)

    def first_message(router: Router) -> str:
        def create() -> str:
            sid = router.db.create_session(source="telegram", session_key="telegram:1")
            barrier.wait(timeout=30)  # both have made a conversation before either routes
            return sid

        return router.conversation_for("telegram:1", create, platform="telegram")

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        got = list(pool.map(first_message, (a, b)))
    assert got[0] == got[1] == a.current_conversation("telegram:1")
    # The loser's conversation was empty and is gone.
    assert [c["conversation_id"] for c in a.db.list_conversations()] == [got[0]]


def test_lookups_do_not_take_the_write_lock(db: SessionDB, store: StoreSpec) -> None:
    router = Router(db)
    conversation = router.conversation_for("telegram:1", new(router), platform="telegram")
    blocker = store.raw()
    try:
        if store.kind == "sqlite":
            blocker.execute("BEGIN IMMEDIATE")  # another process holding the write lock
        else:
            blocker.execute("BEGIN")
            blocker.execute("LOCK TABLE gateway_routes, sessions IN EXCLUSIVE MODE")
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            lookup = pool.submit(router.current_conversation, "telegram:1")
            assert lookup.result(timeout=5) == conversation
            settled = pool.submit(
                router.after_turn, "telegram:1", conversation, conversation, platform="telegram"
            )
            assert settled.result(timeout=5)  # nothing to move: a read tells
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_a_read_only_store_looks_up_without_writing(make_db) -> None:
    writer = make_db()
    root = writer.create_session(source="telegram")
    child = rotate(writer, root)
    writer.gateway.set_route("telegram:1", root)
    reader = make_db(read_only=True)
    assert Router(reader).current_conversation("telegram:1") == root
    assert reader.gateway.get_route("telegram:1") == child
    assert route_row(writer, "telegram:1") == root  # the reader left the row alone


def test_racing_turns_and_resets_never_move_the_route_back(gateways) -> None:
    """Resets (serialised, so "the last" is defined) race after_turn calls for every
    conversation, new and old, from both gateways; a watcher sees the route's
    conversation only ever move on, and it ends on the last reset's conversation."""
    key = "telegram:race"
    order: list[str] = []  # conversations, in the order their resets happen
    reset_lock = threading.Lock()
    done = threading.Event()
    errors: list[BaseException] = []

    def create_for(router: Router):
        def create() -> str:
            sid = router.db.create_session(source="telegram", session_key=key)
            order.append(sid)  # known before the route can point at it
            return sid

        return create

    def guarded(body):
        def run(*args) -> None:
            try:
                body(*args)
            except BaseException as exc:
                errors.append(exc)
                done.set()

        return run

    @guarded
    def resets(router: Router, seed: int) -> None:
        rnd = random.Random(seed)
        for _ in range(12):
            with reset_lock:
                router.reset(key, create_for(router), platform="telegram")
            time.sleep(rnd.uniform(0, 0.01))

    @guarded
    def turns(router: Router, seed: int) -> None:
        rnd = random.Random(seed)
        while not done.is_set():
            conversation = rnd.choice(order[-3:] if rnd.random() < 0.7 else order)
            router.after_turn(key, conversation, conversation, platform="telegram")

    @guarded
    def watch(router: Router) -> None:
        seen = 0
        while not done.is_set():
            position = order.index(router.current_conversation(key))
            assert position >= seen, f"the route moved back from {order[seen]}"
            seen = position

    a, b = gateways
    with reset_lock:
        a.reset(key, create_for(a), platform="telegram")
    racers = [threading.Thread(target=resets, args=(r, n)) for n, r in enumerate((a, b))]
    others = [threading.Thread(target=turns, args=(r, 10 + n)) for n, r in enumerate((a, b, a, b))]
    others.append(threading.Thread(target=watch, args=(b,)))
    for thread in racers + others:
        thread.start()
    for thread in racers:
        thread.join(timeout=120)
    done.set()
    for thread in others:
        thread.join(timeout=60)
    assert not errors, errors
    assert len(order) == 25
    assert a.current_conversation(key) == b.current_conversation(key) == order[-1]
    assert route_row(a.db, key) == order[-1]
