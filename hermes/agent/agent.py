"""AIAgent: one agent bound (or not) to a conversation in the state store.

Constructing an agent makes no network call and writes nothing; the model client,
the tool registry and the system prompt are made when first needed. The turn loop
lives in ``turn.py`` and the compression path in ``compression.py``; this class holds
the state they share and the rules for following a conversation to its tip.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.agent import compression, recontext, transcript
from hermes.agent.errors import AgentError
from hermes.agent.model.client import ModelClient
from hermes.agent.settings import AgentOptions
from hermes.agent.summariser import NOTHING_TO_COMPRESS, Summariser
from hermes.agent.tokens import context_window, estimate_tokens
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
from hermes.state import wellformed
from hermes.state.lease import make_holder
from hermes.state.usage import TokenUsage

if TYPE_CHECKING:
    from hermes.state.store import SegmentStamp, SessionDB
    from hermes.tools.events import EventBus

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
        self.yolo = False  # `hermes --yolo`: dangerous commands run without asking
        # Guidance sent while a turn runs (an API run's steer): the texts not yet taken,
        # read before each model call of the turn.
        self.steering: Callable[[], list[str]] | None = None
        self.user_id = user_id
        self.session_key = session_key
        self.title = title
        # Instructions for this agent's requests only (`hermes chat -s`): sent after the
        # segment's system prompt, never stored with it, so resuming without them works.
        self.ephemeral_system_prompt = ephemeral_system_prompt
        # Sampling parameters for the turn's model calls (an API caller's temperature...).
        self.request_options: dict[str, Any] = {}
        # A caller's own tools (OpenAI function schemas): offered to the model, and a
        # call to one ends the turn with that call for the caller to run.
        self.client_tools: list[dict[str, Any]] = []
        # Keep what an interrupted stream had sent as a partial answer (a client that
        # went away was shown it, and resends it as the conversation so far).
        self.keep_partial_answer = False
        # Who hears the completion events of background processes its tools start (the
        # owner's bus, e.g. a gateway's); None: they are spooled for drain_events.
        self.event_bus: EventBus | None = None
        self.hermes_home = hermes_home()

        self.agent_id = uuid.uuid4().hex
        self.lease_holder = make_holder(self.agent_id)
        compressing = self.settings.compression
        self.lease_ttl = compressing.lease_ttl_seconds
        self.compression_enabled = compressing.enabled
        self.client = ModelClient(
            self.api_key,
            self.base_url,
            self.model,
            timeout=self.settings.model.request_timeout,
            max_retries=self.settings.model.max_retries,
        )
        self.context_compressor = Summariser(
            self.client,
            model=self.model,
            context_length=context_window(self.model, self.settings.model.context_length),
            threshold=compressing.threshold,
            summary_model=compressing.summary_model,
            tail_share=compressing.tail_share,
            cooldown_seconds=compressing.cooldown_seconds,
            max_summary_requests=compressing.max_summary_requests,
        )
        self.last_compression: compression.CompressionOutcome | None = None
        self.system_prompt: str | None = None
        self.conversation_id: str | None = None
        self._conversation_of: dict[str, str] = {}  # segment id -> its conversation
        self._prompt_segment: str | None = None
        self._registry: Any = None
        self._interrupt = threading.Event()
        self.holds_turn_lock = False  # this agent (or its caller) holds the turn lock
        # This turn's context is a caller's own history, not the segment's: compress it
        # in memory only (see caller_history).
        self.context_detached = False
        # (segment id, (last id, row count, undone rows), messages): see load_history.
        self._cache: tuple[str, SegmentStamp, list[dict[str, Any]]] | None = None
        self._stamp: SegmentStamp | None = None
        # (tip id, its stamp) as ensure_session last read them: see take_tip_stamp.
        self._tip_stamp: tuple[str, SegmentStamp] | None = None
        self.user_turns = 0
        self._context_stale = False  # the tip's context lost a summary to an undo
        self.turn_user_uid: str | None = None  # the user message the last turn stored
        self.last_sent_count = 0  # messages in the last request, for token accounting
        self.wire = WireContext()  # the context's encoded messages, kept between calls
        self.tool_wire = ToolWire()  # and the tool schemas, likewise
        self.review_threads: list[threading.Thread] = []

    # -- public API -----------------------------------------------------------------

    def run_conversation(
        self,
        user_message: Any,
        *,
        conversation_history: list[dict[str, Any]] | None = None,
        tool_results: list[dict[str, Any]] | None = None,
        answer_uid: str | None = None,
        system_message: str | None = None,
        persist_user_message: Any = None,
        persist_user_timestamp: float | None = None,
        resume: bool = False,
    ) -> dict[str, Any]:
        """Run one user turn to a final answer; see ``turn.run_turn``.

        ``conversation_history`` is the history the caller holds: set against the store
        (``caller_history``), so passing the stored conversation back stores nothing
        twice. ``tool_results`` (``{"tool_call_id", "content"}`` each) answer the open
        calls of ``client_tools`` the last turn handed back; the turn then goes on from
        them instead of from a new user message. ``answer_uid`` is the ``message_uid``
        the final answer is stored under (a caller that named it ahead).
        ``system_message`` reaches the model after the segment's prompt for this turn,
        never stored; ``persist_user_message`` is stored in place of ``user_message``
        (which is what the model gets), dated ``persist_user_timestamp`` if given.
        ``resume`` answers the stored history as it is, without a new message (a turn a
        crash cut off).
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
            system_message=system_message,
            persist_user_message=persist_user_message,
            user_timestamp=persist_user_timestamp,
            resume=resume,
        )
        return run_turn(self, user_message, given).as_dict()

    def chat(self, message: str) -> str:
        return self.run_conversation(message)["final_response"] or ""

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
        messages: list[dict[str, Any]],
        system_message: str | None,
        *,
        approx_tokens: int | None = None,
        focus_topic: str | None = None,
        whole: bool = False,
    ) -> tuple[list[dict[str, Any]], str | None]:
        return compression.compress_context(
            self,
            messages,
            system_message,
            approx_tokens=approx_tokens,
            focus_topic=focus_topic,
            whole=whole,
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
        return self._registry

    def tool_names(self) -> list[str]:
        if self.tool_names_override is not None:
            return [n for n in self.tool_names_override if self.registry.get(n)]
        from hermes.tools.toolsets import resolve_toolset

        surface = "review" if self.is_fork else self.source
        offered = resolve_toolset(surface, self.config, self.registry.tools())
        return [n for n in offered if self.registry.get(n)]

    def estimate_tokens(self, messages: list[dict[str, Any]]) -> int:
        return estimate_tokens(messages)

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
    ) -> list[dict[str, Any]]:
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

    def _well_formed(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
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

    def remember(self, messages: list[dict[str, Any]]) -> None:
        """Keep the turn's messages as the cache of the segment's history."""
        if self.session_db is None or self.session_id is None or self._stamp is None:
            self._cache = None
            return
        self._cache = (self.session_id, self._stamp, list(messages))

    def persist(self, *messages: dict[str, Any], token_usage: TokenUsage | None = None) -> None:
        """Store messages now (invariant 7); adopt the tip if the write was forwarded."""
        if not self.writes_transcript or not messages:
            return
        db, sid = self.bound()
        landed = db.append_messages(
            sid, [transcript.for_store(m) for m in messages], token_usage=token_usage
        )
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


def _awaited_group(history: list[dict[str, Any]], awaiting: Collection[str]) -> int:
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
