"""The commands a messaging chat's gateway runs itself, at once (``commands.OWN``).

They act on the chat rather than on its conversation, so they wait in no lane, even
while a turn runs:

* ``/background PROMPT`` answers a prompt in a conversation of its own (the chat's
  platform and user, stored like any other) by an agent of its own
  (``hermes.agent.background``), and sends its answer to the chat when done;
* ``/agents`` shows whether the chat's agent is answering, the chat's running
  background tasks and the background processes its conversation's tools started;
* ``/commands [page]`` lists every command the chat has, plugins' included, a page at a
  time;
* ``/restart``, for the platform's admins (``allow_admin_from``), restarts the gateways
  of this home as ``hermes gateway restart`` does, from a process of its own: each stops
  as on SIGTERM (the replies being written finish, queued input stays in the store), then
  starts again with the command line it had.

``ChatCommands`` is handed what it needs of the runner as functions, so it knows
nothing of the runner.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.agent.background import BackgroundTask, BackgroundTasks
from hermes.agent.commands_background import (
    BACKGROUND_USAGE,
    agents_text,
    running_processes,
    started_text,
)
from hermes.gateway import commands
from hermes.gateway.envelopes import Origin
from hermes.gateway.state_file import running_gateways

log = logging.getLogger(__name__)

PAGE = 20  # lines of /commands a page; Telegram's shorter screens get 15, as 0.19
TELEGRAM_PAGE = 15


@dataclass(eq=False)
class ChatCommands:
    """The gateway's own commands, over the runner's parts they use."""

    home: Path
    # (source=, user_id=) -> a new agent bound to a new conversation (the runner's factory)
    make_agent: Callable[..., Any]
    send: Callable[[Origin, str], Coroutine[Any, Any, None]]
    current_conversation: Callable[[str], str | None]  # chat key -> its conversation
    answering: Callable[[str], bool]  # conversation -> a turn of it runs here now
    plugin_lines: Callable[[], list[str]]  # "/name — what it does" of each plugin command
    is_admin: Callable[[Origin], bool]  # the sender may run the operator's commands
    _tasks: dict[str, BackgroundTasks] = field(default_factory=dict, init=False)

    async def run(self, command: commands.Command, key: str, origin: Origin) -> str:
        if command.name == "background":
            return self.background(command.argument, key, origin)
        if command.name == "agents":
            return await self.agents(key)
        if command.name == "restart":
            return await self.restart(origin)
        return self.listing(command.argument, origin)

    def background(self, prompt: str, key: str, origin: Origin) -> str:
        if not prompt.strip():
            return BACKGROUND_USAGE
        loop = asyncio.get_running_loop()

        def report(task: BackgroundTask) -> None:  # in the task's thread
            if not loop.is_closed():
                asyncio.run_coroutine_threadsafe(self.send(origin, task.report()), loop)

        user = origin.user_id  # the sender's, also in a group: the task is theirs

        def make() -> Any:
            return self.make_agent(source=origin.platform, user_id=user)

        task = self.tasks(key).start(prompt.strip(), make, on_done=report)
        log.info("%s: background task %s started", key, task.task_id)
        return started_text(task)

    async def agents(self, key: str) -> str:
        conversation = await asyncio.to_thread(self.current_conversation, key)
        if conversation is None:
            own = "idle · no conversation yet"
        else:
            busy = "answering a message" if self.answering(conversation) else "idle"
            own = f"{busy} · {conversation}"
        processes = await asyncio.to_thread(running_processes, self.home, conversation)
        return agents_text(own, self.tasks(key).running(), processes)

    def listing(self, argument: str, origin: Origin) -> str:
        try:
            wanted = int(argument) if argument.strip() else 1
        except ValueError:
            return "Usage: /commands [page], where page is a number (1 is the first)."
        entries = commands.help_lines()
        plugins = self.plugin_lines()
        if plugins:
            entries += ["", "Plugin commands:", *plugins]
        size = TELEGRAM_PAGE if origin.platform == "telegram" else PAGE
        pages = max(1, -(-len(entries) // size))
        page = min(max(wanted, 1), pages)
        lines = [f"Commands ({len(entries)} lines, page {page} of {pages}):", ""]
        lines += entries[(page - 1) * size : page * size]
        turns = []
        if page > 1:
            turns.append(f"/commands {page - 1} for the previous page")
        if page < pages:
            turns.append(f"/commands {page + 1} for the next")
        if turns:
            lines += ["", " · ".join(turns)]
        if page != wanted:
            lines.append(f"(There is no page {wanted}; this is page {page}.)")
        return "\n".join(lines)

    async def restart(self, origin: Origin) -> str:
        if not self.is_admin(origin):
            return (
                "Only the gateway's admins may restart it; the operator lists their user ids "
                f"in gateway.platforms.{origin.platform}.allow_admin_from."
            )
        if not await asyncio.to_thread(running_gateways, self.home):
            return (
                "This gateway was not started with `hermes gateway run`, so it cannot restart "
                "itself; restart it where it runs."
            )
        # Said before the restart begins: the stop closes this chat's adapter.
        await self.send(
            origin,
            "Restarting the gateway: the replies being written finish first, and messages "
            "sent meanwhile are answered once it is back.",
        )
        await asyncio.to_thread(_start_restart, self.home)
        log.info("%s user %s asked for a restart", origin.platform, origin.user_id)
        return ""

    def tasks(self, key: str) -> BackgroundTasks:
        """The background tasks of the chat ``key`` (on the event loop only)."""
        return self._tasks.setdefault(key, BackgroundTasks())


def _start_restart(home: Path) -> None:
    """``hermes gateway restart`` in a process of its own session (it stops this gateway,
    so it must outlive it), its output appended to ``logs/gateway.log``."""
    logs = home / "logs"
    logs.mkdir(mode=0o700, exist_ok=True)
    with open(logs / "gateway.log", "ab") as output:
        subprocess.Popen(
            [sys.executable, "-m", "hermes", "gateway", "restart"],
            env={**os.environ, "HERMES_HOME": str(home)},
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
