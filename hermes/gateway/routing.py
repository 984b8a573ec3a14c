"""Conversation routing: session keys -> conversations -> their tips.

A *session key* names where messages come from: a chat, a thread in it, and in group
chats (when ``gateway.group_per_user``) one user. It maps, through ``gateway_routes``
in the store, to the tip of one conversation. Every lookup resolves the route to the
tip (``SessionDB.get_route`` moves the row forward when the conversation rotated), and
after every turn the route takes the agent's session id (``Router.after_turn``) unless
the key was reset to another conversation meanwhile (``/new``): that check and the
write happen under one lock, so a finishing turn can never move a reset key back.

The router keeps which conversation each key routes to in memory; the conversation of
a key changes only through this router, while its tip moves on in the store.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from hermes.gateway.messages import Origin

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionKey:
    """``platform:chat[:t<thread>][:u<user>]``: one conversation's address on a platform."""

    platform: str
    chat_id: str
    thread_id: str | None = None
    user_id: str | None = None

    def __str__(self) -> str:
        key = f"{self.platform}:{self.chat_id}"
        if self.thread_id:
            key += f":t{self.thread_id}"
        if self.user_id:
            key += f":u{self.user_id}"
        return key

    @classmethod
    def for_origin(cls, origin: Origin, *, group_per_user: bool) -> SessionKey:
        per_user = group_per_user and origin.is_group and origin.user_id is not None
        return cls(
            platform=origin.platform,
            chat_id=str(origin.chat_id),
            thread_id=str(origin.thread_id) if origin.thread_id else None,
            user_id=str(origin.user_id) if per_user else None,
        )

    @classmethod
    def parse(cls, key: str) -> SessionKey:
        platform, chat_id, *rest = key.split(":")
        thread = next((part[1:] for part in rest if part.startswith("t")), None)
        user = next((part[1:] for part in rest if part.startswith("u")), None)
        return cls(platform=platform, chat_id=chat_id, thread_id=thread, user_id=user)

    def origin(self) -> Origin:
        """Where to send things for this key when no message is being answered."""
        return Origin(platform=self.platform, chat_id=self.chat_id, thread_id=self.thread_id)


CreateSession = Callable[[], str]


class Router:
    """Session keys to conversations, backed by ``gateway_routes`` in the store."""

    def __init__(self, db) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._conversation: dict[str, str] = {}  # key -> conversation id
        self._written: dict[str, str] = {}  # key -> the session id last written

    # -- lookups (any thread; the store calls block) --------------------------------

    def cached(self, key: str) -> str | None:
        """The key's conversation if known in memory (no store access: safe on the loop)."""
        return self._conversation.get(key)

    def conversation_for(self, key: str, create: CreateSession, *, platform: str) -> str:
        """The key's conversation, made with ``create()`` and routed if it has none."""
        with self._lock:
            conversation = self._conversation.get(key) or self._load(key)
            if conversation is None:
                conversation = self._route_new(key, create(), platform)
            return conversation

    def route_new(self, key: str, session_id: str, *, platform: str) -> str:
        """Route a key nobody else can know yet (a fresh id) to its new conversation."""
        return self._route_new(key, session_id, platform)

    def current_conversation(self, key: str) -> str | None:
        known = self._conversation.get(key)
        if known is not None:
            return known
        with self._lock:
            return self._conversation.get(key) or self._load(key)

    def tip(self, key: str, conversation_id: str) -> str:
        """The live segment of ``conversation_id``; moves ``key``'s row if it lags behind."""
        tip = self.db.resolve_tip(conversation_id)
        if self.current_conversation(key) == conversation_id and self._written.get(key) != tip:
            with self._lock:
                if self._conversation.get(key) == conversation_id:
                    self._written[key] = self.db.get_route(key) or tip  # moves the row to the tip
        return tip

    # -- changes --------------------------------------------------------------------

    def reset(self, key: str, create: CreateSession, *, platform: str) -> str:
        """Point ``key`` at a new conversation (``/new``); returns its id."""
        with self._lock:
            return self._route_new(key, create(), platform)

    def adopt(self, key: str, session_id: str, conversation_id: str, *, platform: str) -> None:
        """Route ``key`` to an existing conversation unless it already routes somewhere."""
        with self._lock:
            if (self._conversation.get(key) or self._load(key)) is None:
                self.db.set_route(key, session_id, platform=platform)
                self._conversation[key] = conversation_id
                self._written[key] = session_id

    def after_turn(
        self, key: str, conversation_id: str, session_id: str | None, *, platform: str
    ) -> None:
        """The route takes the agent's session id, unless the key was reset meanwhile."""
        if session_id is None:
            return
        if self._conversation.get(key) == conversation_id and self._written.get(key) == session_id:
            return  # already there (the common case: no rotation in this turn)
        with self._lock:
            current = self._conversation.get(key) or self._load(key)
            if current not in (None, conversation_id):
                log.info(
                    "route %s now serves conversation %s; not moving it back to %s",
                    key, current, conversation_id,
                )  # fmt: skip
                return
            if self._written.get(key) != session_id:
                self.db.set_route(key, session_id, platform=platform)
                self._written[key] = session_id
            self._conversation[key] = conversation_id

    # -- helpers (hold the lock) ----------------------------------------------------

    def _load(self, key: str) -> str | None:
        tip = self.db.get_route(key)
        if tip is None:
            return None
        segment = self.db.get_session(tip)
        if segment is None:
            return None
        self._conversation[key] = segment["conversation_id"]
        self._written[key] = tip
        return segment["conversation_id"]

    def _route_new(self, key: str, session_id: str, platform: str) -> str:
        self.db.set_route(key, session_id, platform=platform)
        self._conversation[key] = session_id
        self._written[key] = session_id
        return session_id
