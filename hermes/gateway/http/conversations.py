"""Which conversation an HTTP API request speaks in.

``X-Hermes-Session-Id`` names one (``ApiConversations.open``): no id starts a new
conversation, an unknown id starts one with that id, and any segment of an existing
conversation selects the conversation its key routes to now. A request without it is
found by its history (``stateless``, ``ending_at``) through the store's history
digests, so every gateway on the store agrees; a ``/queue TEXT`` the UI sent is read as
the TEXT the store holds. Only the caller's own conversations
count (``caller``). A chat UI's side request counts its tokens on the conversation its
pasted history is the whole of (``count_side_request``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from hermes.gateway import commands
from hermes.gateway.core import ApiHost
from hermes.gateway.envelopes import Origin, WorkResult
from hermes.gateway.errors import NotYourConversation
from hermes.gateway.http import caller, side_requests
from hermes.gateway.settings import API_PRINCIPALS, API_SERVER, PLATFORMS, api_hidden_sources
from hermes.state.errors import StateError
from hermes.state.history import HistoryMatch, normalised
from hermes.state.segments import new_session_id

log = logging.getLogger(__name__)

REMEMBERED = 100_000  # (principal, id) -> conversation entries kept before starting afresh


def as_stored(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A chat UI's history as the store holds it: each ``/queue TEXT`` (``/q``) it sent was
    stored as TEXT, so the UI's next request continues the conversation, not a branch."""
    stored = []
    for message in history:
        text = message.get("content") if message.get("role") == "user" else None
        command = commands.parse(text) if isinstance(text, str) else None
        if command is not None and command.name == "queue" and command.argument:
            message = {**message, "content": command.argument}
        stored.append(message)
    return stored


@dataclass(frozen=True)
class StatelessConversation:
    """Where a request without a session id goes (``ApiConversations.stateless``)."""

    key: str
    conversation_id: str
    seed: list[dict[str, Any]] | None = None  # history to store first (a new conversation)
    branched_from: str | None = None  # the conversation whose history this one diverged from


class ApiConversations:
    """The conversations of one gateway's HTTP API, on its core's store and routes."""

    def __init__(self, host: ApiHost) -> None:
        self.host = host
        self.db = host.db
        self.router = host.router
        self.hidden = api_hidden_sources(host.config)
        # (principal, id named) -> (session key, conversation)
        self._remembered: dict[tuple[str | None, str], tuple[str, str]] = {}

    async def open(self, session_id: str | None, *, resume: bool = False) -> tuple[str, str, bool]:
        """(session key, conversation id, created) for a request's X-Hermes-Session-Id.

        No id starts a new conversation; an unknown id starts one with that id (for an
        API principal it is refused as another principal's id is: NotYourConversation); any
        segment of an existing conversation (an old one included) selects the
        conversation its key routes to now (after ``/new``, the new one), or with
        ``resume`` that segment's own conversation, which the key then routes to again.
        """
        # Remembered per principal: another principal's id must be looked at again.
        remembered = (caller.principal(), session_id)
        if not resume and session_id is not None and remembered in self._remembered:
            key, conversation = self._remembered[remembered]
            return key, conversation, False
        key, conversation, created = await asyncio.to_thread(self._open, session_id, resume)
        if len(self._remembered) > REMEMBERED:
            self._remembered.clear()
        self._remembered[(caller.principal(), session_id or conversation)] = (key, conversation)
        return key, conversation, created

    async def stateless(self, history: list[dict[str, Any]]) -> StatelessConversation:
        """The conversation a request without X-Hermes-Session-Id continues, found by its
        ``history`` (the user/assistant messages before its new one) in the store, so
        every gateway on it agrees.

        The whole history stored and ending at the conversation's latest message: that
        conversation (its key's route decides, as for a stale id). A stored prefix only,
        or a conversation that went on after it (an edited or regenerated message): a
        branch of it at the last message in common, holding the rest of the history.
        Nothing stored: a new conversation seeded with the history. Only the caller's
        own conversations count (its principal's; the operator's of its
        X-Hermes-Session-Key, or none for callers without).
        """
        history = as_stored(history)
        match = await asyncio.to_thread(self._find_history, history)
        if match is not None and await asyncio.to_thread(self._kept_less, history, match):
            match = await asyncio.to_thread(self._find_history, history)
        if match is not None and match.latest and match.matched == len(history):
            key, conversation, _ = await self.open(match.conversation_id)
            return StatelessConversation(key, conversation)
        return await asyncio.to_thread(self._start_stateless, history, match)

    async def ending_at(self, history: list[dict[str, Any]]) -> StatelessConversation | None:
        """The conversation whose newest message ends ``history`` (a request without
        X-Hermes-Session-Id): the one whose open tool calls it answers, or whose running
        turn a ``/steer`` sent behind the pending question is for; None when none does.
        Nothing is created."""
        history = as_stored(history)
        match = await asyncio.to_thread(self._find_history, history) if history else None
        if match is None or not match.latest or match.matched != len(history):
            return None
        key, conversation, _ = await self.open(match.conversation_id)
        return StatelessConversation(key, conversation)

    async def new(self, session_id: str | None) -> str:
        """``/new`` over the API: the key of ``session_id`` routes to a new conversation."""
        if session_id is None:
            return (await self.open(None))[1]
        key, conversation, _ = await self.open(session_id)

        def create() -> str:
            # An API principal's new conversation is that principal's, as the old one was.
            root = self.db.get_session(conversation) or {}
            if root.get("source") == API_PRINCIPALS:
                return self.db.create_session(
                    source=API_PRINCIPALS, session_key=key, user_id=root.get("user_id")
                )
            return self.db.create_session(source=API_SERVER, session_key=key)

        origin = Origin(platform=API_SERVER, chat_id=conversation, user_id=caller.user_id())
        fresh = await self.host.start_over(key, origin, create)
        self._remembered.pop((caller.principal(), session_id), None)
        return fresh

    def count_side_request(self, prompt: str, result: WorkResult) -> None:
        """Add a side request's tokens to the conversation whose whole history its
        prompt holds, if there is one of the same caller (blocking: call from a thread
        that carries the request's context)."""
        history = side_requests.pasted_history(prompt)
        match = self._find_history(history) if history else None
        if match is None or match.matched != len(history):
            log.info("a side request's tokens belong to no stored conversation")
            return
        tip = self.db.resolve_tip(match.conversation_id)
        self.db.add_token_usage(tip, result.prompt_tokens, result.completion_tokens)

    # -- in a worker thread ---------------------------------------------------------------

    def _find_history(self, history: list[dict[str, Any]]) -> HistoryMatch | None:
        """``db.find_history`` among the current caller's own conversations."""
        return self.db.find_history(history, user_id=caller.user_id(), source=caller.source())

    def _kept_less(self, history: list[dict[str, Any]], match: HistoryMatch) -> bool:
        """A history that ends with the start of the conversation's stopped answer (the
        client showed less than it was sent): the stored answer is trimmed to it, so
        the history continues the conversation instead of branching from it."""
        last = history[-1] if history else {}
        if match.matched != len(history) - 1 or last.get("role") != "assistant":
            return False
        if last.get("tool_calls"):
            return False
        kept = normalised(last.get("content"))
        return self.db.trim_stopped_answer(
            match.conversation_id, after_message_id=match.message_id, kept=kept
        )

    def _start_stateless(
        self, history: list[dict[str, Any]], match: HistoryMatch | None
    ) -> StatelessConversation:
        if match is None:
            key, conversation, _ = self._open(None)
            return StatelessConversation(key, conversation, seed=history or None)
        branch = self.db.branch_session(
            match.conversation_id, at_message_id=match.message_id, then=history[match.matched :]
        )
        log.info("a stateless history diverged from %s: branched %s", match.conversation_id, branch)
        key, conversation, _ = self._open(branch)
        return StatelessConversation(key, conversation, branched_from=match.conversation_id)

    def _open(self, session_id: str | None, resume: bool = False) -> tuple[str, str, bool]:
        if session_id is not None:
            segment = self.db.get_session(session_id)
            if segment is not None:
                return self._existing(session_id, segment, resume)
            if caller.principal() is not None:
                # A principal's conversations are named by hermes: an unknown id is
                # refused as another principal's is, so neither tells that it exists.
                raise NotYourConversation(session_id, API_PRINCIPALS, caller.principal())
        # A principal's conversations are keyed ``api:<id>``: their turns run as that user.
        source, user = caller.source(), caller.user_id()
        if session_id is None:  # a fresh id: no other request can race for its key
            fresh = new_session_id()
            key = f"{source}:{fresh}"
            self.db.create_session(fresh, source=source, session_key=key, user_id=user)
            return key, self.router.route_new(key, fresh, platform=API_SERVER), True
        key = f"{source}:{session_id}"
        try:
            self.db.create_session(session_id, source=source, session_key=key, user_id=user)
        except StateError:
            if self.db.get_session(session_id) is None:
                raise
            # Another gateway on the store started this id at the same moment: the id
            # names one conversation, so this request joins it.
            key, conversation, _ = self._open(session_id)
            return key, conversation, False
        self.router.adopt(key, session_id, platform=API_SERVER)
        return key, session_id, True

    def _existing(
        self, session_id: str, segment: dict[str, Any], resume: bool
    ) -> tuple[str, str, bool]:
        """The conversation of a stored ``segment`` the request named."""
        if not caller.may_see(segment, self.hidden):
            raise NotYourConversation(session_id, segment["source"], caller.principal())
        conversation = segment["conversation_id"]
        key = segment.get("session_key") or ""
        if key.split(":", 1)[0] not in (*PLATFORMS, API_PRINCIPALS):
            key = f"{API_SERVER}:{conversation}"  # e.g. a conversation of the CLI
        tip = self.db.resolve_tip(conversation)
        if resume:
            self.router.route_new(key, tip, platform=API_SERVER)
        elif not self.router.adopt(key, tip, platform=API_SERVER):
            # The key was routed on (``/new``): a stale header follows it.
            conversation = self.router.current_conversation(key) or conversation
        return key, conversation, False
