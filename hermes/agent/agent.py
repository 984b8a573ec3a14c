"""AIAgent: the public facade that assembles an agent and satisfies the turn host.

Constructing an agent makes no network call and writes nothing; the model client,
the tool registry and the system prompt are made when first needed. An agent is
assembled from small parts: the conversation binding (``binding.py``: the store, the
segment, the history), the model client (``model/``), the toolbox (``toolbox.py``), the
context window (``window.py``: the compressor and the encoded context) and the
interruption (``interruption.py``). The turn loop (``turn.py``), the compression path
(``compression.py``) and their helpers are handed the agent as a ``TurnHost``
(``host.py``): they read those parts, never this module. The rest of this class is
Hermes Agent's surface (``run``, ``chat``, ``session_id``, ...) and the
commands a surface gives (``undo``, ``compress_now``, ``set_model``, ...).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.agent import compression, plugin_hooks, recontext, review, turn_holding
from hermes.agent.binding import ConversationBinding, SegmentOrigin
from hermes.agent.host import Lease
from hermes.agent.interruption import Interruption
from hermes.agent.masking import MaskPolicy
from hermes.agent.model.client import ModelClient
from hermes.agent.preferences import ChatPreferences
from hermes.agent.settings import AgentOptions
from hermes.agent.steering import SteeringInbox
from hermes.agent.summariser import NOTHING_TO_COMPRESS, Summariser
from hermes.agent.tokens import context_window
from hermes.agent.toolbox import Toolbox, ToolScope
from hermes.agent.turn_options import TurnDefaults, TurnOptions
from hermes.agent.window import CompressionOutcome, ContextWindow
from hermes.config import (
    API_KEY_ENV,
    Config,
    api_key_from_env,
    dotenv_values,
    hermes_home,
    load_config,
    register_secrets,
)
from hermes.state.context.message import Message
from hermes.state.errors import SessionNotFoundError
from hermes.state.lease import make_holder

if TYPE_CHECKING:
    from hermes.agent.engine_compressor import Endpoint
    from hermes.agent.model.protocol import Model
    from hermes.agent.turn_result import TurnResult
    from hermes.state.store import SessionDB
    from hermes.tools.processes.events import EventBus
    from hermes.tools.registry import Tool

log = logging.getLogger(__name__)

EventCallback = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class _Asked:
    """What an agent asks of its own compression beyond Hermes Agent 0.19's arguments."""

    agent: AIAgent
    whole: bool = False  # summarise even a short conversation (/compress)
    detached: bool = False  # a caller's own history: compressed in memory only


# Set while an agent calls its ``_compress_context``: hermes's keywords travel beside the
# call, so an override with 0.19's signature that delegates to ``super()`` keeps them. A
# context variable, so each thread sees only its own call.
_ASKED: ContextVar[_Asked | None] = ContextVar("hermes_compression_asked", default=None)


class AIAgent:
    """An LLM agent whose transcript lives in a SessionDB segment chain."""

    # Hermes Agent 0.19's constructor keywords, one a line: the drop-in's contract.
    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        model: str | None = None,
        *,
        provider: str | None = None,
        quiet_mode: bool = False,
        session_db: SessionDB | None = None,
        session_id: str | None = None,
        source: str = "cli",
        skip_context_files: bool = False,
        skip_memory: bool = False,
        max_iterations: int | None = None,
        persist_session: bool = True,
        config: Config | None = None,
        tools: list[str] | None = None,
        stream_callback: Callable[[str], None] | None = None,
        event_callback: EventCallback | None = None,
        cwd: str | Path | None = None,
        interactive: bool = False,
        approve: Callable[[str, str], bool] | None = None,
        user_id: str | None = None,
        session_key: str | None = None,
        title: str | None = None,
        is_fork: bool = False,
        ephemeral_system_prompt: str | None = None,
        yolo: bool = False,
        event_bus: EventBus | None = None,
        model_client: Model | None = None,
    ) -> None:
        """Assemble an agent; nothing here reaches the network or writes the store.

        ``api_key``, ``base_url`` and ``model`` name the endpoint (else the
        configuration's); ``model_client`` replaces its client (``hermes.testing``'s
        scripted model in tests). ``session_db`` and ``session_id`` bind the agent to a
        stored conversation (``persist_session=False``: read it, never write);
        ``source``, ``user_id``, ``session_key``, ``title`` and ``cwd`` are what a new
        conversation is stored with. ``tools`` names the tools offered (else the
        surface's toolset); ``stream_callback``, ``event_callback``, ``interactive`` and
        ``approve`` connect the surface that shows the turns; ``ephemeral_system_prompt``
        is sent after the segment's prompt and never stored. ``is_fork`` makes the
        read-only background review; ``yolo`` runs dangerous commands without asking;
        ``event_bus`` hears the completions of background processes its tools start.
        """
        self._read_configuration(config, api_key, base_url, model, provider, max_iterations)
        self.quiet_mode = quiet_mode
        self.source = source
        self.user_id = user_id
        self.session_key = session_key
        self.cwd = Path(cwd) if cwd else Path.cwd()
        self.skip_context_files = skip_context_files
        self.skip_memory = skip_memory
        self._persist_session = persist_session
        self.is_fork = is_fork
        self.yolo = yolo  # `hermes --yolo`: dangerous commands run without asking
        # Who hears the completion events of background processes its tools start (the
        # owner's bus, e.g. a gateway's); None: they are spooled for drain_events.
        self.event_bus = event_bus
        self._connect_surface(
            stream_callback, event_callback, approve, interactive, ephemeral_system_prompt
        )
        self._make_model_client(model_client)
        self._make_context_window(offers_recall=session_db is not None)
        self._bind(session_db, session_id, title)
        self._make_toolbox(tools)

    def _read_configuration(
        self,
        config: Config | None,
        api_key: str | None,
        base_url: str | None,
        model: str | None,
        provider: str | None,
        max_iterations: int | None,
    ) -> None:
        """The configuration, with the keywords applied, and the endpoint's key."""
        self.config = config or load_config()
        self.settings = AgentOptions.from_config(
            self.config, model=model, base_url=base_url, max_iterations=max_iterations
        )
        self.model = self.settings.model.name
        self.base_url = self.settings.model.base_url
        self.provider = provider
        self.api_key = (
            api_key or api_key_from_env() or _key_from_dotenv() or self.config.get("model.api_key")
        )
        register_secrets(self.config)
        self.max_iterations = self.settings.max_iterations
        self.hermes_home = hermes_home()
        self.agent_id = uuid.uuid4().hex
        self.lease = Lease(make_holder(self.agent_id), self.settings.compression.lease_ttl_seconds)
        from hermes.plugins import plugins_for  # here: `import run_agent` stays light

        self.plugins = plugins_for(self.config, self.hermes_home)
        self.preferences = ChatPreferences.from_config(self.config)

    def _connect_surface(
        self,
        stream_callback: Callable[[str], None] | None,
        event_callback: EventCallback | None,
        approve: Callable[[str, str], bool] | None,
        interactive: bool,
        ephemeral_system_prompt: str | None,
    ) -> None:
        """What the owner's surface hears and answers; ``connect`` changes it later."""
        self.stream_callback = stream_callback
        self.event_callback = event_callback
        self.approve = approve
        self.interactive = interactive
        # Instructions for this agent's requests only (`hermes chat -s`): sent after the
        # segment's system prompt, never stored with it, so resuming without them works.
        self.ephemeral_system_prompt = ephemeral_system_prompt
        self.review_threads: list[threading.Thread] = []

    def _make_model_client(self, model_client: Model | None) -> None:
        """Any ``Model`` given (hermes.testing's scripted one in tests); by default a
        client of the configured endpoint. The interruption stops its stream."""
        self.client: Model = (
            ModelClient(
                self.api_key,
                self.base_url,
                self.model,
                timeout=self.settings.model.request_timeout,
                max_retries=self.settings.model.max_retries,
                headers=dict(self.settings.model.transport.headers),
                verify=self.settings.model.transport.verify,
            )
            if model_client is None
            else model_client
        )
        self.interruption = Interruption(self.client)
        self.steering = SteeringInbox()  # /steer: guidance for the running turn

    def _make_context_window(self, *, offers_recall: bool) -> None:
        """The compressor (the summariser, or a plugin's engine) and the masking of old
        tool results, in the context window."""
        compressing = self.settings.compression
        # Old tool results reach the model as stubs (None: always whole).
        masking = (
            MaskPolicy(keep_tokens=compressing.mask_keep_tokens)
            if compressing.mask_tool_outputs
            else None
        )
        self.window = ContextWindow(masking, compression_enabled=compressing.enabled)
        self.window.compressor = Summariser(
            self.client,
            model=self.model,
            context_length=context_window(self.model, self.settings.model.context_length),
            threshold=compressing.threshold,
            summary_model=compressing.summary_model,
            tail_share=compressing.tail_share,
            max_window=compressing.max_window,
            cooldown_seconds=compressing.cooldown_seconds,
            max_summary_requests=compressing.max_summary_requests,
            offers_recall=offers_recall,
            sent_as=self.window.sent_as,
            # With a store, the summary model reads a recallable output as its stub.
            stub_of=(masking or MaskPolicy(keep_tokens=0)).stub_for if offers_recall else None,
        )
        self._seat_context_engine()

    def _seat_context_engine(self) -> None:
        """``context.engine`` names a plugin's engine: it compresses in the summariser's
        place (hermes/agent/engine_compressor.py); an unknown name keeps the summariser."""
        name = self.config.get("context.engine")
        if name == "compressor":
            return
        from hermes.agent.engine_compressor import EngineCompressor, chosen_engine

        engine = chosen_engine(name, self.plugins.engine(name))
        if engine is not None:
            self.window.compressor = EngineCompressor(
                engine,
                model=self.model,
                context_length=self.window.compressor.context_length,
                cooldown_seconds=self.settings.compression.cooldown_seconds,
                endpoint=self._endpoint(),
            )

    def _endpoint(self) -> Endpoint:
        """Where this agent's model is served, as a context engine is told it."""
        from hermes.agent.engine_compressor import Endpoint

        return Endpoint(
            base_url=self.base_url or "", api_key=self.api_key or "", provider=self.provider or ""
        )

    def _bind(
        self, session_db: SessionDB | None, session_id: str | None, title: str | None
    ) -> None:
        """The conversation binding: the store, the segment and its history."""
        self.binding = ConversationBinding(
            session_db,
            session_id,
            origin=SegmentOrigin(
                source=self.source,
                user_id=self.user_id,
                session_key=self.session_key,
                cwd=str(self.cwd),
            ),
            model=lambda: self.model,
            title=title,
            writes=self._persist_session and not self.is_fork,
            build_prompt=self._build_system_prompt,
            emit=self.emit,
        )

    def _make_toolbox(self, tools: list[str] | None) -> None:
        """The tools offered: ``tools`` if given, else the surface's toolset."""
        scope = ToolScope(
            config=self.config,
            hermes_home=self.hermes_home,
            cwd=self.cwd,
            source=self.source,
            user_id=self.user_id,
            event_bus=self.event_bus,
            yolo=self.yolo,
            is_fork=self.is_fork,
        )
        self.toolbox = Toolbox(
            scope=scope,
            binding=self.binding,
            override=tools,
            extra_tools=self._plugin_tools,
            on_event=self.emit,
        )

    def _plugin_tools(self) -> list[Tool]:
        """The plugins' tools, those code in this process added (0.19's
        ``registry.register``) and the context engine's, offered after the built-in ones."""
        from hermes.agent.engine_compressor import EngineCompressor, engine_tools
        from hermes.tools.added import ADDED

        compressor = self.window.compressor
        return (
            self.plugins.tools()
            + ADDED.tools()
            + (engine_tools(compressor.engine) if isinstance(compressor, EngineCompressor) else [])
        )

    def _build_system_prompt(self) -> str:
        """A new segment's system prompt, from the home, the memory and the tools."""
        from hermes.agent.prompt import build_system_prompt
        from hermes.tools.memory import memory_home

        return build_system_prompt(
            hermes_home=self.hermes_home,
            memory_dir=memory_home(
                self.hermes_home, self.source, self.user_id, bool(self.config.get("memory.shared"))
            ),
            cwd=self.cwd,
            tool_names=self.tool_names(),
            skip_memory=self.skip_memory,
            skip_context_files=self.skip_context_files,
            config=self.config,
            source=self.source,
            user_id=self.user_id,
        )

    # -- public API -----------------------------------------------------------------

    def run(
        self,
        user_message: Any,
        *,
        conversation_history: Sequence[Mapping[str, Any]] | None = None,
        tool_results: list[dict[str, Any]] | None = None,
        answer_uid: str | None = None,
        user_uid: str | None = None,
        system_message: str | None = None,
        persist_user_message: Any = None,
        persist_user_timestamp: float | None = None,
        resume: bool = False,
        options: TurnOptions | None = None,
    ) -> TurnResult:
        """Run one user turn to a final answer; see ``turn.run_turn``.

        ``conversation_history`` is the history the caller holds: set against the store
        (``caller_history``), so passing the stored conversation back stores nothing
        twice. ``tool_results`` (``{"tool_call_id", "content"}`` each) answer the open
        calls of ``client_tools`` the last turn handed back; the turn then goes on from
        them instead of from a new user message. ``answer_uid`` is the ``message_uid``
        the final answer is stored under (a caller that named it ahead), ``user_uid``
        the user's message's.
        ``system_message`` reaches the model after the segment's prompt for this turn,
        never stored; ``persist_user_message`` is stored in place of ``user_message``
        (which is what the model gets), dated ``persist_user_timestamp`` if given.
        ``resume`` answers the stored history as it is, without a new message (a turn a
        crash cut off). ``options`` are this turn's own choices (model, instructions,
        tools, sampling, callbacks): they apply to this turn only.
        """
        from hermes.agent.turn import TurnInput, run_turn
        from hermes.text import well_formed

        # A lone surrogate must not fail the turn when stored (in text, or a text part).
        if isinstance(user_message, str):
            user_message = well_formed(user_message)
        elif isinstance(user_message, list):
            user_message = [_well_formed_part(part, well_formed) for part in user_message]

        given = TurnInput(
            history=conversation_history,
            tool_results=tool_results,
            answer_uid=answer_uid,
            user_uid=user_uid,
            system_message=system_message,
            persist_user_message=persist_user_message,
            user_timestamp=persist_user_timestamp,
            resume=resume,
        )
        return run_turn(self, user_message, given, options)

    def chat(
        self,
        message: str,
        stream_callback: Callable[[str], None] | None = None,
        *,
        options: TurnOptions | None = None,
    ) -> str:
        """One turn's answer; ``stream_callback`` hears its text as it comes."""
        if stream_callback is not None:
            options = replace(options or TurnOptions(), stream_callback=stream_callback)
        return self.run(message, options=options).answer or ""

    def interrupt(self) -> None:
        """Stop the running turn at the next safe point (a stream stops at once); the
        steering it had not taken yet is dropped."""
        self.interruption.set()
        self.steering.drop()

    def steer(self, text: str) -> bool:
        """Guide the running turn without stopping it: ``text`` joins it as a user
        message after its next tool results. False when no turn runs (or ``text`` is
        blank): send it as a message of its own then."""
        return self.steering.steer(text)

    def compress(
        self,
        messages: list[Message],
        system_message: str | None,
        *,
        approx_tokens: int | None = None,
        detached: bool = False,
    ) -> tuple[list[Message], str | None]:
        """A turn's compression (the turn host's ``compress``), through
        ``_compress_context`` called as 0.19's turn loop calls it, so a subclass or a
        patch that overrides it sees every compression; what an override raises fails
        the turn, as in 0.19."""
        return self._ask_compression(
            messages,
            system_message,
            _Asked(self, detached=detached),
            approx_tokens=approx_tokens,
            task_id=self.session_id or "default",
        )

    def _ask_compression(
        self,
        messages: list[Message],
        system_message: str | None,
        asked: _Asked,
        **arguments: Any,
    ) -> tuple[list[Message], str | None]:
        """Call ``_compress_context`` with 0.19's ``arguments``, ``asked`` beside them."""
        token = _ASKED.set(asked)
        try:
            return self._compress_context(messages, system_message, **arguments)
        finally:
            _ASKED.reset(token)

    def _compress_context(
        self,
        messages: list[Message],
        system_message: str | None,
        *,
        approx_tokens: int | None = None,
        task_id: str = "default",
        focus_topic: str | None = None,
        force: bool = False,
        whole: bool = False,
        detached: bool = False,
    ) -> tuple[list[Message], str | None]:
        """Compress ``messages``, with Hermes Agent 0.19's signature (overrides keep it).

        ``task_id`` (0.19's tool sandbox) means nothing here, and ``force`` (0.19: even
        in the cooldown after a failed summary) always holds: the cooldown only holds
        back the turn's own check. ``whole`` summarises even a short conversation;
        ``detached`` messages are a caller's own history, not the segment's, so the
        compression stays in memory (see caller_history). When the agent calls this
        itself (``compress``, ``compress_now``) those two come beside the call."""
        del task_id, force
        asked = _ASKED.get()
        if asked is not None and asked.agent is self:
            whole, detached = whole or asked.whole, detached or asked.detached
        return compression.compress_context(
            self,
            messages,
            system_message,
            approx_tokens=approx_tokens,
            focus_topic=focus_topic,
            whole=whole,
            detached=detached,
        )

    def compress_now(self, focus_topic: str | None = None) -> CompressionOutcome:
        """Force a compression of the current segment (``/compress``); says what happened."""
        self.interruption.clear()  # a Ctrl-C that ended the last turn must not stop this
        self.binding.ensure_session()
        with turn_holding.holding_turn(self):
            return self._compress_now(focus_topic)

    def _compress_now(self, focus_topic: str | None) -> CompressionOutcome:
        binding = self.binding
        binding.ensure_session()
        history = binding.load_history()
        if binding.context_stale and binding.writes_transcript:
            return recontext.rebuild(self)  # a compression that reads every standing row
        system = binding.segment_system_prompt() if binding.session_db is not None else None
        before = self.window.estimate_tokens(history)
        # As 0.19's /compress calls it (``force``), so an override sees this one too.
        arguments = {"approx_tokens": before, "focus_topic": focus_topic, "force": True}
        compressed, _ = self._ask_compression(history, system, _Asked(self), **arguments)
        outcome = self.window.last_compression or CompressionOutcome()
        if compressed is history and (outcome.reason or "").startswith(NOTHING_TO_COMPRESS):
            # Asked for, a compression of a short conversation summarises all of it
            # (but an unanswered last message), as /compact does elsewhere.
            all_of_it = _Asked(self, whole=True)
            compressed, _ = self._ask_compression(history, system, all_of_it, **arguments)
            outcome = self.window.last_compression or CompressionOutcome()
        outcome.tokens_before = before
        if compressed is not history and not outcome.rotated:
            binding.forget_cache()
        return outcome

    def undo(self, turns: int = 1) -> list[dict[str, Any]]:
        """Mark the last ``turns`` user turns undone (durably); returns what was undone.

        When a summary the context holds read them, the context is made again without
        them in the same step (``recontext``); if that fails, ``ContextNotRebuiltError``
        says why and nothing was undone."""
        binding = self.binding
        binding.ensure_session()
        if binding.session_db is None or binding.session_id is None:
            return []
        with turn_holding.holding_turn(self):
            binding.ensure_session()
            return self._undo(turns)

    def _undo(self, turns: int) -> list[dict[str, Any]]:
        db, tip = self.binding.bound()
        # The logical conversation, so a turn compressed into the child is found too.
        rows = [m for m in db.get_conversation_messages(tip) if not m["undone"]]
        starts = [i for i, r in enumerate(rows) if r["role"] == "user"]
        if not starts:
            return []
        undone = rows[starts[-min(turns, len(starts))] :]
        ids = [r["id"] for r in undone]
        review.withdraw(self.binding.conversation_id)  # a running review may hold these rows
        if db.undo_reaches_summary(tip, ids):
            recontext.rebuild(self, undo_ids=ids)
        else:
            db.mark_undone(tip, ids)
        self.binding.forget_cache()
        return undone

    def set_model(self, model: str) -> None:
        """Switch the model for the next calls; recorded on the segment. The compressor
        takes the model's window (a plugin's context engine through 0.19's
        ``update_model``), so it compresses at the new model's threshold."""
        from hermes.agent.engine_compressor import EngineCompressor

        self.model = model
        self.client.model = model
        compressor = self.window.compressor
        window = context_window(model, self.settings.model.context_length)
        if isinstance(compressor, EngineCompressor):
            compressor.update_model(model, window, self._endpoint())
        else:  # the built-in one compresses at the new model's threshold too
            compressor.model, compressor.context_length = model, window
        if self.binding.writes_transcript and self.session_id:
            # A segment not stored yet is created with the new model at its first turn.
            with contextlib.suppress(SessionNotFoundError):
                self.binding.bound()[0].set_model(self.session_id, model)

    def start_new_conversation(self, title: str | None = None) -> None:
        """Point the agent at a conversation that starts with its next message."""
        self.end_conversation()
        self.binding.start_new(title)
        self.window.note_compression(None)
        self.window.forget_prompt_size()  # that figure was the old context's

    def continue_conversation(self, tip: str, conversation_id: str, title: str | None) -> None:
        """Point the agent at the stored conversation whose tip is ``tip``."""
        if conversation_id != self.binding.conversation_id:
            self.end_conversation()
        self.binding.continue_at(tip, conversation_id, title)
        self.window.note_compression(None)
        self.window.forget_prompt_size()

    def end_conversation(self, reason: str = "session_boundary") -> None:
        """The user leaves the conversation (``/new``, another one, the chat closed:
        ``reason`` ``shutdown``): a plugin's context engine that served it hears so
        (0.19's ``on_session_end``), and the plugins' ``on_session_finalize`` fires."""
        from hermes.agent.engine_compressor import EngineCompressor

        compressor, conversation = self.window.compressor, self.binding.conversation_id
        if isinstance(compressor, EngineCompressor) and conversation:
            compressor.end(conversation, self.binding.load_history())
        plugin_hooks.finalize(self, reason)

    def close_conversation(self) -> None:
        """End the stored conversation this agent is bound to, whose turns other agents
        served (a gateway chat's ``/new``: the kept agent may still be answering what was
        queued before it). A plugin's context engine hears the conversation as a turn
        would tell it (``on_session_start``), then its end (``on_session_end`` with its
        messages, ``on_session_reset``), so it can settle what it keeps of it; the
        plugins hear ``on_session_finalize``. An agent made with ``persist_session=False``
        writes nothing meanwhile; a conversation without a message has nothing to end."""
        from hermes.agent.engine_compressor import EngineCompressor

        engine = isinstance(self.window.compressor, EngineCompressor)
        if self.session_id is None or not (engine or plugin_hooks.finalizes(self)):
            return
        self.binding.ensure_session()  # follows the bound id to the tip, and its conversation
        if not self.binding.load_history():
            return
        plugin_hooks.bind_engine(self)
        self.end_conversation("new_session")

    def set_title(self, title: str) -> None:
        """The title a conversation this agent creates gets (the store has the rest)."""
        self.binding.title = title

    def connect(
        self,
        *,
        stream_callback: Callable[[str], None] | None = None,
        event_callback: EventCallback | None = None,
        approve: Callable[[str, str], bool] | None = None,
        on_retry: Callable[..., None] | None = None,
    ) -> None:
        """Connect the surface that shows this agent's turns (a terminal): it hears the
        streamed text, the events and the retries; with ``approve`` it answers the
        questions risky commands ask, so the agent is interactive."""
        self.stream_callback = stream_callback
        self.event_callback = event_callback
        if approve is not None:
            self.approve, self.interactive = approve, True
        if on_retry is not None:
            self.client.on_retry = on_retry

    # -- the turn host (hermes/agent/host.py): what a turn asks of its agent ----------

    def defaults(self) -> TurnDefaults:
        """This agent's choices for a turn whose options make none."""
        return TurnDefaults(
            model=self.model,
            max_iterations=self.max_iterations,
            # The chat's personality, then the owner's own instructions (never stored).
            instructions="\n\n".join(
                text
                for text in (self.preferences.personality_prompt, self.ephemeral_system_prompt)
                if text
            )
            or None,
            stream_callback=self.stream_callback,
            approve=self.approve,
            interactive=self.interactive,
            sampling=self.preferences.request_parameters(),
        )

    def emit(self, kind: str, **data: Any) -> None:
        if self.event_callback is not None:
            try:
                self.event_callback(kind, data)
            except Exception:  # a surface's display bug must not break the turn
                log.exception("event callback failed for %s", kind)

    def review_fork(self) -> AIAgent:
        """The background review's agent: read-only, the same model, session and system
        prompt (so the provider's prompt cache hits), its own client and the review's
        tools, its requests capped in time."""
        from hermes.tools.toolsets import review_tools

        # The agent's settings handed on by name: the fork is built as the agent it reviews.
        fork = AIAgent(
            api_key=self.api_key,
            base_url=self.base_url,
            model=self.model,
            quiet_mode=True,
            session_db=self.binding.session_db,
            session_id=self.session_id,
            source=self.source,
            user_id=self.user_id,
            skip_context_files=self.skip_context_files,
            skip_memory=self.skip_memory,
            max_iterations=review.REVIEW_MAX_ITERATIONS,
            persist_session=False,
            config=self.config,
            tools=list(review_tools(self.config)),
            cwd=self.cwd,
            is_fork=True,
            model_client=self.client.fork(),
        )
        fork.cap_request_timeout(review.REVIEW_TIMEOUT)
        # Byte-identical system prompt: the provider's prompt cache keeps hitting.
        fork.binding.adopt_prompt_of(self.binding)
        return fork

    def cap_request_timeout(self, seconds: float) -> None:
        """Give each model request at most ``seconds`` (a background review's budget)."""
        self.client.timeout = min(self.client.timeout, seconds)

    def guard_model_calls(self, guard: Callable[[str], None]) -> None:
        """Have ``guard`` checked before each model request and on each answer (a
        background review's store check: it raises to withdraw the review)."""
        self.client.guard = guard

    # -- the few parts a caller names on the agent; the rest it reads from the parts
    # (``binding``, ``window``, ``toolbox``, ``interruption``), and Hermes Agent's own
    # names for them live on the compat subclass (hermes/compat/agent.py) -------------

    @property
    def persist_session(self) -> bool:
        return self._persist_session

    @persist_session.setter
    def persist_session(self, persist: bool) -> None:
        """A caller may stop (or resume) this agent's writes after making it."""
        self._persist_session = persist
        self.binding.writes = persist and not self.is_fork

    @property
    def session_id(self) -> str | None:
        """The segment the agent writes to now (the tip, after a rotation)."""
        return self.binding.session_id

    @session_id.setter
    def session_id(self, session_id: str | None) -> None:
        self.binding.session_id = session_id

    def tool_names(self) -> list[str]:
        return self.toolbox.names()


def _key_from_dotenv() -> str | None:
    """A key saved by `hermes setup` in $HERMES_HOME/.env."""
    saved = dotenv_values()
    return next((saved[name] for name in API_KEY_ENV if saved.get(name)), None)


def _well_formed_part(part: Any, well_formed: Callable[[str], str]) -> Any:
    """A content part with its text made valid UTF-8 (other parts as they are)."""
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return {**part, "text": well_formed(part["text"])}
    return part
