"""What the gateway's core and the rooms around it ask of each other.

The core is the runner (``runner.GatewayRunner``) with its lanes, routes and turns. It
hands every adapter itself as an ``AdapterHost`` (a chat platform needs nothing but
``handle_message``) and the HTTP API, which asks more of it, as an ``ApiHost``. The
HTTP API in turn gives the core its run registry (``RunRegistry``): any gateway on a
store may claim a queued API run, so every gateway attaches the HTTP room at start-up
(``attach_rooms``), whether or not it serves the API itself.

The core drives each conversation's agent through ``ConversationAgent``: the members
the turn runner (``work.py``), the lanes and the conversation commands use, and no
more. ``AgentFactory`` makes one; ``hermes.agent.AIAgent`` is the one the gateway builds,
and satisfies it by its shape.

The core imports none of its rooms: they are named here, as the platform adapters are
named in ``adapters.ADAPTERS``, and each registers what it serves through
``attach(host)``. ``tests/gateway/test_layers.py`` keeps it so.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hermes.agent import AIAgent
    from hermes.agent.binding import ConversationBinding
    from hermes.agent.model.protocol import Model
    from hermes.agent.toolbox import Toolbox
    from hermes.agent.turn_options import TurnOptions
    from hermes.agent.turn_result import TurnResult
    from hermes.config import Config
    from hermes.gateway.commands import Command
    from hermes.gateway.envelopes import IncomingMessage, Origin, WorkResult
    from hermes.gateway.lanes import ResultSink, WorkItem
    from hermes.gateway.routing import Router
    from hermes.gateway.settings import ApiServerSettings
    from hermes.gateway.store_health import StoreHealth
    from hermes.state.store import SessionDB

# The rooms every gateway attaches at start-up: modules with an ``attach(host)``.
ROOMS = ("hermes.gateway.http.room",)


class ConversationAgent(Protocol):
    """What the gateway asks of a conversation's agent (worker threads, one turn at a
    time): run a turn, be stopped; what a turn left and the store's tip it settles
    through ``binding``, the conversation's own part."""

    model: str

    @property
    def session_id(self) -> str | None:
        """The segment the agent writes to now (the tip, after a rotation)."""

    @property
    def binding(self) -> ConversationBinding:
        """Its conversation in the store (the caller may hold its turn lock)."""

    @property
    def client(self) -> Model:
        """Its model client (closed when the agent is let go)."""

    @property
    def toolbox(self) -> Toolbox:
        """Every tool it can run (a cut turn's calls to them were its own)."""

    # The keywords of AIAgent.run the gateway passes, repeated: a protocol states them.
    def run(
        self,
        user_message: Any,
        *,
        conversation_history: Sequence[Mapping[str, Any]] | None = None,
        tool_results: list[dict[str, Any]] | None = None,
        answer_uid: str | None = None,
        user_uid: str | None = None,
        resume: bool = False,
        options: TurnOptions | None = None,
    ) -> TurnResult:
        """One turn to its answer (``resume``: answer the stored history as it is)."""

    def close_conversation(self) -> None:
        """End the stored conversation for its context engine (``/new``)."""

    def interrupt(self) -> None:
        """Stop the running turn at the next safe point."""


AgentFactory = Callable[..., ConversationAgent]


class AdapterHost(Protocol):
    """What a platform adapter needs of the core: somewhere to hand its messages."""

    async def handle_message(self, message: IncomingMessage) -> None:
        """Refuse, run a command, or queue a turn for one message of a chat."""


class RunHandle(Protocol):
    """One run's turn on this gateway, from its start to its outcome."""

    async def end(self, result: WorkResult | None, *, requeued: bool = False) -> None:
        """Record the outcome (``result`` None: the turn failed inside the gateway;
        ``requeued``: a shutdown kept the item for the next start)."""


class RunRegistry(Protocol):
    """Work items with a life of their own beside their turn (the HTTP API's runs)."""

    async def begin(self, item: WorkItem) -> RunHandle | bool:
        """False: not a run. True: a run stopped before it started. Else the run now
        starting (its sink set on ``item``)."""

    def sweep(self, takeover_after: float) -> None:
        """Settle the runs of gateways that are gone (blocking: call from a thread)."""


class ApiHost(AdapterHost, Protocol):
    """What the HTTP API needs of the core: its store, settings and routes, putting
    work items on their lanes, stopping them, and a place for its run registry."""

    config: Config
    home: Path
    db: SessionDB
    api: ApiServerSettings | None
    router: Router
    holder: str
    accepting: bool
    closing: bool
    store_health: StoreHealth

    @property
    def queue_owner(self) -> str | None:
        """Who owns input this gateway saves now (a run's queued input is written so):
        this gateway, or nobody once it released its input at a stop."""

    @property
    def takeover_after(self) -> float:
        """Seconds without a heartbeat after which a gateway counts as gone."""

    def status(self) -> dict[str, Any]:
        """What ``/health`` and ``/v1/capabilities`` tell of the gateway."""

    def build_agent(self, **options: Any) -> AIAgent:
        """An agent as this gateway makes them (``options`` as ``AIAgent`` takes them)."""

    async def submit(self, item: WorkItem) -> bool:
        """Put ``item`` on its lane; True if it waits behind another turn."""

    async def run_unstored(self, item: WorkItem) -> WorkResult:
        """A turn that stores nothing, on the turn workers, no lane."""

    async def send_to_chat(self, origin: Origin, text: str) -> None:
        """Send ``text`` to a chat of a platform this gateway runs (a webhook's answer);
        raises ``GatewayError`` when the platform is not connected or refused it."""

    async def immediate_command(self, command: Command, key: str, origin: Origin) -> WorkResult:
        """``/stop``, ``/new``, ``/help`` and ``/status``, at once."""

    async def start_over(self, key: str, origin: Origin, create: Callable[[], str]) -> str:
        """Point ``key`` at a new conversation made by ``create``; its id. The old
        one's context engine and the hooks hear it ended."""

    def interrupt(self, conversation_id: str) -> bool:
        """Stop the conversation's running turn; False if none runs here."""

    def steer(self, conversation_id: str, text: str) -> bool:
        """Hand ``text`` to the conversation's running turn; False if none runs here."""

    def abandon(self, conversation_id: str, sink: ResultSink) -> None:
        """The caller waiting on ``sink`` went away: stop its turn if it runs."""

    def input_waits(self, conversation_id: str) -> bool:
        """Whether input of the conversation waits or runs on this gateway."""

    def forget_history(self, conversation_id: str) -> None:
        """Drop the kept agent's history cache (rows changed behind its back)."""

    def register_runs(self, runs: RunRegistry) -> None:
        """Give the core the registry that starts and ends the runs it executes."""


def attach_rooms(host: ApiHost) -> None:
    """Let every room in ``ROOMS`` register what it serves with ``host``."""
    for name in ROOMS:
        importlib.import_module(name).attach(host)
