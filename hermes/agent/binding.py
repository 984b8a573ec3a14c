"""The conversation binding: which segment of the store an agent speaks in, and its history.

A binding holds the ids (the bound segment, its conversation), the tip stamps and the
history cache, and the rules for following a conversation to its tip: ``ensure_session``
creates the root or follows a bound id, ``locate_conversation`` knows the conversation
from memory when it can, ``follow_tip`` and ``adopt_segment`` move to a newer segment,
``load_history`` / ``remember`` / ``persist`` read and write the transcript. It knows the
store and the segment, nothing of the model or the tools: the segment's system prompt is
built by a function the agent hands in.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes.agent import transcript
from hermes.agent.errors import AgentError
from hermes.state.context import wellformed
from hermes.state.context.message import Message
from hermes.state.usage import TokenUsage

if TYPE_CHECKING:
    from hermes.state.store import SegmentStamp, SessionDB

log = logging.getLogger(__name__)

Emit = Callable[..., None]


@dataclass(frozen=True)
class SegmentOrigin:
    """What a root segment this binding creates is stored with (besides title and model)."""

    source: str = "cli"
    user_id: str | None = None
    session_key: str | None = None
    cwd: str = "."


class ConversationBinding:
    """One agent's place in a conversation of the store (or nowhere, without a store)."""

    def __init__(
        self,
        session_db: SessionDB | None,
        session_id: str | None,
        *,
        origin: SegmentOrigin,
        model: Callable[[], str],
        title: str | None = None,
        writes: bool = True,
        build_prompt: Callable[[], str],
        emit: Emit,
    ) -> None:
        self.session_db = session_db
        self.session_id = session_id
        self.conversation_id: str | None = None
        self.origin = origin
        self._model = model  # the agent's model now: recorded on the segments it answers in
        self.title = title
        self.writes = writes  # False: a fork, or persist_session=False
        self._build_prompt = build_prompt
        self._emit = emit
        self._conversation_of: dict[str, str] = {}  # segment id -> its conversation
        self.system_prompt: str | None = None
        self._prompt_segment: str | None = None
        self.holds_turn_lock = False  # this agent (or its caller) holds the turn lock
        # (segment id, (last id, row count, undone rows), messages): see load_history.
        self._cache: tuple[str, SegmentStamp, list[Message]] | None = None
        self._stamp: SegmentStamp | None = None
        # (tip id, its stamp) as ensure_session last read them: see take_tip_stamp.
        self._tip_stamp: tuple[str, SegmentStamp] | None = None
        self._context_stale = False  # the tip's context lost a summary to an undo
        self.user_turns = 0
        self.turn_user_uid: str | None = None  # the user message the last turn stored

    # -- where the binding points ---------------------------------------------------

    @property
    def model(self) -> str:
        """The model the agent answers with now (its owner may switch it)."""
        return self._model()

    @property
    def writes_transcript(self) -> bool:
        return self.session_db is not None and self.writes

    def bound(self) -> tuple[SessionDB, str]:
        """The store and the segment, for paths that run only when the agent has both
        (``writes_transcript`` after ``ensure_session()``)."""
        if self.session_db is None or self.session_id is None:
            raise AgentError("this agent has no conversation in a store")
        return self.session_db, self.session_id

    def start_new(self, title: str | None) -> None:
        """Point at a conversation that starts with the next message."""
        self.session_id = self.conversation_id = None
        self.title = title or None
        self.user_turns = 0
        self.forget_cache()

    def continue_at(self, tip: str, conversation_id: str, title: str | None) -> None:
        """Point at the stored conversation whose tip is ``tip``."""
        self.session_id, self.conversation_id = tip, conversation_id
        self.title = title
        self.forget_cache()

    def ensure_session(self) -> None:
        """Create the root segment on first use, or follow a bound id to its tip."""
        db = self.session_db
        if db is None:
            return
        self._tip_stamp = None
        found = db.find_tip_stamped(self.session_id) if self.session_id is not None else None
        if found is not None:  # the common case: one read per turn
            self._follow_found(db, *found)
            return
        if not self.writes_transcript:
            return
        origin = self.origin
        # The origin's fields by name: the keywords say which column each one fills.
        self.session_id = db.create_session(
            self.session_id,
            source=origin.source,
            user_id=origin.user_id,
            session_key=origin.session_key,
            title=self.title,
            model=self.model,
            cwd=origin.cwd,
        )
        self.conversation_id = existing(db.get_session(self.session_id), self.session_id)[
            "conversation_id"
        ]
        self._conversation_of[self.session_id] = self.conversation_id

    def _follow_found(self, db: SessionDB, tip: dict[str, Any], stamp: SegmentStamp) -> None:
        self._tip_stamp = (tip["id"], stamp)  # for this turn's load_history
        if tip["id"] != self.session_id:
            log.info("session %s moved on to %s", self.session_id, tip["id"])
            self.session_id = tip["id"]
        self.conversation_id = tip["conversation_id"]
        self._conversation_of[tip["id"]] = tip["conversation_id"]
        if tip["model"] is None and self.model and self.writes_transcript:
            # A gateway, the API or cron made the session before a model answered in
            # it: record the one that does (Hermes Agent's readers bill by it).
            db.set_model(tip["id"], self.model)

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

    # -- the segment's system prompt ------------------------------------------------

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
            prompt = self._build_prompt()
            if stored is not None and self.writes_transcript:
                store, segment = self.bound()
                store.set_system_prompt(segment, prompt)
        self.system_prompt, self._prompt_segment = prompt, sid
        return prompt

    def adopt_prompt_of(self, other: ConversationBinding) -> None:
        """Use another binding's system prompt for its segment (a fork shares it)."""
        if other.system_prompt is not None:
            self.system_prompt = other.system_prompt
            self._prompt_segment = other._prompt_segment

    # -- the history ------------------------------------------------------------------

    @property
    def context_stale(self) -> bool:
        """The loaded context lost a summary to an undo (``recontext.rebuild_if_stale``)."""
        return self._context_stale

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

        The cache carries the segment's ``SegmentStamp`` as this agent knows it; any
        write or undo by another path changes the store's figures and forces a reload.
        ``read`` is (segment id, its stamp) just read by the caller. ``awaiting`` names
        open calls whose results the caller brings now: the trailing group that asked
        for them stays open instead of being closed as dead.
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

    def forget_cache(self) -> None:
        """Reload the history from the store on the next turn."""
        self._cache = None

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
            self._emit("moved", session_id=landed.session_id)

    # -- the turn lock and the user's turns -----------------------------------------

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
