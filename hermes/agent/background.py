"""Prompts a chat runs in the background (``/background``), each answered apart.

A background task answers one prompt in a conversation of its own, stored like any
other (the chat's source and user), by an agent of its own (the chat's endpoint, model,
settings and workspace, its own model client), in a thread of its own, so the chat goes
on meanwhile and its own conversation is untouched. When it is done, ``on_done`` hears
it; a surface shows its answer (the terminal when its prompt is next idle, the gateway
as a message to the chat). ``BackgroundTasks`` holds one chat's tasks: the ones running
(``/agents`` lists them) and the finished ones not yet shown.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError

if TYPE_CHECKING:
    from hermes.agent import AIAgent

log = logging.getLogger(__name__)

# What makes the agent of a task; what a finished task is handed to.
AgentMaker = Callable[[], Any]
DoneCallback = Callable[["BackgroundTask"], None]
# What the chat is told of a task stopped before its answer came.
STOPPED = "It was stopped before it answered."


@dataclass
class BackgroundTask:
    """One prompt answered in the background: while it runs and once it is done."""

    task_id: str  # 0.19's form: bg_HHMMSS_xxxxxx
    number: int  # the chat's #1, #2, ...
    prompt: str
    started_at: float = field(default_factory=time.time)
    conversation_id: str | None = None  # once its conversation is stored
    answer: str | None = None
    error: str | None = None
    finished: threading.Event = field(default_factory=threading.Event)
    agent: Any = field(default=None, repr=False)  # while it runs: what ``stop`` interrupts

    @property
    def running(self) -> bool:
        return not self.finished.is_set()

    @property
    def preview(self) -> str:
        """The prompt as 0.19 shows it: its first 60 characters."""
        flat = " ".join(self.prompt.split())
        return flat[:60] + ("..." if len(flat) > 60 else "")

    def report(self) -> str:
        """What the chat is told when the task is done: its answer, or why there is none."""
        head = f'Background task #{self.number} ({self.task_id}) {{}}: "{self.preview}"'
        where = f"\n(Its conversation: {self.conversation_id}.)" if self.conversation_id else ""
        if self.error is not None:
            return head.format("failed") + f"\n{self.error}{where}"
        body = self.answer or "(No answer was written.)"
        return head.format("is done") + f"\n\n{body}{where}"

    def report_left(self) -> str:
        """What the chat is told of a task it leaves still running (its model call did
        not end in time): stopped, and where its prompt is kept."""
        agent = self.agent
        where = self.conversation_id or (_conversation_of(agent) if agent is not None else None)
        return dataclasses.replace(self, error=STOPPED, conversation_id=where).report()


class BackgroundTasks:
    """One chat's background tasks (thread-safe: tasks finish in their own threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._running: dict[str, BackgroundTask] = {}
        self._unshown: list[BackgroundTask] = []

    def start(
        self, prompt: str, make_agent: AgentMaker, on_done: DoneCallback | None = None
    ) -> BackgroundTask:
        """Answer ``prompt`` in a thread with the agent ``make_agent`` makes there."""
        with self._lock:
            task = BackgroundTask(_task_id(), next(self._numbers), prompt)
            self._running[task.task_id] = task
        thread = threading.Thread(
            target=self._run,
            args=(task, make_agent, on_done),
            name=f"hermes-{task.task_id}",
            daemon=True,
        )
        thread.start()
        return task

    def running(self) -> list[BackgroundTask]:
        """The tasks still running, oldest first."""
        with self._lock:
            return sorted(self._running.values(), key=lambda t: t.number)

    def stop(self, wait: float) -> None:
        """Interrupt every running task (its chat is told it stopped); wait up to ``wait``
        seconds for them to end."""
        running = self.running()
        for task in running:
            agent = task.agent
            if agent is not None and hasattr(agent, "interrupt"):
                agent.interrupt()
        deadline = time.monotonic() + wait
        for task in running:
            task.finished.wait(max(0.0, deadline - time.monotonic()))

    def has_unshown(self) -> bool:
        with self._lock:
            return bool(self._unshown)

    def take_finished(self) -> list[BackgroundTask]:
        """The tasks finished since the last call, in the order they finished."""
        with self._lock:
            done, self._unshown = self._unshown, []
            return done

    def _run(
        self, task: BackgroundTask, make_agent: AgentMaker, on_done: DoneCallback | None
    ) -> None:
        agent = None
        try:
            agent = task.agent = make_agent()
            result = agent.run(task.prompt)
            task.answer = result.answer
            if result.interrupted and not result.answer:
                task.error = STOPPED
        except HermesError as exc:
            task.error = str(exc)
        except Exception as exc:  # a task's failure is told to its chat, never raised there
            log.exception("background task %s failed", task.task_id)
            task.error = f"It stopped on an unexpected error: {exc}"
        finally:
            if agent is not None:
                task.conversation_id = _conversation_of(agent)
                task.agent = None
                _close(agent)
            with self._lock:
                self._running.pop(task.task_id, None)
                self._unshown.append(task)
            task.finished.set()
        if on_done is not None:
            try:
                on_done(task)
            except Exception:
                log.exception("reporting background task %s failed", task.task_id)


# The terminal chat's tasks, per chat agent (the gateway keeps its own per chat).
_OF_AGENT: weakref.WeakKeyDictionary[Any, BackgroundTasks] = weakref.WeakKeyDictionary()
_OF_AGENT_LOCK = threading.Lock()


def tasks_of(agent: AIAgent) -> BackgroundTasks:
    """The background tasks the chat of ``agent`` started."""
    with _OF_AGENT_LOCK:
        tasks = _OF_AGENT.get(agent)
        if tasks is None:
            tasks = _OF_AGENT[agent] = BackgroundTasks()
        return tasks


def background_agent(agent: AIAgent) -> AIAgent:
    """An agent like the chat's ``agent`` (endpoint, model, settings, store, source, user,
    workspace) with a model client of its own, bound to a new conversation."""
    from hermes.agent import AIAgent

    return AIAgent(
        api_key=agent.api_key,
        base_url=agent.base_url,
        model=agent.model,
        quiet_mode=True,
        session_db=agent.binding.session_db,
        source=agent.source,
        user_id=agent.user_id,
        skip_context_files=agent.skip_context_files,
        skip_memory=agent.skip_memory,
        config=agent.config,
        cwd=agent.cwd,
        yolo=agent.yolo,
        event_bus=agent.event_bus,
        model_client=agent.client.fork(),
    )


def elapsed(started_at: float, now: float | None = None) -> str:
    """'42s', '3m 5s', '1h 2m': how long since ``started_at``."""
    seconds = int((time.time() if now is None else now) - started_at)
    if seconds < 60:
        return f"{max(seconds, 0)}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60}m"


def _task_id() -> str:
    return f"bg_{time.strftime('%H%M%S')}_{os.urandom(3).hex()}"


def _conversation_of(agent: Any) -> str | None:
    binding = getattr(agent, "binding", None)
    return getattr(binding, "conversation_id", None)


def _close(agent: Any) -> None:
    """Let the task's plugins hear its conversation end, and free its client."""
    try:
        end = getattr(agent, "end_conversation", None)
        if end is not None:
            end("background_done")
        client = getattr(agent, "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()
    except Exception:  # closing must never hide the task's answer
        log.debug("closing a background task's agent failed", exc_info=True)
