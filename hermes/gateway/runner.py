"""The gateway runner: adapters in, lanes through, agents in threads, replies out.

``GatewayRunner`` owns one store, the router, the lanes (``Scheduler``) and the turn
runner, and starts the enabled platform adapters. Its life:

``start``
    claim the queued input no live gateway owns (a previous run's, released at its
    stop or left by a crashed gateway), answer first the turns a crash cut off in its
    platforms' conversations (or tell their users; their tool commands are ended),
    keep a heartbeat so that nobody claims this run's own queued input while it lives
    (each beat also claims what gateways that stopped or died meanwhile left), start
    each adapter (one log line each; a failure stops the others and raises
    ``PlatformStartError``), subscribe to the completion events of its agents'
    background processes (its own event bus), then let the lanes run.
``handle_message``
    allow-list, slash commands, key -> conversation, a work item on its lane; a
    message that has to wait is acknowledged. The HTTP API (``hermes.gateway.http``)
    finds its own conversations and puts its items on the lanes through ``submit``:
    it meets the runner as a ``core.ApiHost``, and registers its run registry with it
    when the runner is made (``core.attach_rooms``); the runner imports nothing of it.
``stop``
    stop accepting, keep every item that has not started in the store, let running
    turns finish within the grace period, then interrupt them, release the kept items
    to the next gateway that beats or starts; adapters close last so the final replies
    still go out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.agent.commands_turns import StatusFacts, status_text, stopped_text
from hermes.config import Config, hermes_home, load_config, register_secrets
from hermes.gateway import adapters as adapter_registry
from hermes.gateway import commands
from hermes.gateway.access import AccessControl
from hermes.gateway.adapters.base import Adapter, ChatAdapter
from hermes.gateway.core import AgentFactory, ApiHost, RunRegistry, attach_rooms
from hermes.gateway.envelopes import IncomingMessage, Origin, WorkResult
from hermes.gateway.errors import GatewayClosed, GatewayError
from hermes.gateway.lanes import (
    COMMAND,
    EVENT,
    MESSAGE,
    RESUME,
    Lane,
    QueueStore,
    ResultSink,
    Scheduler,
    WorkItem,
)
from hermes.gateway.own_commands import ChatCommands
from hermes.gateway.queued_turn import QueuedTurn
from hermes.gateway.routing import Router, SessionKey
from hermes.gateway.settings import (
    API_SERVER,
    CHAT_PLATFORMS,
    PLATFORMS,
    WEBHOOK,
    ApiServerSettings,
    PlatformSettings,
    api_server_settings,
    platforms_from_config,
)
from hermes.gateway.store_health import StoreHealth
from hermes.gateway.turn_gate import TurnGate
from hermes.gateway.work import TurnRunner, undo_turn
from hermes.redaction import register
from hermes.tools import drain_events, workspaces
from hermes.tools.processes import background, events

if TYPE_CHECKING:
    from hermes.agent import AIAgent
    from hermes.agent.model.protocol import ModelFactory
    from hermes.cron.service import CronService
    from hermes.state.store import SessionDB

log = logging.getLogger(__name__)

# (host, settings) -> adapter: replaces the built-in adapter of a platform.
AdapterFactory = Callable[[ApiHost, PlatformSettings], Adapter]

QUEUED_ACK = "Queued: I will answer after the current reply."
DEFAULT_GRACE = 30.0
# The most seconds between a gateway's heartbeats in the store (a quarter of
# ``gateway.queue_takeover_after`` when that is shorter): by default every 30 s.
MAX_HEARTBEAT_SECONDS = 30.0


class GatewayRunner:
    """One gateway process: its platforms, its lanes and its conversations."""

    def __init__(
        self,
        config: Config | None = None,
        *,
        db: SessionDB | None = None,
        platforms: Mapping[str, PlatformSettings] | None = None,
        api: ApiServerSettings | None = None,
        make_agent: AgentFactory | None = None,
        agent_options: Mapping[str, Any] | None = None,
        home: Path | None = None,
        adapters: Mapping[str, AdapterFactory] | None = None,
        make_model: ModelFactory | None = None,
        announces_startup: bool = True,
    ) -> None:
        self.config = config or load_config()
        # Whether this process fires ``gateway:startup``: one worker of a supervisor's
        # does, so a gateway of N workers starts its hooks once, not N times.
        self.announces_startup = announces_startup
        self.home = Path(home) if home else hermes_home()
        self._own_db = db is None
        if db is None:
            from hermes.state import SessionDB

            db = SessionDB()
        self.db: SessionDB = db
        self.platforms = dict(
            platforms if platforms is not None else platforms_from_config(self.config)
        )
        self.api = api
        if api is not None:
            self.platforms.setdefault(API_SERVER, PlatformSettings(API_SERVER))
        elif API_SERVER in self.platforms:
            self.api = api_server_settings(self.config, self.platforms[API_SERVER])
        self.group_per_user = bool(self.config.get("gateway.group_per_user"))
        self.limit = max(1, int(self.config.get("gateway.max_concurrent_turns")))
        self.agent_options = dict(agent_options or {})
        # Each agent's model client (hermes.testing's scripted one in tests); None: the
        # configured endpoint's.
        self.make_model = make_model
        self.adapter_factories = dict(adapters or {})
        self.router = Router(db)
        self.store_health = StoreHealth(db)
        from hermes.state import make_holder

        # This run's name on the store: the owner of the input it queues.
        self.holder = make_holder()
        takeover_after = max(1.0, float(self.config.get("gateway.queue_takeover_after")))
        # A webhook's answer is delivered by the webhook platform: like a chat's, its
        # input waits for a gateway that runs it.
        delivering = (*CHAT_PLATFORMS, WEBHOOK)
        unserved = [name for name in delivering if name not in self.platforms]
        self.queue = QueueStore(db, self.holder, takeover_after=takeover_after, unserved=unserved)
        self.heartbeat_every = min(MAX_HEARTBEAT_SECONDS, takeover_after / 4)
        self.access = AccessControl(self.platforms)
        # This gateway's agents' background processes report here, and only here.
        self.event_bus = events.EventBus()
        # The first turns must not each pay for importing the agent and the openai
        # package (~1 s under the import lock) or for building its HTTP client.
        self._warm_up = (
            None if make_agent else lambda: self.build_agent(source="gateway").client.prepare()
        )
        from hermes.gateway.hooks import HookRegistry

        self.hooks = HookRegistry(self.home, float(self.config.get("gateway.hook_timeout")))
        self.hooks.discover_and_load()
        self.turns = TurnRunner(
            db,
            self.router,
            make_agent or self.build_agent,
            max_agents=max(256, 4 * self.limit),
            on_agent_event=self._agent_event,
            resume_interrupted=bool(self.config.get("gateway.resume_interrupted")),
            hooks=self.hooks,
            members_apart=not self.config.get("gateway.group_shared_identity"),
            choose_model=self._model_for,
        )
        self.scheduler: Scheduler | None = None
        self.cron: CronService | None = None
        # The API runs this gateway executes: the HTTP room registers its registry.
        self.runs: RunRegistry | None = None
        self.adapters: dict[str, Adapter] = {}
        self.accepting = False
        self.closing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._order = _KeyOrder()
        self._stopped = asyncio.Event()
        self._heartbeat: asyncio.Task[None] | None = None
        self._stop_beating = asyncio.Event()
        self.own_commands = ChatCommands(
            home=self.home,
            make_agent=self.turns.make_agent,
            send=self.send,
            current_conversation=self.router.current_conversation,
            answering=self.input_waits,
            plugin_lines=self._plugin_lines,
            is_admin=self.access.is_admin,
            acting_user=self.turns.acting_user,
            db=db,
            switch=self.start_over,
        )
        attach_rooms(self)

    # -- life -------------------------------------------------------------------------

    async def start(self) -> None:
        """Restore queued input, start every adapter, then start answering."""
        if not self.platforms:
            raise GatewayError(
                "No platform is enabled: add one under gateway.platforms in config.yaml, "
                "or pass --api-server HOST:PORT."
            )
        register_secrets(self.config, self.home)
        register(self.api.key if self.api else None)
        from hermes.tools.guards.sandbox import say_once

        say_once(self.config.get("terminal.sandbox"))  # no sandbox: said once, at start
        self._loop = asyncio.get_running_loop()
        self._executor = ThreadPoolExecutor(
            max_workers=self.limit, thread_name_prefix="hermes-turn"
        )
        self.scheduler = Scheduler(
            self._execute, self.queue, limit=self.limit, gate=TurnGate(self.db)
        )
        if self._warm_up is not None:
            try:
                await asyncio.to_thread(self._warm_up)
            except Exception:  # only a head start; the first turn will say what is wrong
                log.debug("warming up the agent failed", exc_info=True)
        restored = await asyncio.to_thread(self.queue.claim)
        await self._sweep_runs()
        self._heartbeat = asyncio.create_task(self._beat(), name="gateway-heartbeat")
        self._spawn(self.store_health.watch())
        cut = await asyncio.to_thread(self._turns_cut_off)
        for item in [*cut, *restored]:  # a cut turn first: it came before what waited
            self.scheduler.submit(item)
        if restored:
            log.info("picked up %d queued message(s) from the last run", len(restored))
        self.accepting = True
        try:
            await self._start_adapters()
        except BaseException:
            await self.stop(grace=0)
            raise
        self.event_bus.subscribe(self._completion_arrived)
        self._spawn(self._drain_spooled_events())
        self.scheduler.resume()
        self._start_cron()
        if self.announces_startup:
            self.hooks.emit("gateway:startup", {"platforms": list(self.adapters)})

    def _start_cron(self) -> None:
        """Every gateway runs the scheduled jobs' scheduler; the store makes each run once."""
        if self.db.read_only:
            return
        from hermes.cron import files
        from hermes.cron.service import CronService

        self.cron = CronService(
            self.db,
            holder=self.holder,
            make_agent=self.build_agent,
            send=self._send_scheduled,
            config=self.config,
            home=self.home,
            platforms=lambda: [n for n, a in self.adapters.items() if isinstance(a, ChatAdapter)],
            missed=str(self.config.get("cron.missed")),
            tick=float(self.config.get("cron.tick_seconds")),
            ttl=float(self.config.get("cron.lease_ttl")),
            on_change=files.writer(self.home),
            on_tick=files.TickerFiles(self.home),
        )
        self._spawn(self.cron.serve())

    async def _send_scheduled(self, platform: str, chat_id: str, text: str, _: str) -> None:
        """A scheduled job's answer to a chat; raises when the platform refused it.
        (Telegram, Discord and Slack take no idempotency key for a send.)"""
        await self.send_to_chat(Origin(platform=platform, chat_id=chat_id), text)

    async def send_to_chat(self, origin: Origin, text: str) -> None:
        """Send ``text`` to a chat of a connected chat platform; raises when it cannot."""
        adapter = self.adapters.get(origin.platform)
        if origin.platform not in CHAT_PLATFORMS or not isinstance(adapter, ChatAdapter):
            raise GatewayError(f"{origin.platform} is not connected on this gateway")
        await adapter.send(origin, text)

    def _turns_cut_off(self) -> list[WorkItem]:
        """Turns a crash cut off in conversations of this gateway's platforms (their
        tool commands ended first), as items that answer them or tell their users."""
        from hermes.tools.toolsets import default_registry

        _end_orphaned_commands(self.home)
        found = self.db.gateway.cut_turns(list(self.platforms), default_registry().names())
        if found:
            log.info("found %d turn(s) a crash cut off; answering them first", len(found))
        return [
            WorkItem(
                kind=RESUME,
                key=cut.session_key,
                conversation_id=cut.conversation_id,
                asked=QueuedTurn(text=cut.question or ""),
                origin=SessionKey.parse(cut.session_key).origin(),
            )
            for cut in found
        ]

    async def _start_adapters(self) -> None:
        for name in PLATFORMS:
            if name not in self.platforms:
                continue
            factory = self.adapter_factories.get(name)
            settings = self.platforms[name]
            if factory is not None:
                adapter = factory(self, settings)
            else:
                adapter = adapter_registry.load(name, self, settings)
            try:
                how = await adapter.start()
            except BaseException:
                await _quietly(adapter.close(), f"{name}: cleaning up")
                raise
            self.adapters[name] = adapter
            log.info("%s: %s", name, how)

    async def stop(self, grace: float | None = DEFAULT_GRACE) -> None:
        """Graceful shutdown; queued input stays in the store for the next start."""
        if self.closing:
            await self._stopped.wait()
            return
        self.closing, self.accepting = True, False
        try:
            if self.cron is not None:
                await self.cron.close()
            self.event_bus.unsubscribe(self._completion_arrived)
            for adapter in list(self.adapters.values()):
                await _quietly(adapter.stop_receiving(), f"{adapter.name}: stopping")
            if self.scheduler is not None:
                await self.scheduler.close(DEFAULT_GRACE if grace is None else grace)
            # While the adapters still send: each chat hears its tasks stopped.
            await self.own_commands.close(wait=5.0)
            for task in list(self._background):
                task.cancel()
            await self._release_queue()
            for adapter in reversed(list(self.adapters.values())):
                await _quietly(adapter.close(), f"{adapter.name}: closing")
            self.adapters.clear()
            self.turns.close()
            self.hooks.close()
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
            if self._own_db:
                self.db.close()
        finally:
            self._stopped.set()

    async def _beat(self) -> None:
        """Keep this run's heartbeat fresh (while it is, nobody takes its queued input),
        and take over the input of gateways that are gone or stopped meanwhile: it
        should not wait for one of them to start again."""
        while True:
            try:
                await asyncio.wait_for(self._stop_beating.wait(), self.heartbeat_every)
                return
            except TimeoutError:
                pass
            try:
                if self.closing:
                    await asyncio.to_thread(self.queue.heartbeat)
                    continue
                await asyncio.to_thread(_end_orphaned_commands, self.home)
                taken = await asyncio.to_thread(self.queue.claim)  # writes the heartbeat too
            except Exception:
                log.exception("could not write the gateway heartbeat")
                continue
            for item in taken:
                if self.closing or self.scheduler is None or self.scheduler.closing:
                    break  # the rest are ours in the store: the release hands them on
                self.scheduler.submit(item)
            if taken:
                log.info("took over %d queued message(s) of a gateway that is gone", len(taken))
            await self._sweep_runs()

    async def _sweep_runs(self) -> None:
        if self.runs is None:
            return
        try:
            await asyncio.to_thread(self.runs.sweep, self.queue.takeover_after)
        except Exception:
            log.exception("could not look for the API runs of gateways that are gone")

    async def _release_queue(self) -> None:
        """Hand the input this run kept to whichever gateway starts next."""
        if self._heartbeat is None:
            return  # never claimed: nothing of ours is in the store
        self._stop_beating.set()
        await self._heartbeat  # not cancelled: a write in flight must land before the release
        try:
            released = await asyncio.to_thread(self.queue.release)
        except Exception:
            log.exception(
                "could not release the queued input; another gateway takes it over %.0f s "
                "after this one stopped",
                self.queue.takeover_after,
            )
            return
        if released:
            log.info("left %d queued message(s) for the next start", released)

    def interrupt_all(self) -> None:
        """Interrupt every running turn now (a second Ctrl-C)."""
        if self.scheduler is not None:
            for lane in list(self.scheduler.lanes.values()):
                self.scheduler.interrupt(lane.conversation_id)

    @property
    def queue_owner(self) -> str | None:
        return self.queue.owner

    @property
    def takeover_after(self) -> float:
        return self.queue.takeover_after

    def status(self) -> dict[str, Any]:
        scheduler = self.scheduler
        return {
            "status": "stopping" if self.closing else "ok",
            "store": self.store_health.status(),
            "platforms": sorted(self.adapters),
            "running_turns": scheduler.running if scheduler else 0,
            "waiting": scheduler.waiting if scheduler else 0,
        }

    # -- messages from chat platforms ---------------------------------------------------

    async def handle_message(self, message: IncomingMessage) -> None:
        """One message from a chat adapter: refuse, run a command, or queue a turn."""
        dispatched = await self._pre_dispatch(message)
        if dispatched is None:
            return
        message = dispatched
        origin = message.origin
        if not self.access.allows(origin):
            refusal = self.access.refusal(origin)
            if refusal:
                await self.send(origin, refusal)
            return
        text = message.full_text().strip()
        if not text:
            return
        key = str(SessionKey.for_origin(origin, group_per_user=self.group_per_user))
        command = commands.parse(text)
        if command is not None and (usage := commands.missing_prompt(command)):
            await self.send(origin, usage)
            return
        if command is not None and command.name == "steer":
            conversation = await asyncio.to_thread(self.router.current_conversation, key)
            if conversation is not None and self.steer(conversation, command.argument):
                await self.send(origin, commands.steered(command.argument))
                return
            text, command = command.argument, None  # no turn runs: a message, as in 0.19
        elif command is not None and command.as_message:  # /queue: behind what runs
            text, command = command.argument, None
        if command is not None and command.immediate:
            if self.closing:
                await self.send(origin, "The gateway is restarting; try again in a moment.")
                return
            if command.name == "new":  # later messages must wait for the new conversation
                async with self._order.hold(key):
                    result = await self.immediate_command(command, key, origin)
            else:
                result = await self.immediate_command(command, key, origin)
            await self.send(origin, result.text)
            return
        if command is not None and command.own:
            said = (
                "The gateway is restarting; try again in a moment."
                if self.closing
                else await self.own_commands.run(command, key, origin)
            )
            await self.send(origin, said)
            return
        if command is not None and not command.conversational:
            answer = await self._plugin_command(command)
            await self.send(origin, commands.refusal(command) if answer is None else answer)
            return
        kind = COMMAND if command is not None else MESSAGE
        if await self._submit_in_order(key, origin, kind, text):
            await self.send(origin, QUEUED_ACK)

    async def _plugin_command(self, command: commands.Command) -> str | None:
        """A plugin's slash command run (its answer, "" for none); None when no plugin
        registered ``/name``. Built-in commands never get here."""
        from hermes.plugins import plugins_for

        plugins = plugins_for(self.config, self.home)
        if commands.is_built_in(command.name) or plugins.command(command.name) is None:
            return None
        answer = await asyncio.to_thread(plugins.run_command, command.name, command.argument)
        return answer or f"/{command.name} done."

    def _plugin_lines(self) -> list[str]:
        """'/name — what it does' of each plugin slash command (for /commands)."""
        from hermes.plugins import plugins_for

        listed = plugins_for(self.config, self.home).commands()
        return [
            f"/{name} — {info.get('description') or 'A plugin command.'}"
            for name, info in sorted(listed.items())
            if not commands.is_built_in(name)
        ]

    async def _pre_dispatch(self, message: IncomingMessage) -> IncomingMessage | None:
        """0.19's ``pre_gateway_dispatch`` plugin hook, before the access check: the first
        ``{"action": "skip"}`` drops the message (no reply), ``{"action": "rewrite",
        "text": ...}`` replaces its text, ``{"action": "allow"}`` or anything else goes on."""
        from hermes.plugins import plugins_for

        plugins = plugins_for(self.config, self.home)
        if not plugins.has_hook("pre_gateway_dispatch"):
            return message
        answers = await asyncio.to_thread(
            plugins.invoke_hook,
            "pre_gateway_dispatch",
            event=message,
            gateway=self,
            session_store=self.db,
        )
        for answer in answers:
            action = answer.get("action") if isinstance(answer, dict) else None
            if action == "skip":
                log.info(
                    "pre_gateway_dispatch skip: reason=%s platform=%s chat=%s",
                    answer.get("reason"),
                    message.origin.platform,
                    message.origin.chat_id,
                )
                return None
            if action == "rewrite" and isinstance(answer.get("text"), str):
                return dataclasses.replace(message, text=answer["text"])
            if action in ("allow", "rewrite"):
                break
        return message

    async def _submit_in_order(self, key: str, origin: Origin, kind: str, text: str) -> bool:
        """Submit a chat's item; items of one key keep their arrival order while its
        conversation is looked up in the store, created or reset in a worker thread."""
        async with self._order.hold(key):
            conversation = await self.conversation_for(key, origin)
            item = WorkItem(
                kind=kind,
                key=key,
                conversation_id=conversation,
                asked=QueuedTurn(text=text),
                origin=origin,
            )
            return await self.submit(item)

    async def conversation_for(self, key: str, origin: Origin) -> str:
        """The conversation ``key`` routes to in the store (another gateway may have
        reset it), started now if it has none."""

        def create() -> str:
            return self.db.create_session(
                source=origin.platform, user_id=origin.user_id, session_key=key
            )

        return await asyncio.to_thread(
            self.router.conversation_for, key, create, platform=origin.platform
        )

    async def submit(self, item: WorkItem) -> bool:
        """Put ``item`` on its lane; True if it waits behind another turn.

        While shutting down the item goes straight to the store for the next run.
        """
        assert self.scheduler is not None, "start() the runner first"
        if self.closing or self.scheduler.closing:
            if item.queue_id is None:  # else it is in the store already
                item.queue_id = await asyncio.to_thread(self.queue.save, item)
            log.info("kept a %s for %s until the restart", item.kind, item.conversation_id)
            if item.sink is not None:
                item.sink.fail(GatewayClosed())
            return True
        return self.scheduler.submit(item)

    async def immediate_command(
        self, command: commands.Command, key: str, origin: Origin
    ) -> WorkResult:
        """``/stop``, ``/new``, ``/help``, ``/status`` (and ``/steer`` without its
        prompt): they act at once, never wait in a lane."""
        if command.name == "help":
            return WorkResult(text=commands.help_text(chat=origin.platform in CHAT_PLATFORMS))
        if command.name in ("queue", "steer"):  # handle_message takes them with a prompt
            return WorkResult(text=commands.missing_prompt(command) or "")
        if command.name == "status":
            conversation = await asyncio.to_thread(self.router.current_conversation, key)
            lane = self.scheduler.lane(conversation) if conversation and self.scheduler else None
            running = lane is not None and lane.running is not None
            queued = len(lane.items) if lane is not None else 0
            text = await asyncio.to_thread(self._status_text, conversation, running, queued)
            return WorkResult(text=text, conversation_id=conversation, session_id=None)
        if command.name == "stop":
            conversation = await asyncio.to_thread(self.router.current_conversation, key)
            scheduler = self.scheduler  # None before start(): nothing runs yet
            text = ""
            if conversation and scheduler is not None:
                if scheduler.interrupt(conversation):
                    text = "Stopping the current reply."
                elif scheduler.waits_elsewhere(conversation):
                    # Its queued input is still answered after that turn, as /stop promises.
                    text = (
                        "Another gateway is writing the current reply; it cannot be stopped here."
                    )
            if conversation:  # and, as 0.19's /stop, the chat's background processes
                stopped = await asyncio.to_thread(
                    background.kill_running, self.home, {conversation}, event_bus=self.event_bus
                )
                if stopped:
                    text = f"{text} {stopped_text(stopped)}".strip()
            text = text or "Nothing is running right now."
            return WorkResult(text=text, conversation_id=conversation, session_id=None)
        # /new: a fresh conversation; items already queued finish in the old one.
        platform = origin.platform

        def create() -> str:
            return self.db.create_session(source=platform, user_id=origin.user_id, session_key=key)

        fresh = await self.start_over(key, origin, create)
        return WorkResult(
            text="Started a new conversation.", conversation_id=fresh, session_id=fresh
        )

    async def start_over(self, key: str, origin: Origin, create: Callable[[], str]) -> str:
        """Point ``key`` at a new conversation made by ``create`` (``/new`` in a chat or
        over the API); returns its id. The old conversation's context engine hears it
        ended, as in the terminal chat, and the hooks hear ``session:end`` and
        ``session:reset``."""
        platform = origin.platform
        ended = {"platform": platform, "user_id": origin.user_id or "", "session_key": key}
        old = await asyncio.to_thread(self.router.current_conversation, key)
        if old is not None:
            await asyncio.to_thread(self.turns.end_conversation, old, key, origin.user_id)
        self.hooks.emit("session:end", ended)
        fresh = await asyncio.to_thread(self.router.reset, key, create, platform=platform)
        self.hooks.emit("session:reset", dict(ended))
        log.info("%s: started a new conversation %s", key, fresh)
        return fresh

    async def send(self, origin: Origin, text: str) -> None:
        """Send ``text`` to a chat; failures are logged, never raised."""
        adapter = self.adapters.get(origin.platform)
        if not isinstance(adapter, ChatAdapter) or not text:
            return
        try:
            await adapter.send(origin, text)
        except Exception as exc:
            log.warning("%s: could not send to chat %s: %s", origin.platform, origin.chat_id, exc)

    # -- what the HTTP API asks of the core (core.ApiHost) -------------------------------

    async def run_unstored(self, item: WorkItem) -> WorkResult:
        """A turn that stores nothing (``store: false``), on the turn workers, no lane."""
        if not self.accepting or self._loop is None:
            raise GatewayClosed()
        return await self._loop.run_in_executor(self._executor, self.turns.run_unstored, item)

    def register_runs(self, runs: RunRegistry) -> None:
        """The registry that starts and ends the API runs this gateway executes."""
        self.runs = runs

    def interrupt(self, conversation_id: str) -> bool:
        """Stop the conversation's running turn; False if none runs here."""
        return bool(self.scheduler and self.scheduler.interrupt(conversation_id))

    def steer(self, conversation_id: str, text: str) -> bool:
        """Hand ``text`` to the conversation's running turn (``/steer``), which takes it
        after its next tool call; False when no turn of it runs here."""
        lane = self.scheduler.lane(conversation_id) if self.scheduler is not None else None
        agent = lane.agent if lane is not None and lane.running is not None else None
        steer = getattr(agent, "steer", None)  # a factory's own agent may take none
        return bool(steer is not None and steer(text))

    def _status_text(self, conversation: str | None, running: bool, queued: int) -> str:
        """/status of a chat's conversation: the store's figures, the kept agent's model
        and context, and what its lane runs and holds (read on the loop; this runs in a
        worker thread)."""
        tip = self.router.tip(conversation) if conversation else None
        agent = self.turns.kept_agent(conversation) if conversation else None
        segment = (self.db.get_session(tip) if tip else None) or {}
        model = getattr(agent, "model", None) or segment.get("model")
        endpoint = getattr(agent, "base_url", None) or self.agent_options.get("base_url")
        context = None
        window = getattr(agent, "window", None)  # hermes's own agent (not a factory's)
        if window is not None and window.compressor.last_prompt_tokens:
            compressor = window.compressor
            context = (
                compressor.last_prompt_tokens,
                compressor.context_length,
                compressor.threshold_tokens,
            )
        facts = StatusFacts(
            model=str(model or self.config.get("model.default")),
            endpoint=str(endpoint or self.config.get("model.base_url")),
            running=running,
            queued=queued,
            context=context,
            processes=len(background.running_of(self.home, {conversation})) if conversation else 0,
        )
        return status_text(self.db, tip, facts)

    def abandon(self, conversation_id: str, sink: ResultSink) -> None:
        """The caller waiting on ``sink`` went away: its turn stops as /stop would."""
        if self.scheduler is not None:
            self.scheduler.abandon(conversation_id, sink)

    def input_waits(self, conversation_id: str) -> bool:
        """Whether input of the conversation waits or runs on this gateway."""
        lane = self.scheduler.lane(conversation_id) if self.scheduler is not None else None
        return lane is not None and lane.busy

    def forget_history(self, conversation_id: str) -> None:
        """Drop the kept agent's history cache of the conversation."""
        self.turns.forget_history(conversation_id)

    # -- running items ------------------------------------------------------------------

    async def _execute(self, item: WorkItem, lane: Lane) -> None:
        run = await self.runs.begin(item) if self.runs is not None else False
        if run is True:
            return  # an API run stopped before its turn began
        if isinstance(run, bool):  # not a run
            await self._execute_item(item, lane)
            return
        try:
            result = await self._execute_item(item, lane)
        except BaseException:
            await run.end(None)
            raise
        await run.end(result, requeued=result is None)

    async def _execute_item(self, item: WorkItem, lane: Lane) -> WorkResult | None:
        """Run the item and deliver its result; None when a shutdown kept it for the
        next start."""
        assert self._loop is not None and self._executor is not None
        origin = item.origin
        adapter = self.adapters.get(origin.platform) if origin is not None else None
        chat = adapter if isinstance(adapter, ChatAdapter) and item.sink is None else None
        typing = (
            chat.typing(origin)
            if chat is not None and origin is not None
            else contextlib.nullcontext()
        )
        async with typing:
            result = await self._loop.run_in_executor(self._executor, self.turns.run, item, lane)
        shut_down = (
            result.interrupted
            and self.closing
            and item.kind == MESSAGE
            and not item.asked.tool_results  # stored already: not again
        )
        if shut_down and await self._keep_for_restart(item, result):
            if item.sink is not None:
                item.sink.fail(GatewayClosed())  # a 503: answered after the restart
            elif chat is not None and origin is not None:
                await self.send(origin, str(GatewayClosed()))
            return None
        if item.sink is not None:
            item.sink.done(result)
            if result.pending_steer:  # acknowledged to its caller: the conversation's next turn
                steer = QueuedTurn(text=result.pending_steer, model=item.asked.model)
                await self.submit(
                    WorkItem(MESSAGE, item.key, item.conversation_id, steer, origin=origin)
                )
        elif chat is not None and origin is not None and not result.dropped:
            await self.send(origin, result.reply_text)
            if result.pending_steer:  # /steer the turn ended without: the next message
                await self._submit_in_order(item.key, origin, MESSAGE, result.pending_steer)
        return result

    async def _keep_for_restart(self, item: WorkItem, result: WorkResult) -> bool:
        """A message whose turn the shutdown interrupted goes back to gateway_queue (its
        place kept by its arrival order) and what the turn stored is undone, so the next
        start answers it once, from the beginning, before what came after it."""

        def keep() -> None:
            # The question is stored again after the restart, under a new uid (the
            # undone row keeps the one its client's retries were told of).
            asked = replace(item.asked, user_uid=None, retried=False)
            if result.user_message_uid is not None:
                undo_turn(self.db, item.conversation_id, result.user_message_uid)
                asked = replace(asked, history=None)  # the seeded history is stored already
            item.asked = asked
            item.turn = None
            item.queue_id = self.queue.save(item)

        try:
            await asyncio.to_thread(keep)
        except Exception:
            log.exception("could not keep the interrupted message of %s", item.conversation_id)
            return False
        log.info("kept the interrupted message of %s for the next start", item.conversation_id)
        return True

    # -- background-process completion events -------------------------------------------

    def _completion_arrived(self, event: events.CompletionEvent) -> None:
        """Subscriber of this gateway's event bus; runs on the process's watcher thread."""
        loop = self._loop
        if loop is None or self.closing or loop.is_closed():
            events.spool_event(self.home, event)  # the next run (or another surface) takes it
            return
        loop.call_soon_threadsafe(lambda: self._spawn(self._take_event(event)))

    async def _take_event(self, event: events.CompletionEvent) -> None:
        addressed = await asyncio.to_thread(self._address, event)
        if addressed is None:
            await asyncio.to_thread(events.spool_event, self.home, event)
            return
        key, conversation = addressed
        item = WorkItem(
            kind=EVENT,
            key=key,
            conversation_id=conversation,
            asked=QueuedTurn(text=event.describe()),
            origin=SessionKey.parse(key).origin(),
            process_id=event.process_id,
        )
        log.info("completion of %s queued for conversation %s", event.process_id, conversation)
        await self.submit(item)

    def _address(self, event: events.CompletionEvent) -> tuple[str, str] | None:
        """(key, conversation) of a gateway conversation the event is addressed to."""
        conversation = getattr(event, "conversation_id", None)
        segment = self.db.get_session(conversation) if conversation else None
        if segment is None:
            return None
        key = segment.get("session_key")
        if not key or key.split(":", 1)[0] not in PLATFORMS:
            return None
        return key, segment["conversation_id"]

    async def _drain_spooled_events(self) -> None:
        try:
            spooled = await asyncio.to_thread(drain_events, self.home)
        except Exception:
            log.exception("could not read spooled completion events")
            return
        for event in spooled:
            await self._take_event(event)

    # -- agents ---------------------------------------------------------------------------

    # -- hook points of Hermes Agent's gateway.run.GatewayRunner (tools patch them) ----

    def _resolve_session_agent_runtime(
        self,
        *,
        source: Origin | None = None,
        session_key: str | None = None,
        user_config: dict[str, Any] | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """0.19's ``(model, runtime kwargs)`` for a chat's next turn: the configured model.
        hermes-agent-kit and others patch or override this on the class; a model other
        than the configured one becomes that turn's model (the runtime kwargs are not
        read: hermes has one endpoint per home)."""
        return str(self.config.get("model.default")), {}

    def _model_for(self, item: WorkItem) -> str | None:
        model, _ = self._resolve_session_agent_runtime(source=item.origin, session_key=item.key)
        return model if model and model != self.config.get("model.default") else None

    def build_agent(self, **kwargs: Any) -> AIAgent:
        from hermes.agent import AIAgent

        options = {"quiet_mode": True, "session_db": self.db, **self.agent_options, **kwargs}
        if self.make_model is not None:
            options.setdefault("model_client", self.make_model())
        source = str(options.get("source") or "")
        if "cwd" not in options and workspaces.per_user(source):
            # Each user's turns work in their own folder, never where the gateway started.
            options["cwd"] = workspaces.user_workspace(
                self.config, self.home, source, options.get("user_id")
            )
        return AIAgent(config=self.config, event_bus=self.event_bus, **options)

    def _agent_event(self, key: str, conversation: str, kind: str, data: dict[str, Any]) -> None:
        """Events of an agent (any thread): compressions are logged, reviews reported."""
        if kind == "compressed":
            log.info(
                "conversation %s rotated: %s -> %s",
                conversation,
                data.get("parent"),
                data.get("child"),
            )
        elif kind == "review":
            summary = data.get("summary") or data.get("error") or ""
            log.info("background review of %s: %s", conversation, summary)
            loop = self._loop
            if data.get("saved") and loop is not None and not loop.is_closed():
                origin = SessionKey.parse(key).origin()
                note = f"({summary})"
                loop.call_soon_threadsafe(lambda: self._spawn(self.send(origin, note)))

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


class _KeyOrder:
    """Per-key FIFO locks, alive only while some message of the key waits on one."""

    def __init__(self) -> None:
        self._locks: dict[str, list[Any]] = {}  # key -> [asyncio.Lock, holders and waiters]

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        entry = self._locks.setdefault(key, [asyncio.Lock(), 0])
        entry[1] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1] -= 1
            if entry[1] == 0:
                del self._locks[key]


def _end_orphaned_commands(home: Path) -> None:
    """End the tool commands whose hermes process died while they ran (its turn is
    gone): at start, and at every heartbeat for owners that died since."""
    from hermes.tools.processes import background

    background.end_orphaned(home)  # it logs what it ended


async def _quietly(awaitable: Any, what: str) -> None:
    try:
        await awaitable
    except Exception as exc:
        log.warning("%s failed: %s", what, exc)
