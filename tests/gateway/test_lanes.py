"""The lanes (``Scheduler``) on their own: a real SQLite store in tmp_path, real asyncio.

Work items run through a recording ``execute`` instead of an agent, so each test
takes well under a second; the ordering tests repeat many times to give races a
chance. Everything is checked through the scheduler's public face and the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.gateway.errors import GatewayClosed
from hermes.gateway.lanes import MESSAGE, Lane, QueueStore, ResultSink, Scheduler, WorkItem
from hermes.gateway.queued_turn import QueuedTurn
from hermes.gateway.turn_gate import TurnGate
from hermes.state import SessionDB, make_holder
from tests.gateway.harness import until

ROUNDS = 25


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=db_path) as store:
        yield store


def item(conversation: str, text: str, *, sink: ResultSink | None = None) -> WorkItem:
    return WorkItem(
        kind=MESSAGE,
        key=f"test:{conversation}",
        conversation_id=conversation,
        asked=QueuedTurn(text=text),
        sink=sink,
    )


class Recorder:
    """An ``execute`` that records what ran, and how many ran at once (overall and per
    conversation). ``gate`` (an asyncio.Event) holds every item until it is set;
    ``until_company`` holds every item until two have run at once, so a test of side-by-side
    lanes does not hang on how fast the first lane's store calls happen to finish."""

    def __init__(self, gate: asyncio.Event | None = None, *, until_company: bool = False) -> None:
        self.ran: list[tuple[str, str]] = []
        self.running: dict[str, int] = {}
        self.most_at_once = 0
        self.most_per_conversation = 0
        self.started = asyncio.Event()
        self.gate = gate
        self.until_company = until_company
        self.company = asyncio.Event()

    async def __call__(self, work: WorkItem, lane: Lane) -> None:
        conversation = work.conversation_id
        self.running[conversation] = self.running.get(conversation, 0) + 1
        self.most_per_conversation = max(self.most_per_conversation, self.running[conversation])
        self.most_at_once = max(self.most_at_once, sum(self.running.values()))
        if self.most_at_once > 1:
            self.company.set()
        self.ran.append((conversation, work.asked.text))
        self.started.set()
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.until_company:
                await self.company.wait()  # a scheduler that never runs two lanes times out
            await asyncio.sleep(0)  # let the other lanes in
        finally:
            self.running[conversation] -= 1


def scheduler_on(db: SessionDB, execute: Any, *, limit: int = 4) -> Scheduler:
    queue = QueueStore(db, make_holder(), takeover_after=60.0)
    return Scheduler(execute, queue, limit=limit, gate=TurnGate(db))


async def drained(scheduler: Scheduler) -> None:
    await until(lambda: not scheduler.lanes)


def queued_texts(db: SessionDB) -> Awaitable[list[str]]:
    def read() -> list[str]:
        return [row["payload"]["text"] for row in db.gateway.pending_gateway_inputs()]

    return asyncio.to_thread(read)


async def _has(texts: Awaitable[list[str]], count: int) -> bool:
    return len(await texts) >= count


def run(coroutine_fn: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine_fn(), 10))


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_each_conversation_runs_its_items_in_order_one_at_a_time(
    db: SessionDB, round_: int
) -> None:
    async def scenario() -> Recorder:
        recorder = Recorder(until_company=True)
        scheduler = scheduler_on(db, recorder, limit=3)
        scheduler.resume()
        for n in range(6):
            for conversation in ("a", "b", "c", "d"):
                scheduler.submit(item(conversation, f"{conversation}{n}"))
        await drained(scheduler)
        return recorder

    recorder = run(scenario)
    for conversation in ("a", "b", "c", "d"):
        mine = [text for c, text in recorder.ran if c == conversation]
        assert mine == [f"{conversation}{n}" for n in range(6)]
    assert recorder.most_per_conversation == 1
    assert 1 < recorder.most_at_once <= 3  # lanes run side by side, within the limit
    assert db.gateway.pending_gateway_inputs() == []  # every saved wait was taken off


def test_an_item_behind_a_running_one_waits_in_the_store_until_it_starts(db: SessionDB) -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        recorder = Recorder(gate)
        scheduler = scheduler_on(db, recorder)
        scheduler.resume()
        assert scheduler.submit(item("a", "first")) is False
        await recorder.started.wait()
        assert scheduler.submit(item("a", "second")) is True
        assert scheduler.submit(item("b", "elsewhere")) is False  # another lane: no wait
        await until(lambda: queued_texts(db))
        assert await queued_texts(db) == ["second"]
        assert (scheduler.running, scheduler.waiting) == (2, 1)
        gate.set()
        await drained(scheduler)
        assert [text for _, text in recorder.ran] == ["first", "elsewhere", "second"]

    run(scenario)
    assert db.gateway.pending_gateway_inputs() == []


def test_nothing_starts_before_resume_and_paused_items_are_kept_in_arrival_order(
    db: SessionDB,
) -> None:
    async def scenario() -> None:
        recorder = Recorder()
        scheduler = scheduler_on(db, recorder)
        for n in range(5):
            scheduler.submit(item("a" if n % 2 else "b", f"m{n}"))
        await asyncio.sleep(0.05)
        assert recorder.ran == []
        await until(lambda: _has(queued_texts(db), 5))
        assert await queued_texts(db) == [f"m{n}" for n in range(5)]
        scheduler.resume()
        await drained(scheduler)
        assert sorted(text for _, text in recorder.ran) == [f"m{n}" for n in range(5)]

    run(scenario)
    assert db.gateway.pending_gateway_inputs() == []


@pytest.mark.parametrize("limit", [1, 2])
def test_no_more_turns_run_at_once_than_the_limit(db: SessionDB, limit: int) -> None:
    async def scenario() -> Recorder:
        recorder = Recorder()
        scheduler = scheduler_on(db, recorder, limit=limit)
        scheduler.resume()
        for conversation in "abcdef":
            scheduler.submit(item(conversation, "hi"))
        await drained(scheduler)
        return recorder

    recorder = run(scenario)
    assert recorder.most_at_once == limit
    assert len(recorder.ran) == 6


def test_a_failing_item_answers_its_caller_and_the_lane_goes_on(db: SessionDB) -> None:
    async def scenario() -> tuple[Any, list[str]]:
        ran: list[str] = []

        async def execute(work: WorkItem, lane: Lane) -> None:
            ran.append(work.asked.text)
            if work.asked.text == "boom":
                raise RuntimeError("the turn broke")

        scheduler = scheduler_on(db, execute)
        scheduler.resume()
        sink = ResultSink()
        scheduler.submit(item("a", "boom", sink=sink))
        scheduler.submit(item("a", "after"))
        await drained(scheduler)
        return await sink.future, ran

    result, ran = run(scenario)
    assert result.error == "hermes failed inside the gateway"
    assert ran == ["boom", "after"]


@pytest.mark.parametrize("round_", range(5))
def test_another_gateway_holding_the_turn_lock_holds_the_lane(
    db: SessionDB, db_path: Path, round_: int
) -> None:
    async def scenario() -> None:
        recorder = Recorder()
        scheduler = scheduler_on(db, recorder)
        with SessionDB(db_path=db_path) as other:  # another gateway on the store
            assert other.gateway.try_lock_turn("a")
            scheduler.resume()
            scheduler.submit(item("a", "held"))
            scheduler.submit(item("b", "free"))
            await until(lambda: scheduler.waits_elsewhere("a"))
            await until(lambda: ("b", "free") in recorder.ran)
            assert ("a", "held") not in recorder.ran
            other.gateway.unlock_turn("a")
            await drained(scheduler)
            assert recorder.ran[-1] == ("a", "held")
            assert not scheduler.waits_elsewhere("a")
            # The lane gave the lock back when its item was done.
            assert other.gateway.try_lock_turn("a")
            other.gateway.unlock_turn("a")

    run(scenario)


def test_close_keeps_the_waiting_items_and_tells_their_callers(db: SessionDB) -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        recorder = Recorder(gate)
        scheduler = scheduler_on(db, recorder)
        scheduler.resume()
        scheduler.submit(item("a", "running"))
        await recorder.started.wait()
        waiting = ResultSink()
        scheduler.submit(item("a", "waiting", sink=waiting))
        closing = asyncio.create_task(scheduler.close(grace=5))
        await asyncio.sleep(0.02)
        with pytest.raises(GatewayClosed):
            scheduler.submit(item("a", "too late"))
        gate.set()  # the running turn finishes within the grace
        await closing
        with pytest.raises(GatewayClosed):
            await waiting.future
        assert recorder.ran == [("a", "running")]

    run(scenario)
    assert [row["payload"]["text"] for row in db.gateway.pending_gateway_inputs()] == ["waiting"]


def test_interrupt_reaches_the_running_agent_until_its_item_ends(db: SessionDB) -> None:
    class Agent:
        interrupts = 0

        def interrupt(self) -> None:
            self.interrupts += 1

    agent = Agent()

    async def scenario() -> None:
        async def execute(work: WorkItem, lane: Lane) -> None:
            lane.agent = agent
            await until(lambda: agent.interrupts >= 2)  # the first may precede the turn

        scheduler = scheduler_on(db, execute)
        scheduler.resume()
        assert scheduler.interrupt("a") is False  # nothing runs
        scheduler.submit(item("a", "long"))
        await until(lambda: scheduler.running == 1)
        assert scheduler.interrupt("a") is True
        await drained(scheduler)
        seen = agent.interrupts
        await asyncio.sleep(0.25)
        assert agent.interrupts == seen  # it stopped once the item was over

    run(scenario)
