"""Process events: one message per finished ``notify_on_complete`` background process,
and the notices of a process's watch patterns (``watch.py``).

Exactly once. Whoever sees a process end first (its watcher thread, a ``process poll``,
a ``drain_events`` in another hermes process) records the exit and then *claims* the
event by creating ``<id>.notified`` with O_EXCL; only the claimant builds and delivers
it. Reading logs or polling never consumes or repeats an event.

Delivery: the subscribers belong to an ``EventBus`` that their owner (a gateway)
creates and hands to its agents' tools (``ToolContext.event_bus``), so a process's
event reaches only the bus of the turn that started it (or looked at it), never every
owner in this process. Subscribers are called from the thread that claimed the event
(usually the process's watcher thread, so a subscriber living in an event loop must hop
over with ``loop.call_soon_threadsafe``). When there is no bus or no subscriber takes
it, the event is spooled under ``processes/events/`` for ``drain_events``, which any
process may call; a spooled event is handed to exactly one drainer.

Events are addressed to the conversation id (the root segment), never the segment,
so they still reach the conversation after compression rotates its tip.

A watch notice (``kind`` other than ``completion``) travels the same way. Its only
producer is the watcher thread reading the process's log, so it needs no claim; it is
spooled under a name of its own, beside the process's completion event.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hermes.redaction import redact
from hermes.tools._fs import JsonRecord, private_dir, read_json, write_json
from hermes.tools._output import tail_lines
from hermes.tools.processes import watch
from hermes.tools.processes.store import ProcessRecord, ProcessStore

log = logging.getLogger(__name__)

OUTPUT_TAIL_LINES = 20
OUTPUT_TAIL_CHARS = 2000


COMPLETION = "completion"


@dataclass(frozen=True)
class CompletionEvent(JsonRecord):
    """A background process ended (or, by ``kind``, its output matched a watch pattern);
    tell the conversation that started it. ``finished_at`` is when it happened."""

    process_id: str
    conversation_id: str | None
    command: str
    exit_code: int | None
    output_tail: str
    finished_at: float
    status: str = "exited"  # or "killed", or "lost" when nobody saw how it ended
    session_id: str | None = None
    kind: str = COMPLETION  # or one of watch.py's notices (watch_match, ...)
    pattern: str | None = None  # watch_match: the pattern the output held
    suppressed: int = 0  # watch notices: the matches dropped by the rate limits

    def describe(self) -> str:
        """The event as a message for the model."""
        tail = self.output_tail.rstrip() or "(no output)"
        if self.kind == watch.WATCH_MATCH:
            dropped = f"\n({self.suppressed} earlier matches were dropped by the rate limit)"
            more = dropped if self.suppressed else ""
            return redact(f"[{self.headline()}]\nMatched output:\n{tail}{more}")
        if self.kind != COMPLETION:
            return redact(f"[{self.headline()}]")
        return redact(f"[{self.headline()}]\nLast output:\n{tail}")

    def headline(self) -> str:
        """What happened, in one sentence (unredacted: ``describe`` redacts)."""
        if self.kind != COMPLETION:
            return self._watch_headline()
        if self.status == "lost":
            how = "was lost (it is gone and its exit was never recorded)"
        elif self.status == "killed":
            how = f"was killed (exit code {self.exit_code})"
        else:
            how = f"finished with exit code {self.exit_code}"
        return f"Background process {self.process_id} {how}: {self.command}"

    def _watch_headline(self) -> str:
        process = f"Background process {self.process_id}"
        if self.kind == watch.WATCH_MATCH:
            return f'{process} matched watch pattern "{self.pattern}": {self.command}'
        if self.kind == watch.WATCH_DISABLED:
            return (
                f"{process} matched its watch patterns too often ({watch.WATCH_STRIKE_LIMIT} "
                f"intervals of {watch.WATCH_MIN_INTERVAL_SECONDS}s in a row with dropped "
                "matches): its watch patterns are off, and you will get one message when it "
                f"ends instead: {self.command}"
            )
        if self.kind == watch.OVERFLOW_TRIPPED:
            return (
                f"Watch-pattern overflow: more than {watch.WATCH_GLOBAL_MAX_PER_WINDOW} "
                f"notices in {watch.WATCH_GLOBAL_WINDOW_SECONDS}s across all processes; "
                f"matches are dropped for {watch.WATCH_GLOBAL_COOLDOWN_SECONDS}s"
            )
        return f"Watch-pattern notices resumed; {self.suppressed} matches were dropped during the flood"

    def spool_name(self) -> str:
        """Its file name in the spool: a completion is one per process, a notice one of many."""
        if self.kind == COMPLETION:
            return self.process_id
        return f"{self.process_id}.{self.kind}.{int(self.finished_at * 1_000_000)}"


Subscriber = Callable[[CompletionEvent], object]


class EventBus:
    """The subscribers of one owner: who in this process hears the completion events of
    the background processes its tools started or looked at."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()

    def subscribe(self, callback: Subscriber) -> None:
        """Call ``callback(event)`` for each completion event that reaches this bus."""
        with self._lock:
            self._subscribers.append(callback)

    def unsubscribe(self, callback: Subscriber) -> None:
        with self._lock:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

    def deliver(self, event: CompletionEvent) -> bool:
        """Hand ``event`` to every subscriber; True if at least one took it."""
        with self._lock:
            callbacks = list(self._subscribers)
        taken = False
        for callback in callbacks:
            try:
                callback(event)
                taken = True
            except Exception:
                log.exception(
                    "Completion-event subscriber %r failed for %s", callback, event.process_id
                )
        return taken


def emit_once(
    hermes_home: Path, record: ProcessRecord, bus: EventBus | None = None
) -> CompletionEvent | None:
    """Produce the record's completion event unless someone already did, for ``bus``'s
    subscribers (spooled when there are none).

    Returns the event when this call claimed it, else None. The record must be finished.
    """
    if not record.notify_on_complete or not record.finished:
        return None
    store = ProcessStore(hermes_home).ensure()
    try:
        fd = os.open(store.notified_path(record.id), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return None
    os.close(fd)
    event = CompletionEvent(
        process_id=record.id,
        conversation_id=record.conversation_id,
        command=record.command,
        exit_code=record.exit_code,
        output_tail=tail_lines(store.log_path(record.id), OUTPUT_TAIL_LINES, OUTPUT_TAIL_CHARS),
        finished_at=record.finished_at or time.time(),
        status=record.status,
        session_id=record.session_id,
    )
    if bus is None or not bus.deliver(event):
        # Nobody here is listening: keep it for the next drain_events, in any process.
        spool_event(hermes_home, event)
    return event


def emit_notice(
    hermes_home: Path,
    record: ProcessRecord,
    notice: watch.Notice,
    bus: EventBus | None = None,
) -> CompletionEvent:
    """Tell the record's conversation a watch notice, through ``bus`` (spooled when
    nobody there takes it), as a completion event is told."""
    event = CompletionEvent(
        process_id=record.id,
        conversation_id=record.conversation_id,
        command=record.command,
        exit_code=None,
        output_tail=notice.output,
        finished_at=time.time(),
        status=record.status,
        session_id=record.session_id,
        kind=notice.kind,
        pattern=notice.pattern,
        suppressed=notice.suppressed,
    )
    if bus is None or not bus.deliver(event):
        spool_event(hermes_home, event)
    return event


def spool_event(hermes_home: Path, event: CompletionEvent) -> None:
    """Keep ``event`` for the next ``drain_events`` (e.g. a subscriber that cannot take it now)."""
    spool = private_dir(ProcessStore(hermes_home).ensure().events_dir())
    write_json(spool / f"{event.spool_name()}.json", event.to_dict())


def spooled(hermes_home: Path) -> list[CompletionEvent]:
    """The spooled completion events of this HERMES_HOME, left in the spool (a look)."""
    spool = ProcessStore(hermes_home).events_dir()
    if not spool.is_dir():
        return []
    found = (read_json(path) for path in spool.glob("*.json"))
    return [CompletionEvent.from_dict(data) for data in found if data]


def take_spooled(
    hermes_home: Path, wanted: Callable[[CompletionEvent], bool] | None = None
) -> list[CompletionEvent]:
    """Take the spooled completion events of this HERMES_HOME, oldest first; each event
    is returned by exactly one call, in one process (``background.drain_events`` first
    notices the processes that ended unwatched). ``wanted`` picks the events this caller
    takes; the others stay spooled, untouched, for their own taker."""
    spool = ProcessStore(hermes_home).events_dir()
    if not spool.is_dir():
        return []
    events = []
    for path in spool.glob("*.json"):
        if wanted is not None:
            seen = read_json(path)
            if not seen or not wanted(CompletionEvent.from_dict(seen)):
                continue
        # Renaming is the claim: of two drainers, only one rename succeeds.
        claimed = path.with_name(f"{path.name}.{uuid.uuid4().hex}.claimed")
        try:
            os.rename(path, claimed)
        except FileNotFoundError:
            continue
        data = read_json(claimed)
        claimed.unlink(missing_ok=True)
        if data:
            events.append(CompletionEvent.from_dict(data))
    return sorted(events, key=lambda e: e.finished_at)
