"""AIAgent: one agent bound (or not) to a conversation in the state store.

Constructing an agent makes no network call and writes nothing; the model client,
the tool registry and the system prompt are made when first needed. The turn loop
lives in ``turn.py`` and the compression path in ``compression.py``; this class holds
the state they share and the rules for following a conversation to its tip.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.agent import compression, recontext, review, transcript
from hermes.agent.errors import AgentError
from hermes.agent.masking import MaskPolicy, masked_view
from hermes.agent.model.client import ModelClient
from hermes.agent.settings import AgentOptions
from hermes.agent.summariser import NOTHING_TO_COMPRESS, Summariser
from hermes.agent.tokens import context_window, estimate_tokens
from hermes.agent.turn_options import TurnOptions
from hermes.agent.wire import ToolWire, WireContext
from hermes.config import (
    API_KEY_ENV,
    Config,
    api_key_from_env,
    dotenv_values,
    hermes_home,
    load_config,
    register_secrets,
)
from hermes.state.context import wellformed
from hermes.state.context.message import Message
from hermes.state.lease import make_holder
from hermes.state.usage import TokenUsage

if TYPE_CHECKING:
    from hermes.agent.engine_compressor import EngineCompressor
    from hermes.agent.model.protocol import Model
    from hermes.state.store import SegmentStamp, SessionDB
    from hermes.tools.processes.events import EventBus

log = logging.getLogger(__name__)

EventCallback = Callable[[str, dict[str, Any]], None]


class AIAgent:
    """An LLM agent whose transcript lives in a SessionDB segment chain."""

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
        self.quiet_mode = quiet_mode
        self.session_db = session_db
        self.session_id = session_id
        self.source = source
        self.skip_context_files = skip_context_files
        self.skip_memory = skip_memory
        self.max_iterations = self.settings.max_iterations
        self.persist_session = persist_session
        self.is_fork = is_fork
        self.tool_names_override = tools
        self.stream_callback = stream_callback
        self.event_callback = event_callback
        self.cwd = Path(cwd) if cwd else Path.cwd()
        self.interactive = interactive
        self.approve = approve
        self.yolo = yolo  # `hermes --yolo`: dangerous commands run without asking
        self.user_id = user_id
        self.session_key = session_key
        self.title = title
        # Instructions for this agent's requests only (`hermes chat -s`): sent after the
        # segment's system prompt, never stored with it, so resuming without them works.
        self.ephemeral_system_prompt = ephemeral_system_prompt
        # Who hears the completion events of background processes its tools start (the
        # owner's bus, e.g. a gateway's); None: they are spooled for drain_events.
        self.event_bus = event_bus
        self.hermes_home = hermes_home()

        self.agent_id = uuid.uuid4().hex
        self.lease_holder = make_holder(self.agent_id)
        compressing = self.settings.compression
        self.lease_ttl = compressing.lease_ttl_seconds
        self.compression_enabled = compressing.enabled
        # model_client: any ``Model`` (hermes.testing's scripted one in tests); by
        # default a client of the configured endpoint.
        self.client: Model = (
            ModelClient(
                self.api_key,
                self.base_url,
                self.model,
                timeout=self.settings.model.request_timeout,
                max_retries=self.settings.model.max_retries,
            )
            if model_client is None
            else model_client
        )
        # Old tool results reach the model as stubs (None: always whole).
        self.masking = (
            MaskPolicy(keep_tokens=compressing.mask_keep_tokens)
            if compressing.mask_tool_outputs
            else None
        )
        from hermes.plugins import plugins_for  # here: `import run_agent` stays light

        self.plugins = plugins_for(self.config, self.hermes_home)
        self.context_compressor: Summariser | EngineCompressor = Summariser(
            self.client,
            model=self.model,
            context_length=context_window(self.model, self.settings.model.context_length),
            threshold=compressing.threshold,
            summary_model=compressing.summary_model,
            tail_share=compressing.tail_share,
            cooldown_seconds=compressing.cooldown_seconds,
            max_summary_requests=compressing.max_summary_requests,
            offers_recall=session_db is not None,
            sent_as=self.sent_as,
            # With a store, the summary model reads a recallable output as its stub.
            stub_of=(self.masking or MaskPolicy(keep_tokens=0)).stub_for
            if session_db is not None
            else None,
        )
        self._seat_context_engine()
        self.last_compression: compression.CompressionOutcome | None = None
        self.system_prompt: str | None = None
        self.conversation_id: str | None = None
        self._conversation_of: dict[str, str] = {}  # segment id -> its conversation
        self._prompt_segment: str | None = None
        self._registry: Any = None
        self._joins_late_servers = False
        self._interrupt = threading.Event()
        self.holds_turn_lock = False  # this agent (or its caller) holds the turn lock
        # (segment id, (last id, row count, undone rows), messages): see load_history.
        self._cache: tuple[str, SegmentStamp, list[Message]] | None = None
        self._stamp: SegmentStamp | None = None
        # (tip id, its stamp) as ensure_session last read them: see take_tip_stamp.
        self._tip_stamp: tuple[str, SegmentStamp] | None = None
        self.user_turns = 0
        self._context_stale = False  # the tip's context lost a summary to an undo
        self.turn_user_uid: str | None = None  # the user message the last turn stored
        self.last_sent_count = 0  # messages in the last request, for token accounting
        self.wire = WireContext(self.masking)  # the context's encoded messages, kept
        self.tool_wire = ToolWire()  # and the tool schemas, likewise
        self.review_threads: list[threading.Thread] = []

    # -- public API -----------------------------------------------------------------

    def run_conversation(
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
    ) -> dict[str, Any]:
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
        return run_turn(self, user_message, given, options).as_dict()

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
        return self.run_conversation(message, options=options)["final_response"] or ""

    def interrupt(self) -> None:
        """Stop the running turn at the next safe point (a stream stops at once)."""
        self._interrupt.set()
        self.client.interrupt()

    def clear_interrupt(self) -> None:
        """Forget an interrupt that ended the last turn: a new turn starts clean."""
        self._interrupt.clear()
        self.client.clear_interrupt()

    @property
    def interrupt_event(self) -> threading.Event:
        """Set while an interrupt is pending: a running tool command watches it."""
        return self._interrupt

    @property
    def interrupt_requested(self) -> bool:
        return self._interrupt.is_set()

    def wait_for_interrupt(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True if the turn was interrupted meanwhile."""
        return self._interrupt.wait(seconds)

    def _compress_context(
        self,
        messages: list[Message],
        system_message: str | None,
        *,
        approx_tokens: int | None = None,
        focus_topic: str | None = None,
        whole: bool = False,
        detached: bool = False,
    ) -> tuple[list[Message], str | None]:
        """Compress ``messages``; ``detached``: they are a caller's own history, not the
        segment's, so the compression stays in memory (see caller_history)."""
        return compression.compress_context(
            self,
            messages,
            system_message,
            approx_tokens=approx_tokens,
            focus_topic=focus_topic,
            whole=whole,
            detached=detached,
        )

    def compress_now(self, focus_topic: str | None = None) -> compression.CompressionOutcome:
        """Force a compression of the current segment (``/compress``); says what happened."""
        self.clear_interrupt()  # a Ctrl-C that ended the last turn must not stop this
        self.ensure_session()
        from hermes.agent.turn_holding import holding_turn

        with holding_turn(self):
            return self._compress_now(focus_topic)

    def _compress_now(self, focus_topic: str | None) -> compression.CompressionOutcome:
        self.ensure_session()
        history = self.load_history()
        if self._context_stale and self.writes_transcript:
            return recontext.rebuild(self)  # a compression that reads every standing row
        system = self.segment_system_prompt() if self.session_db is not None else None
        before = self.estimate_tokens(history)
        compressed, _ = self._compress_context(
            history, system, approx_tokens=before, focus_topic=focus_topic
        )
        outcome = self.last_compression or compression.CompressionOutcome()
        if compressed is history and (outcome.reason or "").startswith(NOTHING_TO_COMPRESS):
            # Asked for, a compression of a short conversation summarises all of it
            # (but an unanswered last message), as /compact does elsewhere.
            compressed, _ = self._compress_context(
                history, system, approx_tokens=before, focus_topic=focus_topic, whole=True
            )
            outcome = self.last_compression or compression.CompressionOutcome()
        outcome.tokens_before = before
        if compressed is not history and not outcome.rotated:
            self._cache = None
        return outcome

    def undo(self, turns: int = 1) -> list[dict[str, Any]]:
        """Mark the last ``turns`` user turns undone (durably); returns what was undone.

        When a summary the context holds read them, the context is made again without
        them in the same step (``recontext``); if that fails, ``ContextNotRebuiltError``
        says why and nothing was undone."""
        self.ensure_session()
        if self.session_db is None or self.session_id is None:
            return []
        from hermes.agent.turn_holding import holding_turn

        with holding_turn(self):
            self.ensure_session()
            return self._undo(turns)

    def _undo(self, turns: int) -> list[dict[str, Any]]:
        db, tip = self.bound()
        # The logical conversation, so a turn compressed into the child is found too.
        rows = [m for m in db.get_conversation_messages(tip) if not m["undone"]]
        starts = [i for i, r in enumerate(rows) if r["role"] == "user"]
        if not starts:
            return []
        undone = rows[starts[-min(turns, len(starts))] :]
        ids = [r["id"] for r in undone]
        review.withdraw(self.conversation_id)  # a running review may hold these rows
        if db.undo_reaches_summary(tip, ids):
            recontext.rebuild(self, undo_ids=ids)
        else:
            db.mark_undone(tip, ids)
        self._cache = None
        return undone

    @property
    def context_stale(self) -> bool:
        """The loaded context lost a summary to an undo (see ``rebuild_if_stale``)."""
        return self._context_stale

    def rebuild_if_stale(self) -> None:
        """Make the context again if an undo elsewhere retired a summary it held (so a
        model never sees it, nor a context missing what it summarised); raises
        ``ContextNotRebuiltError`` when that fails. Call with the turn lock held."""
        if self._context_stale and self.writes_transcript:
            recontext.rebuild(self)

    def set_model(self, model: str) -> None:
        """Switch the model for the next calls; recorded on the segment."""
        self.model = model
        self.client.model = model
        self.context_compressor.model = model
        if self.writes_transcript and self.session_id:
            self.bound()[0].set_model(self.session_id, model)

    def adopt_prompt_of(self, other: AIAgent) -> None:
        """Use another agent's system prompt for its segment (a fork shares it)."""
        if other.system_prompt is not None:
            self.system_prompt = other.system_prompt
            self._prompt_segment = other._prompt_segment

    def forget_cache(self) -> None:
        """Reload the history from the store on the next turn."""
        self._cache = None

    # -- what other modules may change, each by its name -----------------------------

    def start_new_conversation(self, title: str | None = None) -> None:
        """Point the agent at a conversation that starts with its next message."""
        self.session_id = self.conversation_id = None
        self.title = title or None
        self.last_compression = None
        self.user_turns = 0
        self.forget_prompt_size()  # that figure was the old context's
        self.forget_cache()

    def continue_conversation(self, tip: str, conversation_id: str, title: str | None) -> None:
        """Point the agent at the stored conversation whose tip is ``tip``."""
        self.session_id, self.conversation_id = tip, conversation_id
        self.title = title
        self.last_compression = None
        self.forget_prompt_size()
        self.forget_cache()

    def set_title(self, title: str) -> None:
        """The title a conversation this agent creates gets (the store has the rest)."""
        self.title = title

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

    def cap_request_timeout(self, seconds: float) -> None:
        """Give each model request at most ``seconds`` (a background review's budget)."""
        self.client.timeout = min(self.client.timeout, seconds)

    def guard_model_calls(self, guard: Callable[[str], None]) -> None:
        """Have ``guard`` checked before each model request and on each answer (a
        background review's store check: it raises to withdraw the review)."""
        self.client.guard = guard

    @contextlib.contextmanager
    def turn_lock_held(self) -> Iterator[None]:
        """Mark the conversation's turn lock as held (by this agent or its caller) for
        the body: stored repairs of dead turns are made only then."""
        before, self.holds_turn_lock = self.holds_turn_lock, True
        try:
            yield
        finally:
            self.holds_turn_lock = before

    def forget_turn_user_message(self) -> None:
        """No turn has stored a user message yet (one is about to run, or a command)."""
        self.turn_user_uid = None

    def count_user_message(self, message_uid: str) -> None:
        """A turn stored the user's message ``message_uid`` (reviews count them)."""
        self.user_turns += 1
        self.turn_user_uid = message_uid

    def note_compression(self, outcome: compression.CompressionOutcome) -> None:
        """What the last compression did (``/compress`` and the turn report it)."""
        self.last_compression = outcome

    def record_prompt_size(self, prompt_tokens: int, sent_messages: int) -> None:
        """The provider's prompt size for a request of the context's first
        ``sent_messages`` messages: the next threshold check starts from it."""
        self.last_sent_count = sent_messages
        if prompt_tokens:
            self.context_compressor.last_prompt_tokens = prompt_tokens

    def forget_prompt_size(self) -> None:
        """The provider's last figure was for another context (compressed, or left)."""
        self.context_compressor.last_prompt_tokens = 0

    def learn_context_window(self, window: int) -> None:
        """Believe a provider that says the model's window is smaller than our table."""
        if 0 < window < self.context_compressor.context_length:
            self.context_compressor.context_length = window

    # -- state shared with turn.py and compression.py -------------------------------

    @property
    def writes_transcript(self) -> bool:
        return self.session_db is not None and self.persist_session and not self.is_fork

    def bound(self) -> tuple[SessionDB, str]:
        """The store and the segment, for paths that run only when the agent has both
        (``writes_transcript`` after ``ensure_session()``)."""
        if self.session_db is None or self.session_id is None:
            raise AgentError("this agent has no conversation in a store")
        return self.session_db, self.session_id

    @property
    def registry(self) -> Any:
        if self._registry is None:
            from hermes.tools.toolsets import default_registry

            self._registry = default_registry(self.config, self.hermes_home)
            self._joins_late_servers = True
            self._add_plugin_tools(self._registry)
        return self._registry

    def _add_plugin_tools(self, registry: Any) -> None:
        """The plugins' tools and the context engine's, after the built-in ones."""
        from hermes.agent.engine_compressor import EngineCompressor, engine_tools

        compressor = self.context_compressor
        extra = self.plugins.tools() + (
            engine_tools(compressor.engine) if isinstance(compressor, EngineCompressor) else []
        )
        for tool in extra:
            if registry.get(tool.name) is None:  # a built-in tool is never replaced
                registry.register(tool)
            else:
                log.warning("a plugin's tool %s has a built-in tool's name; not offered", tool.name)

    def _seat_context_engine(self) -> None:
        """``context.engine`` names a plugin's engine: it compresses in the summariser's
        place (hermes/agent/engine_compressor.py); an unknown name keeps the summariser."""
        name = self.config.get("context.engine")
        if name == "compressor":
            return
        from hermes.agent.engine_compressor import EngineCompressor, chosen_engine

        engine = chosen_engine(name, self.plugins.engine(name))
        if engine is not None:
            self.context_compressor = EngineCompressor(
                engine,
                model=self.model,
                context_length=self.context_compressor.context_length,
                cooldown_seconds=self.settings.compression.cooldown_seconds,
            )

    def tool_names(self) -> list[str]:
        if self.tool_names_override is not None:
            return [n for n in self.tool_names_override if self.registry.get(n)]
        from hermes.tools.toolsets import add_late_tools, resolve_toolset

        if self._joins_late_servers:  # an MCP server down at the start joins once it is up
            add_late_tools(self.registry, self.config, self.hermes_home)

        surface = "review" if self.is_fork else self.source
        offered = resolve_toolset(surface, self.config, self.registry.tools())
        # recall reads the store; without one there is nothing to get back.
        unusable = set() if self.session_db is not None else {"recall"}
        return [n for n in offered if self.registry.get(n) and n not in unusable]

    def estimate_tokens(self, messages: list[Message]) -> int:
        """The size of ``messages`` as the model is sent them (masked results as stubs)."""
        return estimate_tokens(self.sent_as(messages))

    def sent_as(self, messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """``messages`` as the model is sent them: masked tool results as their stubs."""
        return masked_view(messages, self.masking)

    def emit(self, kind: str, **data: Any) -> None:
        if self.event_callback is not None:
            try:
                self.event_callback(kind, data)
            except Exception:  # a surface's display bug must not break the turn
                log.exception("event callback failed for %s", kind)

    def ensure_session(self) -> None:
        """Create the root segment on first use, or follow a bound id to its tip."""
        db = self.session_db
        if db is None:
            return
        self._tip_stamp = None
        found = db.find_tip_stamped(self.session_id) if self.session_id is not None else None
        if found is not None:  # the common case: one read per turn
            tip, stamp = found
            self._tip_stamp = (tip["id"], stamp)  # for this turn's load_history
            if tip["id"] != self.session_id:
                log.info("session %s moved on to %s", self.session_id, tip["id"])
                self.session_id = tip["id"]
            self.conversation_id = tip["conversation_id"]
            self._conversation_of[tip["id"]] = self.conversation_id
            if tip["model"] is None and self.model and self.writes_transcript:
                # A gateway, the API or cron made the session before a model answered in
                # it: record the one that does (Hermes Agent's readers bill by it).
                db.set_model(tip["id"], self.model)
            return
        if not self.writes_transcript:
            return
        self.session_id = db.create_session(
            self.session_id,
            source=self.source,
            user_id=self.user_id,
            session_key=self.session_key,
            title=self.title,
            model=self.model,
            cwd=str(self.cwd),
        )
        self.conversation_id = existing(db.get_session(self.session_id), self.session_id)[
            "conversation_id"
        ]
        self._conversation_of[self.session_id] = self.conversation_id

    def locate_conversation(self) -> None:
        """Know the bound segment's conversation (whose turn lock a turn takes): from
        memory if this segment was seen before, since a segment never changes
        conversation; else ``ensure_session()``, one read (or the root's creation)."""
        known = self._conversation_of.get(self.session_id) if self.session_id else None
        if known is None or known != self.conversation_id:
            self.ensure_session()

    def follow_tip(self) -> str | None:
        """Move to the conversation's live segment if another path rotated it."""
        if self.session_db is None or self.session_id is None:
            return self.session_id
        tip = self.session_db.resolve_tip(self.session_id)
        if tip != self.session_id:
            log.info("session %s moved on to %s", self.session_id, tip)
            self.session_id = tip
        return tip

    def adopt_segment(self, child_id: str, *, rotated_from: str | None = None) -> str | None:
        """Become the new segment after our rotation; returns its new system prompt."""
        self.session_id = child_id
        self._cache = self._stamp = None
        if self.system_prompt is None:
            return None
        return self.segment_system_prompt(rebuild=True)

    def segment_system_prompt(self, *, rebuild: bool = False) -> str:
        """The segment's system prompt: stored with it, built once when it starts."""
        db, sid = self.session_db, self.session_id
        if not rebuild and self.system_prompt is not None and self._prompt_segment == sid:
            return self.system_prompt
        stored = db.get_session(sid) if (db is not None and sid) else None
        prompt: str
        if stored and stored.get("system_prompt") and not rebuild:
            prompt = stored["system_prompt"]
        else:
            from hermes.agent.prompt import build_system_prompt
            from hermes.tools.memory import memory_home

            prompt = build_system_prompt(
                hermes_home=self.hermes_home,
                memory_dir=memory_home(
                    self.hermes_home,
                    self.source,
                    self.user_id,
                    bool(self.config.get("memory.shared")),
                ),
                cwd=self.cwd,
                tool_names=self.tool_names(),
                skip_memory=self.skip_memory,
                skip_context_files=self.skip_context_files,
                config=self.config,
                source=self.source,
                user_id=self.user_id,
            )
            if stored is not None and self.writes_transcript:
                store, segment = self.bound()
                store.set_system_prompt(segment, prompt)
        self.system_prompt, self._prompt_segment = prompt, sid
        return prompt

    def take_tip_stamp(self) -> tuple[str, SegmentStamp] | None:
        """The (tip id, stamp) ``ensure_session`` read, once: a turn hands it to
        ``load_history`` right after, under the turn lock, instead of reading it again."""
        found, self._tip_stamp = self._tip_stamp, None
        return found

    def load_history(
        self,
        read: tuple[str, SegmentStamp] | None = None,
        *,
        awaiting: Collection[str] = (),
    ) -> list[Message]:
        """The tip's messages, from a cache that is valid while nobody else wrote.

        The cache carries the segment's ``SegmentStamp`` as this agent knows it; any write or undo by another path changes the store's figures and
        forces a reload. ``read`` is (segment id, its stamp) just read by the caller.
        ``awaiting`` names open calls whose results the caller brings now: the trailing
        group that asked for them stays open instead of being closed as dead.
        """
        db, sid = self.session_db, self.session_id
        if db is None or sid is None:
            return []
        stamp = read[1] if read is not None and read[0] == sid else db.segment_stamp(sid)
        if self._cache and self._cache[0] == sid and self._cache[1] == stamp:
            return list(self._cache[2])
        # The stamp is read before the rows: a write landing in between makes it older
        # than what was read, so the next turn reloads rather than trusting a stale list.
        rows = db.get_messages(sid, include_undone=True)
        self._stamp = stamp
        self._context_stale = any(r["undone"] and r["compacted"] for r in rows) and (
            db.context_needs_rebuild(sid)
        )
        history = transcript.from_store(r for r in rows if not r["undone"])
        cut = _awaited_group(history, awaiting)
        history = self._well_formed(history[:cut]) + history[cut:]
        # A repair may have stored synthetic answers (new stamp) or followed the tip.
        sid, stamp_now = self.session_id, self._stamp
        self._cache = (sid, stamp_now, history) if sid and stamp_now else None
        return list(history)

    def _well_formed(self, history: list[Message]) -> list[Message]:
        """The history as a provider accepts it (invariant 15). A call nobody answered
        belongs to a dead turn when this agent holds the turn lock: its "interrupted"
        result is stored (once: its uid comes from the call). Otherwise the repair is
        made in memory only."""
        fixed = wellformed.repair(history)
        if not fixed.changed:
            return history
        log.info("repaired the context of %s: %s", self.session_id, fixed.notes or "")
        if fixed.synthetic and self.writes_transcript and self.holds_turn_lock:
            self.persist(*fixed.synthetic)
        return fixed.messages

    def remember(self, messages: list[Message]) -> None:
        """Keep the turn's messages as the cache of the segment's history."""
        if self.session_db is None or self.session_id is None or self._stamp is None:
            self._cache = None
            return
        self._cache = (self.session_id, self._stamp, list(messages))

    def persist(self, *messages: Message, token_usage: TokenUsage | None = None) -> None:
        """Store messages now (invariant 7); adopt the tip if the write was forwarded."""
        if not self.writes_transcript or not messages:
            return
        db, sid = self.bound()
        landed = db.append_messages(
            sid, [transcript.for_store(m) for m in messages], token_usage=token_usage
        )
        for message, row_id in zip(messages, landed.message_ids, strict=True):
            if row_id is not None:
                message.setdefault("stored_id", row_id)  # the row a masked result names
        if self._stamp is not None and landed.session_id == self.session_id and landed.stored:
            newest = max(i for i in landed.message_ids if i is not None)
            self._stamp = self._stamp._replace(
                newest_id=max(self._stamp.newest_id, newest),
                rows=self._stamp.rows + landed.stored,
            )
        if landed.session_id != self.session_id:
            self._stamp = None
            log.info(
                "write to %s landed in the tip %s; adopting it", self.session_id, landed.session_id
            )
            self.session_id = landed.session_id
            self._cache = None
            self.emit("moved", session_id=landed.session_id)


def _awaited_group(history: list[Message], awaiting: Collection[str]) -> int:
    """Where the trailing tool-call group starts when it asks for an ``awaiting`` call
    (its results are arriving, so it is not a dead turn's); else the end."""
    index = len(history)
    while index > 0 and history[index - 1].get("role") == "tool":
        index -= 1
    if awaiting and index > 0 and set(wellformed.call_ids(history[index - 1])) & set(awaiting):
        return index - 1
    return len(history)


def existing(row: dict[str, Any] | None, session_id: str) -> dict[str, Any]:
    """A segment's row that must be there (the agent created or followed it)."""
    if row is None:
        raise AgentError(f"session {session_id} is not in the store")
    return row


def _key_from_dotenv() -> str | None:
    """A key saved by `hermes setup` in $HERMES_HOME/.env."""
    saved = dotenv_values()
    return next((saved[name] for name in API_KEY_ENV if saved.get(name)), None)


def _well_formed_part(part: Any, well_formed: Callable[[str], str]) -> Any:
    """A content part with its text made valid UTF-8 (other parts as they are)."""
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return {**part, "text": well_formed(part["text"])}
    return part
