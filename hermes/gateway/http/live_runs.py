"""API runs while they run: their sink, their events in the store, stop, steer, approval.

A run is a work item whose options name a ``run_id`` (``runs`` made it). When its
turn starts on a gateway (the one that took the request, or, after a restart, whichever
claimed it from the queue), ``Runs.begin`` attaches a ``RunSink``: the agent's deltas
and tool events become the run's events in the store (batched: one write carries every
event that arrived while the previous one was being written), a risky command asks for
approval with an ``approval.request`` event and waits, bounded, for an answer, and
steering is handed to the turn before its next model call. While it runs, the gateway
looks in the store for what callers sent through any gateway (stop, steer, approval
answers). ``ActiveRun.end`` writes the outcome: completed, failed, cancelled, or back
to queued when a shutdown kept the item for the next start.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from hermes.gateway.envelopes import WorkResult
from hermes.gateway.lanes import ResultSink, WorkItem
from hermes.redaction import redact
from hermes.state.gateway.api_runs import TERMINAL, RunStore

log = logging.getLogger(__name__)

LOOK_EVERY = 0.1  # seconds between looks for what callers sent a running run
APPROVE_CHOICES = ("once", "session", "always")  # 0.19's names; each allows this command once
CHOICES = ["once", "deny"]
ORPHANED = "The gateway running this turn stopped before it finished; start a new run to ask again."  # what hermes offers: no standing permission from an API call
UNSTARTED = (
    "The gateway that took this run stopped before its turn began; start a new run to ask again."
)


def now() -> float:
    return time.time()


class _Recorder:
    """A run's events on their way to the store, in order, batched (on the loop)."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self.loop = asyncio.get_running_loop()
        self.pending: list[tuple[str, dict[str, Any]]] = []
        self.fields: dict[str, Any] = {}
        self.writer: asyncio.Task[None] | None = None
        self.idle = asyncio.Event()
        self.idle.set()

    def add_threadsafe(self, name: str, data: dict[str, Any], **fields: Any) -> None:
        self.loop.call_soon_threadsafe(self.add, name, data, fields)

    def add(self, name: str, data: dict[str, Any], fields: dict[str, Any] | None = None) -> None:
        event = {"timestamp": now(), **data}
        if name == "message.delta" and self.pending and self.pending[-1][0] == name:
            self.pending[-1][1]["delta"] += event["delta"]  # one row for adjacent pieces
        else:
            self.pending.append((name, event))
        self.fields.update(fields or {})
        if self.writer is None:
            self.idle.clear()
            self.writer = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        try:
            while self.pending or self.fields:
                batch, self.pending = self.pending, []
                fields, self.fields = self.fields, {}
                try:
                    await asyncio.to_thread(self.store.append, self.run_id, batch, **fields)
                except Exception:
                    log.exception("could not record events of run %s", self.run_id)
        finally:
            self.writer = None
            self.idle.set()

    async def flush(self) -> None:
        while not self.idle.is_set():
            await self.idle.wait()


class RunSink(ResultSink):
    """The sink of a run's turn: everything the turn shows becomes a run event."""

    def __init__(self, recorder: _Recorder, approval_timeout: float) -> None:
        super().__init__(stream=True, events=True)
        self.recorder = recorder
        self.run_id = recorder.run_id
        self.approval_timeout = approval_timeout
        self.answers: queue.Queue[str] = queue.Queue()
        self.stopped = threading.Event()
        self._steer_lock = threading.Lock()
        self._steer: list[str] = []
        self.approve = self._ask
        self.steering = self.take_steering

    # -- from the turn's worker thread ----------------------------------------------------

    def on_delta(self, text: str) -> None:
        if text:
            self.streamed = True
            self.recorder.add_threadsafe("message.delta", {"run_id": self.run_id, "delta": text})

    def on_event(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "tool_start":
            preview = str(data.get("arguments") or "")[:200]
            self.recorder.add_threadsafe(
                "tool.started",
                {"run_id": self.run_id, "tool": data.get("name"), "preview": redact(preview)},
            )
        elif kind == "tool_end":
            self.recorder.add_threadsafe(
                "tool.completed",
                {
                    "run_id": self.run_id,
                    "tool": data.get("name"),
                    "duration": round(float(data.get("seconds") or 0), 3),
                    "error": bool(data.get("error")),
                },
            )

    def _ask(self, command: str, reason: str) -> bool:
        """Ask the run's caller (``approval.request``) and wait for the answer, at most
        ``approval_timeout`` seconds; no answer, or a stop, refuses the command."""
        while not self.answers.empty():  # an answer to no question is no answer to this one
            self.answers.get_nowait()
        self.recorder.add_threadsafe(
            "approval.request",
            {
                "run_id": self.run_id,
                "command": redact(command),
                "description": reason,
                "pattern_key": None,
                "choices": CHOICES,
            },
            status="waiting_for_approval",
        )
        deadline = time.monotonic() + self.approval_timeout
        while not self.stopped.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                self.recorder.add_threadsafe(
                    "approval.expired", {"run_id": self.run_id}, status="running"
                )
                return False
            try:
                choice = self.answers.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            return choice in APPROVE_CHOICES
        return False

    def take_steering(self) -> list[str]:
        with self._steer_lock:
            taken, self._steer = self._steer, []
        return taken

    # -- from the loop -----------------------------------------------------------------------

    def steer(self, text: str) -> None:
        with self._steer_lock:
            self._steer.append(text)


class ActiveRun:
    """One run's turn on this gateway, from its start to its outcome."""

    def __init__(self, runs: Runs, run_id: str, sink: RunSink, conversation_id: str) -> None:
        self.runs = runs
        self.run_id = run_id
        self.sink = sink
        self.conversation_id = conversation_id
        self.watcher = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        """Take what callers sent the run through any gateway, until it ends."""
        store, sink = self.runs.store, self.sink
        while True:
            await asyncio.sleep(LOOK_EVERY)
            try:
                inputs, stop = await asyncio.to_thread(store.take_inputs, self.run_id)
            except Exception:
                log.exception("could not read what was sent to run %s", self.run_id)
                continue
            for sent in inputs:
                if sent["kind"] == "steer":
                    sink.steer(str(sent["body"].get("text") or ""))
                elif sent["kind"] == "approval":
                    choice = str(sent["body"].get("choice") or "deny")
                    sink.answers.put(choice)
                    sink.recorder.add(
                        "approval.responded",
                        {"run_id": self.run_id, "choice": choice, "resolved": 1},
                        {"status": "running"},
                    )
            if stop and not sink.stopped.is_set():
                sink.stopped.set()
                self.runs.interrupt(self.conversation_id)

    async def end(self, result: WorkResult | None, *, requeued: bool = False) -> None:
        """Record the outcome (``result`` None: the turn failed inside the gateway)."""
        self.watcher.cancel()
        recorder = self.sink.recorder
        await recorder.flush()
        run: dict[str, Any] = {"run_id": self.run_id}
        data: dict[str, Any]
        if requeued:
            name, data = "run.requeued", run
            fields: dict[str, Any] = {"status": "queued", "owner": None}
        elif result is None or result.error:
            error = (result.error if result else None) or "hermes failed inside the gateway"
            name, data = "run.failed", {**run, "error": redact(error)}
            fields = {"status": "failed", "error": redact(error)}
        elif result.interrupted or self.sink.stopped.is_set():
            name, data = "run.cancelled", run
            fields = {"status": "cancelled", "output": result.text or None}
        else:
            usage = _usage(result)
            name, data = "run.completed", {**run, "output": result.text, "usage": usage}
            fields = {"status": "completed", "output": result.text, "usage": usage}
        if result is not None and result.session_id:
            data["session_id"] = result.session_id
        unused = self.sink.take_steering()
        if unused and not requeued:  # sent after the turn's last model call
            recorder.add("run.steer_unused", {**run, "texts": unused})
        recorder.add(name, data, fields)
        await recorder.flush()


class Runs:
    """The API runs of one gateway: starting their turns and recording their outcome."""

    def __init__(
        self,
        store: RunStore,
        holder: str,
        *,
        interrupt: Callable[[str], bool],
        approval_timeout: float,
    ) -> None:
        self.store = store
        self.holder = holder
        self.interrupt = interrupt
        self.approval_timeout = approval_timeout

    def sweep(self, takeover_after: float) -> None:
        """Fail the runs of gateways that died mid-turn (blocking: call from a thread), so
        their followers hear it; their turn is not run again."""
        failed = self.store.fail_orphans(self.holder, takeover_after, ORPHANED, UNSTARTED)
        if failed:
            log.warning("%d run(s) of a gateway that died were marked failed", len(failed))

    async def begin(self, item: WorkItem) -> ActiveRun | bool:
        """False: not a run. True: a run stopped before it started (recorded here).
        Else the run now starting, its sink on ``item``."""
        run_id = item.asked.run_id
        if not run_id:
            return False
        recorder = _Recorder(self.store, str(run_id))
        row = await asyncio.to_thread(self.store.get, str(run_id))
        if row is None or row["status"] in TERMINAL:
            return True
        if row["stop_requested"]:
            recorder.add("run.cancelled", {"run_id": run_id}, {"status": "cancelled"})
            await recorder.flush()
            return True
        await asyncio.to_thread(self.store.update, str(run_id), status="running", owner=self.holder)
        sink = RunSink(recorder, self.approval_timeout)
        item.sink = sink
        return ActiveRun(self, str(run_id), sink, item.conversation_id)


def _usage(result: WorkResult) -> dict[str, int]:
    return {
        "input_tokens": result.prompt_tokens,
        "output_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }
