"""Per-conversation FIFO lanes: one turn at a time per conversation (invariant 11).

Every piece of work for a conversation (a user's message, an in-chat command, a
background process's completion event) is a ``WorkItem`` appended to that
conversation's ``Lane``. One worker task per busy lane runs its items strictly in
order; lanes of different conversations run at the same time, at most ``limit`` turns
at once. Before the head of a lane starts, the lane holds the conversation's turn lock
in the store (``turn_gate``), waiting while another gateway on the store runs a turn of
it, so the rule holds across gateways too. An item that has to wait behind another is
written to the store's ``gateway_queue`` first, owned by this gateway, so a shutdown or
crash never loses it and no other gateway answers it; it is deleted from there when its
turn starts. ``close`` stops taking items off the lanes (a lane waiting for the turn
lock stops waiting), persists whatever has not started and lets the running turns
finish (or interrupts them).

Everything here runs on the event loop; turns themselves run in worker threads.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hermes.gateway.envelopes import Origin, WorkResult
from hermes.gateway.errors import GatewayClosed
from hermes.gateway.queued_turn import QueuedTurn
from hermes.gateway.turn_gate import TurnGate, TurnHold

if TYPE_CHECKING:
    from hermes.state.gateway.store import QueuedInput
    from hermes.state.store import SessionDB

log = logging.getLogger(__name__)

MESSAGE, COMMAND, EVENT = "message", "command", "event"
RESUME = "resume"  # a turn a crash cut off, answered (or its user told) at the next start
INTERRUPT_EVERY = 0.1  # seconds between repeated interrupts of a turn asked to stop

_sequence = itertools.count()


class ResultSink:
    """Hands a turn's streamed text and its result to a waiting request (the HTTP API).

    ``on_delta`` is called from the worker thread; everything else on the loop.
    """

    DONE = object()

    def __init__(self, *, stream: bool = False, events: bool = False) -> None:
        self.loop = asyncio.get_running_loop()
        self.stream = stream
        self.events = events  # also hand on the agent's tool events (``on_event``)
        self.future: asyncio.Future[WorkResult] = self.loop.create_future()
        self.deltas: asyncio.Queue[Any] = asyncio.Queue()
        self.streamed = False
        self.sent_chars = 0  # of the streamed text, how much the caller was sent (count_sent)
        # A sink whose caller can answer approvals and steer the turn sets these.
        self.approve: Callable[[str, str], bool] | None = None
        self.steering: Callable[[], list[str]] | None = None

    def on_delta(self, text: str) -> None:
        if text:
            self.streamed = True
            self.loop.call_soon_threadsafe(self.deltas.put_nowait, text)

    def count_sent(self, text: str) -> None:
        """The HTTP writer sent ``text`` (on the loop): a stopped stream's partial answer
        keeps what the client was sent, not what the model wrote after it left."""
        self.sent_chars += len(text)

    def on_event(self, kind: str, data: dict[str, Any]) -> None:
        """An agent event (worker thread), queued among the deltas as ``(kind, data)``."""
        if self.events:
            self.loop.call_soon_threadsafe(self.deltas.put_nowait, (kind, dict(data)))

    def done(self, result: WorkResult) -> None:
        if not self.future.done():
            self.future.set_result(result)
        self.deltas.put_nowait(self.DONE)

    def fail(self, exc: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(exc)
            self.future.exception()  # marked retrieved: nobody may be waiting any more
        self.deltas.put_nowait(self.DONE)


class Interruptible(Protocol):
    """A running turn's agent, as a lane sees it: something to stop."""

    def interrupt(self) -> None: ...


@dataclass(eq=False)
class WorkItem:
    """One thing to do in a conversation, in arrival order."""

    kind: str  # MESSAGE, COMMAND, EVENT or RESUME
    key: str  # the session key whose route this conversation is on
    conversation_id: str
    asked: QueuedTurn  # the turn: its text, history and what its caller chose
    origin: Origin | None = None
    process_id: str | None = None  # for EVENT: the background process that finished
    seq: tuple[int, int] = field(default_factory=lambda: (time.time_ns(), next(_sequence)))
    queue_id: int | None = None  # its row in gateway_queue while it waits
    sink: ResultSink | None = field(default=None, repr=False)
    saving: asyncio.Future[int | None] | None = field(default=None, repr=False)
    turn: TurnHold | None = field(default=None, repr=False)  # its turn lock, once held

    def payload(self) -> dict[str, Any]:
        """Its ``gateway_queue`` payload: where it goes, beside its turn's keys."""
        return {
            "kind": self.kind,
            "conversation_id": self.conversation_id,
            "origin": self.origin.to_dict() if self.origin else None,
            "process_id": self.process_id,
            "seq": list(self.seq),
            **self.asked.to_json(),
        }

    @classmethod
    def from_row(cls, row: QueuedInput) -> WorkItem:
        data = row["payload"]
        seq = data.get("seq") or [int(row.get("enqueued_at", 0) * 1e9), 0]
        return cls(
            kind=data.get("kind", MESSAGE),
            key=row["session_key"],
            conversation_id=data["conversation_id"],
            asked=QueuedTurn.from_json(data),
            origin=Origin.from_dict(data["origin"]) if data.get("origin") else None,
            process_id=data.get("process_id"),
            seq=(int(seq[0]), int(seq[1])),
            queue_id=int(row["id"]),
        )


@dataclass(eq=False)
class Lane:
    """The FIFO of one conversation and what it is running now."""

    conversation_id: str
    items: deque[WorkItem] = field(default_factory=deque)
    running: WorkItem | None = None
    agent: Interruptible | None = None  # the agent running ``running`` (worker thread)
    task: asyncio.Task[None] | None = None
    stopping: asyncio.Task[None] | None = None
    elsewhere: bool = False  # its head waits while another gateway runs a turn of it

    @property
    def busy(self) -> bool:
        return self.running is not None or bool(self.items)


class QueueStore:
    """This gateway's rows in ``gateway_queue`` (blocking calls: use from threads).

    Rows are owned by ``holder``, this run of this gateway: another gateway on the
    store never answers them while this one lives (see ``hermes.state.gateway.queue``).
    """

    def __init__(
        self,
        db: SessionDB,
        holder: str,
        *,
        takeover_after: float,
        unserved: Collection[str] = (),
    ) -> None:
        self.db = db
        self.holder = holder
        self.takeover_after = takeover_after
        # Chat platforms this gateway does not run: it could answer their input but not
        # deliver the answer, so it leaves that input to a gateway that runs them.
        self.unserved = frozenset(unserved)
        self.released = False  # after ``release``, rows are saved released too

    @property
    def owner(self) -> str | None:
        """Who owns the rows saved now: this gateway, or nobody after ``release``."""
        return None if self.released else self.holder

    def save(self, item: WorkItem) -> int:
        return self.db.gateway.enqueue_gateway_input(item.key, item.payload(), owner=self.owner)

    def delete(self, queue_id: int) -> bool:
        """False when the row is no longer ours: another gateway took it over."""
        return self.db.gateway.delete_gateway_input(queue_id, owner=self.holder)

    def claim(self) -> list[WorkItem]:
        """Take the released rows and those of gateways that are gone, oldest first."""
        rows = self.db.gateway.claim_gateway_inputs(
            self.holder,
            takeover_after=self.takeover_after,
            accept=self._deliverable if self.unserved else None,
        )
        items = []
        for row in rows:
            try:
                items.append(WorkItem.from_row(row))
            except (KeyError, TypeError, ValueError):
                log.error("gateway_queue row %s is unreadable; leaving it in place", row.get("id"))
        return sorted(items, key=lambda item: item.seq)

    def _deliverable(self, row: QueuedInput) -> bool:
        origin = row["payload"].get("origin") if isinstance(row["payload"], dict) else None
        return not (isinstance(origin, dict) and origin.get("platform") in self.unserved)

    def heartbeat(self) -> None:
        if not self.released:
            self.db.gateway.gateway_heartbeat(self.holder)

    def release(self) -> int:
        """A graceful stop: whichever gateway starts next answers our rows."""
        self.released = True
        return self.db.gateway.release_gateway_inputs(self.holder)


Execute = Callable[[WorkItem, Lane], Awaitable[None]]


class Scheduler:
    """The lanes of all conversations and the bound on turns running at once."""

    def __init__(self, execute: Execute, store: QueueStore, *, limit: int, gate: TurnGate) -> None:
        self._execute = execute
        self._store = store
        self._gate = gate
        self._slots = asyncio.Semaphore(max(1, limit))
        self.lanes: dict[str, Lane] = {}
        self.paused = True  # nothing starts before ``resume`` (restart: restore first)
        self.closing = False
        self._closed = asyncio.Event()  # ends the waits for turn locks
        self._last_save: asyncio.Future[int | None] | None = None

    # -- taking work ----------------------------------------------------------------

    def submit(self, item: WorkItem) -> bool:
        """Append ``item`` to its conversation's lane; True if it waits behind another."""
        if self.closing:
            raise GatewayClosed()
        lane = self.lanes.get(item.conversation_id)
        if lane is None:
            lane = self.lanes[item.conversation_id] = Lane(item.conversation_id)
        waits = lane.busy
        lane.items.append(item)
        if (waits or self.paused) and item.queue_id is None:
            item.saving = self._save_in_order(item)
        if not self.paused and lane.task is None:
            lane.task = asyncio.create_task(self._work(lane), name=f"lane:{lane.conversation_id}")
        return waits

    def _save_in_order(self, item: WorkItem) -> asyncio.Future[int | None]:
        """Write ``item`` to gateway_queue after every earlier save (ids in arrival order)."""
        previous = self._last_save

        async def save() -> int | None:
            if previous is not None:
                await asyncio.wait([previous])
            return await asyncio.to_thread(self._store.save, item)

        self._last_save = asyncio.ensure_future(save())
        return self._last_save

    def resume(self) -> None:
        self.paused = False
        for lane in list(self.lanes.values()):
            if lane.items and lane.task is None:
                lane.task = asyncio.create_task(
                    self._work(lane), name=f"lane:{lane.conversation_id}"
                )

    def lane(self, conversation_id: str) -> Lane | None:
        return self.lanes.get(conversation_id)

    def waits_elsewhere(self, conversation_id: str) -> bool:
        """True while the conversation's next item waits for another gateway's turn."""
        lane = self.lanes.get(conversation_id)
        return lane is not None and lane.elsewhere

    @property
    def running(self) -> int:
        return sum(1 for lane in self.lanes.values() if lane.running is not None)

    @property
    def waiting(self) -> int:
        return sum(len(lane.items) for lane in self.lanes.values())

    # -- stopping a turn ------------------------------------------------------------

    def interrupt(self, conversation_id: str) -> bool:
        """Stop the running turn of a conversation (``/stop``); False if none runs."""
        lane = self.lanes.get(conversation_id)
        if lane is None or lane.running is None:
            return False
        if lane.stopping is None or lane.stopping.done():
            lane.stopping = asyncio.create_task(self._keep_interrupting(lane, lane.running))
        return True

    def abandon(self, conversation_id: str, sink: ResultSink) -> bool:
        """The caller waiting on ``sink`` went away: stop its running turn as ``/stop``
        would (only that item's turn); False when it is not running."""
        lane = self.lanes.get(conversation_id)
        if lane is None or lane.running is None or lane.running.sink is not sink:
            return False
        return self.interrupt(conversation_id)

    async def _keep_interrupting(self, lane: Lane, item: WorkItem) -> None:
        # The agent clears its interrupt flag when a turn starts, so one interrupt
        # sent just before that would be lost: repeat it until this item is over.
        while lane.running is item:
            if lane.agent is not None:
                lane.agent.interrupt()
            await asyncio.sleep(INTERRUPT_EVERY)

    # -- the worker -----------------------------------------------------------------

    async def _work(self, lane: Lane) -> None:
        try:
            while lane.items and not self.closing:
                # The head keeps its place (and is kept at shutdown) while this waits.
                hold = await self._gate.enter(
                    lane.conversation_id, self._closed, lambda: setattr(lane, "elsewhere", True)
                )
                lane.elsewhere = False
                if hold is None:
                    break
                try:
                    async with self._slots:
                        if self.closing or not lane.items:
                            break
                        item = lane.items.popleft()
                        item.turn = hold
                        lane.running = item
                        try:
                            if not await self._forget_saved(item):
                                continue
                            await self._execute(item, lane)
                        except Exception:
                            log.exception(
                                "work item %s of %s failed", item.kind, lane.conversation_id
                            )
                            if item.sink is not None:
                                item.sink.done(WorkResult(error="hermes failed inside the gateway"))
                        finally:
                            lane.running, lane.agent = None, None
                finally:
                    if not hold.claimed:  # no turn started: nobody else gives it back
                        await asyncio.to_thread(hold.release_unclaimed)
        finally:
            lane.task = None
            if not lane.busy and self.lanes.get(lane.conversation_id) is lane:
                del self.lanes[lane.conversation_id]

    async def _forget_saved(self, item: WorkItem) -> bool:
        """The item starts now: delete its gateway_queue row (at most once from here on).

        False when another gateway took the row over (it answers it, not us)."""
        if item.saving is not None:
            try:
                item.queue_id = await item.saving
            except Exception:
                log.exception("could not keep queued input of %s", item.conversation_id)
            item.saving = None
        if item.queue_id is not None:
            queue_id, item.queue_id = item.queue_id, None
            try:
                if not await asyncio.to_thread(self._store.delete, queue_id):
                    log.warning("queued input %s was taken over by another gateway", queue_id)
                    if item.sink is not None:
                        item.sink.done(WorkResult(error="another gateway took this input over"))
                    return False
            except Exception:  # answer it anyway; a restart may then answer it twice
                log.exception("could not take queued input %s off gateway_queue", queue_id)
        return True

    # -- shutting down --------------------------------------------------------------

    async def close(self, grace: float, *, patience: float = 30.0) -> None:
        """Stop starting items, keep the waiting ones, let running turns end.

        Running turns get ``grace`` seconds to finish, then are interrupted and given
        ``patience`` more seconds.
        """
        self.closing = True
        self._closed.set()
        await self._keep_waiting_items()
        workers = [lane.task for lane in self.lanes.values() if lane.task is not None]
        if not workers:
            return
        _, pending = await asyncio.wait(workers, timeout=max(0.0, grace))
        if pending:
            log.info("interrupting %d running turn(s) to shut down", len(pending))
            for lane in list(self.lanes.values()):
                self.interrupt(lane.conversation_id)
            _, pending = await asyncio.wait(pending, timeout=patience)
            for task in pending:
                log.error("a turn did not stop within %.0f s; leaving it", patience)
                task.cancel()

    async def _keep_waiting_items(self) -> None:
        for lane in list(self.lanes.values()):
            for item in lane.items:
                try:
                    if item.saving is not None:
                        item.queue_id = await item.saving
                    elif item.queue_id is None:
                        item.queue_id = await self._save_in_order(item)
                    item.saving = None
                except Exception:
                    log.exception("could not keep queued input of %s", lane.conversation_id)
                if item.sink is not None:
                    item.sink.fail(GatewayClosed())
