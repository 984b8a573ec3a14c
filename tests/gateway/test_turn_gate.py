"""The turn gate and its holds on their own: a real SQLite store in tmp_path, where a
second ``SessionDB`` on the same file stands in for another gateway (it holds turn
locks of its own), real asyncio and real threads."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.gateway.turn_gate import TurnGate, TurnHold
from hermes.state import SessionDB

ROUNDS = 30


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=db_path) as store:
        yield store


@pytest.fixture
def other(db_path: Path, db: SessionDB) -> Iterator[SessionDB]:
    """Another gateway on the same store."""
    with SessionDB(db_path=db_path) as store:
        yield store


def held_elsewhere(other: SessionDB, conversation: str) -> bool:
    """True while someone else holds the conversation's turn lock (probing gives it back)."""
    if other.gateway.try_lock_turn(conversation):
        other.gateway.unlock_turn(conversation)
        return False
    return True


def enter(gate: TurnGate, conversation: str, closing: asyncio.Event | None = None, **kw):
    async def go():
        return await gate.enter(conversation, closing or asyncio.Event(), **kw)

    return asyncio.run(asyncio.wait_for(go(), 10))


def test_a_hold_keeps_other_gateways_out_until_it_is_released(
    db: SessionDB, other: SessionDB
) -> None:
    hold = enter(TurnGate(db), "c1")
    assert isinstance(hold, TurnHold) and hold.error is None
    assert held_elsewhere(other, "c1")
    assert not held_elsewhere(other, "c2")  # one conversation's lock, not the store's
    hold.release()
    assert not held_elsewhere(other, "c1")
    hold.release()  # twice is harmless
    assert not held_elsewhere(other, "c1")


def test_releasing_an_old_hold_again_leaves_the_next_hold_alone(
    db: SessionDB, other: SessionDB
) -> None:
    gate = TurnGate(db)
    first = enter(gate, "c1")
    first.release()
    second = enter(gate, "c1")  # the next item of the conversation, same gateway
    first.release()
    first.release_unclaimed()
    assert held_elsewhere(other, "c1")
    second.release()
    assert not held_elsewhere(other, "c1")


@pytest.mark.parametrize("round_", range(5))
def test_enter_waits_while_another_gateway_holds_the_lock(
    db: SessionDB, other: SessionDB, round_: int
) -> None:
    assert other.gateway.try_lock_turn("c1")
    waits: list[str] = []

    async def scenario() -> TurnHold | None:
        entering = asyncio.create_task(
            TurnGate(db).enter("c1", asyncio.Event(), lambda: waits.append("waiting"))
        )
        for _ in range(1000):
            if waits:
                break
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.2)  # a few more polls, all refused
        assert not entering.done()  # it waits, it does not take the lock
        await asyncio.to_thread(other.gateway.unlock_turn, "c1")
        return await entering

    hold = asyncio.run(asyncio.wait_for(scenario(), 10))
    assert waits == ["waiting"]  # told once, however often it polled
    assert hold is not None and hold.error is None
    assert held_elsewhere(other, "c1")
    hold.release()


def test_closing_ends_the_wait_without_the_lock(db: SessionDB, other: SessionDB) -> None:
    assert other.gateway.try_lock_turn("c1")

    async def scenario() -> TurnHold | None:
        closing = asyncio.Event()
        entering = asyncio.create_task(TurnGate(db).enter("c1", closing))
        await asyncio.sleep(0.05)
        closing.set()
        return await entering

    assert asyncio.run(asyncio.wait_for(scenario(), 10)) is None
    other.gateway.unlock_turn("c1")
    assert not held_elsewhere(other, "c1")  # the closing gateway took nothing


def test_a_gateway_already_closing_does_not_take_a_free_lock(
    db: SessionDB, other: SessionDB
) -> None:
    closing = asyncio.Event()
    closing.set()
    assert enter(TurnGate(db), "c1", closing) is None
    assert not held_elsewhere(other, "c1")


def test_on_sqlite_the_lock_is_taken_without_waiting_for_a_thread(
    db: SessionDB, other: SessionDB
) -> None:
    """SQLite's turn lock is a system call, taken on the loop itself: a gateway whose
    worker threads are all busy (here the loop's only one) still starts its turns."""

    async def scenario() -> TurnHold | None:
        loop = asyncio.get_running_loop()
        pool = concurrent.futures.ThreadPoolExecutor(1)
        loop.set_default_executor(pool)
        busy = threading.Event()
        blocker = loop.run_in_executor(None, busy.wait, 10)
        try:
            return await asyncio.wait_for(TurnGate(db).enter("c1", asyncio.Event()), 2)
        finally:
            busy.set()
            await blocker

    assert db.gateway.turn_locks_instant
    hold = asyncio.run(scenario())
    assert hold is not None and hold.error is None
    assert held_elsewhere(other, "c1")
    hold.release()


def test_a_store_that_cannot_lock_gives_a_hold_with_a_sentence(
    db_path: Path, db: SessionDB
) -> None:
    with SessionDB(db_path=db_path, read_only=True) as read_only:
        hold = enter(TurnGate(read_only), "c1")
    assert hold is not None and hold.error is not None
    assert hold.error.startswith("could not take this conversation's turn lock: ")
    assert "\n" not in hold.error
    assert hold.claim() is False  # nothing held: the turn reports the error instead
    hold.release()  # and giving back nothing is harmless


def test_a_claimed_hold_is_released_by_its_turn_not_by_the_lane(
    db: SessionDB, other: SessionDB
) -> None:
    hold = enter(TurnGate(db), "c1")
    assert hold.claim() is True
    hold.release_unclaimed()  # the lane's clean-up: the turn owns it now
    assert held_elsewhere(other, "c1")
    hold.release()
    assert not held_elsewhere(other, "c1")
    assert hold.claim() is False  # a released hold cannot be claimed again


def test_an_unclaimed_hold_is_given_back_by_the_lane(db: SessionDB, other: SessionDB) -> None:
    hold = enter(TurnGate(db), "c1")
    hold.release_unclaimed()
    assert not held_elsewhere(other, "c1")
    assert hold.claim() is False


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_claim_racing_the_lanes_release_leaves_exactly_one_owner(
    db: SessionDB, other: SessionDB, round_: int
) -> None:
    """A turn starting in a worker thread while the lane gives up on it: either the turn
    claimed the lock (and holds it until it releases) or the lane gave it back."""
    hold = enter(TurnGate(db), "c1")
    start = threading.Barrier(2)
    claimed: list[bool] = []

    def turn() -> None:
        start.wait(5)
        claimed.append(hold.claim())

    def lane() -> None:
        start.wait(5)
        hold.release_unclaimed()

    threads = [threading.Thread(target=turn), threading.Thread(target=lane)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert held_elsewhere(other, "c1") == claimed[0]
    hold.release()
    assert not held_elsewhere(other, "c1")
