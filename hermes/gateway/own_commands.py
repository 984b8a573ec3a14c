"""The commands a messaging chat's gateway runs itself, at once (``commands.OWN``).

They act on the chat rather than on its conversation, so they wait in no lane, even
while a turn runs:

* ``/background PROMPT`` answers a prompt in a conversation of its own (the chat's
  platform and user, stored like any other) by an agent of its own
  (``hermes.agent.background``), and sends its answer to the chat when done; in a
  group chat it acts as the sender in that group, as their turns there do;
* ``/agents`` shows whether the chat's agent is answering, the sender's running
  background tasks there and the background processes its conversation's tools started;
* ``/commands [page]`` lists every command the chat has, plugins' included, a page at a
  time;
* ``/topic [help|off|ID]`` in a Telegram private chat: each topic of the chat is a
  conversation of its own (its own session key), always; ``/topic`` in a topic names its
  conversation, ``/topic ID`` continues one of the sender's own conversations of that
  private chat there (as 0.19 restores a session into a topic; a group's is nobody's
  own), ``/topic off`` says there is nothing to turn off;
* ``/sethome``, for the platform's admins, makes this chat the platform's home channel:
  where scheduled jobs delivered to the platform alone (``deliver: telegram``) answer;
* ``/restart``, for the platform's admins (``allow_admin_from``), restarts the gateways
  of this home as ``hermes gateway restart`` does, from a process of its own: each stops
  as on SIGTERM (the replies being written finish, queued input stays in the store), then
  starts again with the command line it had.

``ChatCommands`` is handed what it needs of the runner as functions, so it knows
nothing of the runner.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.agent.background import BackgroundTask, BackgroundTasks
from hermes.agent.commands import CLOSED_FOR_GOOD
from hermes.agent.commands_background import (
    BACKGROUND_USAGE,
    agents_text,
    running_processes,
    started_text,
)
from hermes.cron.targets import PLATFORMS, set_home_channel
from hermes.errors import HermesError
from hermes.gateway import commands
from hermes.gateway.envelopes import Origin
from hermes.gateway.routing import SessionKey
from hermes.gateway.state_file import running_gateways
from hermes.state.lookup import resolve_conversation

if TYPE_CHECKING:
    from hermes.state.store import SessionDB

log = logging.getLogger(__name__)

PAGE = 20  # lines of /commands a page; Telegram's shorter screens get 15, as 0.19
TELEGRAM_PAGE = 15
TOPIC_HELP = (
    "Each topic you open in this chat is a conversation of its own. In a topic: /topic "
    "shows its conversation, /topic ID continues one of your conversations there (its id "
    "or title), /new starts the topic over."
)


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
    # whom the sender's requests act as (in a group chat: the sender in that group)
    acting_user: Callable[[Origin], str | None]
    db: SessionDB
    # (key, origin, make) -> points the chat key at the conversation ``make`` returns, as
    # /new does (the old one's plugins hear it ended)
    switch: Callable[[str, Origin, Callable[[], str]], Coroutine[Any, Any, str]]
    _tasks: dict[str, BackgroundTasks] = field(default_factory=dict, init=False)
    # The reports of finished tasks on their way to a chat (added from the tasks' threads).
    _reports: set[concurrent.futures.Future[None]] = field(default_factory=set, init=False)
    _reports_lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    async def run(self, command: commands.Command, key: str, origin: Origin) -> str:
        if command.name == "background":
            return self.background(command.argument, key, origin)
        if command.name == "agents":
            return await self.agents(key, origin)
        if command.name == "restart":
            return await self.restart(origin)
        if command.name == "topic":
            return await self.topic(command.argument, key, origin)
        if command.name == "sethome":
            return await self.sethome(origin)
        if command.name == "whoami":
            return self.whoami(origin)
        return self.listing(command.argument, origin)

    def whoami(self, origin: Origin) -> str:
        """Who the gateway takes the sender for, and whether they are one of its admins."""
        who = f"You are user {origin.user_id or '(unknown)'} on {origin.platform}"
        if self.is_admin(origin):
            return f"{who}: an admin (you may also run /sethome and /restart)."
        return (
            f"{who}: a user (the chat's commands work for you; /sethome and /restart are "
            f"for the ids in gateway.platforms.{origin.platform}.allow_admin_from)."
        )

    def background(self, prompt: str, key: str, origin: Origin) -> str:
        if not prompt.strip():
            return BACKGROUND_USAGE
        loop = asyncio.get_running_loop()

        def report(task: BackgroundTask) -> None:  # in the task's thread
            if not loop.is_closed():
                sent = asyncio.run_coroutine_threadsafe(self.send(origin, task.report()), loop)
                with self._reports_lock:
                    self._reports.add(sent)
                sent.add_done_callback(self._sent)

        # The sender's, also in a group: the task is theirs, acting as their turns there
        # do (in a group, as that member in that group: never their direct chat's things,
        # since its report is read by every member).
        user = self.acting_user(origin)

        def make() -> Any:
            return self.make_agent(source=origin.platform, user_id=user)

        task = self.tasks(self._tasks_key(key, origin)).start(prompt.strip(), make, on_done=report)
        log.info("%s: background task %s started", key, task.task_id)
        return started_text(task)

    async def agents(self, key: str, origin: Origin) -> str:
        conversation = await asyncio.to_thread(self.current_conversation, key)
        if conversation is None:
            own = "idle · no conversation yet"
        else:
            busy = "answering a message" if self.answering(conversation) else "idle"
            own = f"{busy} · {conversation}"
        processes = await asyncio.to_thread(running_processes, self.home, conversation)
        running = self.tasks(self._tasks_key(key, origin)).running()
        return agents_text(own, running, processes)

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

    async def sethome(self, origin: Origin) -> str:
        if origin.platform not in PLATFORMS:
            return "/sethome works in a Telegram, Discord or Slack chat."
        if not self.is_admin(origin):
            return _admins_only("choose the home channel", origin)
        await asyncio.to_thread(set_home_channel, self.home, origin.platform, origin.chat_id)
        log.info("%s: home channel set to %s", origin.platform, origin.chat_id)
        thread = " (its main thread)" if origin.thread_id else ""
        return (
            f"This chat{thread} is now the home channel of {origin.platform}: scheduled jobs "
            f"delivered to '{origin.platform}' answer here."
        )

    async def restart(self, origin: Origin) -> str:
        if not self.is_admin(origin):
            return _admins_only("restart it", origin)
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

    async def topic(self, argument: str, key: str, origin: Origin) -> str:
        if origin.platform != "telegram" or origin.is_group:
            return "/topic works in a private chat with the bot on Telegram, in its topics."
        word = argument.strip()
        if word.lower() in ("help", "?", "-h", "--help"):
            return TOPIC_HELP
        if word.lower() in ("off", "disable", "stop"):
            return (
                "Each topic of this chat is a conversation of its own, always; there is nothing "
                "to turn off. /new starts the topic you are in over."
            )
        if origin.thread_id is None:
            if word:
                return "Open a topic first: /topic ID continues a conversation in the topic it is sent in."
            return TOPIC_HELP
        if not word:
            return await asyncio.to_thread(self._topic_status, key)
        try:
            tip = await asyncio.to_thread(self._own_conversation, word, origin)
        except HermesError as exc:
            return str(exc)
        conversation = await self.switch(key, origin, lambda: tip)
        return f"This topic now continues the conversation {conversation}."

    def _topic_status(self, key: str) -> str:
        conversation = self.current_conversation(key)
        if conversation is None:
            return "This topic has no conversation yet: your first message here starts one."
        title = (self.db.get_session(conversation) or {}).get("title")
        named = f" ('{title}')" if title else ""
        return f"This topic is the conversation {conversation}{named}."

    def _own_conversation(self, ref: str, origin: Origin) -> str:
        """The tip of the sender's own conversation on this platform that ``ref`` names."""
        mine = (
            f"You have no conversation '{ref}' on {origin.platform}; /topic ID takes the id "
            "or title of one of yours."
        )
        try:
            tip = resolve_conversation(self.db, ref)
        except HermesError:
            raise HermesError(mine) from None
        root = self.db.get_segments(tip)[0]
        if root["source"] != origin.platform or str(root["user_id"]) != str(origin.user_id):
            raise HermesError(mine)  # someone else's: not said to exist
        if root["session_key"] and SessionKey.parse(root["session_key"]).chat_id != str(
            origin.chat_id
        ):
            # Another chat's, a group's above all: stored under whoever spoke first there,
            # it is no member's own (its members' text would lead this private chat's turns).
            raise HermesError(mine)
        segment = self.db.get_session(tip) or {}
        if segment.get("end_reason") in CLOSED_FOR_GOOD:
            raise HermesError(
                f"Conversation {root['id']} was ended ({segment['end_reason']}) and takes no "
                "more messages; start a new one with /new."
            )
        return tip

    async def close(self, wait: float) -> None:
        """At shutdown: interrupt every chat's background tasks, wait up to ``wait``
        seconds for them to end, and for their chats to be told."""

        def stop() -> None:
            for tasks in list(self._tasks.values()):
                tasks.stop(wait)

        await asyncio.to_thread(stop)
        with self._reports_lock:
            reports = [asyncio.wrap_future(f) for f in self._reports]
        await asyncio.gather(*reports, return_exceptions=True)

    def _sent(self, report: concurrent.futures.Future[None]) -> None:
        with self._reports_lock:
            self._reports.discard(report)

    def tasks(self, key: str) -> BackgroundTasks:
        """The background tasks of one sender in the chat ``key`` (``_tasks_key``; on the
        event loop only)."""
        return self._tasks.setdefault(key, BackgroundTasks())

    def _tasks_key(self, key: str, origin: Origin) -> str:
        """Whose tasks: the chat's sender as they act there, so in a group chat that
        shares one conversation each member's /agents lists their own tasks only."""
        return f"{key}|{self.acting_user(origin)}"


def _admins_only(what: str, origin: Origin) -> str:
    return (
        f"Only the gateway's admins may {what}; the operator lists their user ids in "
        f"gateway.platforms.{origin.platform}.allow_admin_from."
    )


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
