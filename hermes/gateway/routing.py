"""Conversation routing: session keys -> conversations -> their tips.

A *session key* names where messages come from: a chat, a thread in it, and in group
chats (when ``gateway.group_per_user``) one user. It maps, through ``gateway_routes``
in the store, to the tip of one conversation.

The store is the only truth for that mapping, and the router remembers none of it:
several gateways may share one store (processes on one SQLite file, hosts on one
PostgreSQL), and ``/new`` in any of them must redirect the chat's next message in all
of them. So every lookup is one read transaction (``db.gateway.lookup_route``, which
writes only to move a lagging row forward), ``/new`` repoints the row, and after every
turn the route takes the agent's session id by compare-and-set in the store
(``db.gateway.advance_route``): only while the key still serves the turn's
conversation, so a finishing turn never moves a key reset anywhere back. (The turns
themselves take turns across gateways through the store's turn lock: ``turn_gate``.)

The one thing a router keeps is where it last saw each key's route settled: a turn
that ends on that same segment skips the compare-and-set, which could not write
anything (a compression moves routes in its own transaction, a route reset elsewhere
is never moved back, and a lookup catches up a row left behind).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes.gateway.envelopes import Origin

if TYPE_CHECKING:
    from hermes.state.store import SessionDB

log = logging.getLogger(__name__)

MAX_SETTLED = 100_000  # keys whose settled route is remembered


# Origin's first four fields as a value of its own: the key names a conversation (a group
# member only when members are apart), the origin a message.
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
    """Session keys to conversations, read from and written to ``gateway_routes``.

    Every method runs store transactions: call it from a worker thread, not the loop.
    """

    def __init__(self, db: SessionDB) -> None:
        self.db = db
        # Within this process, one new conversation per key; between gateways the
        # store's claim decides.
        self._creating = threading.Lock()
        self._settled: dict[str, tuple[str, str]] = {}  # key -> (conversation, segment)

    # -- lookups --------------------------------------------------------------------

    def current_conversation(self, key: str) -> str | None:
        route = self.db.gateway.lookup_route(key)
        return route.conversation_id if route else None

    def conversation_for(self, key: str, create: CreateSession, *, platform: str) -> str:
        """The key's conversation, made with ``create()`` and routed if it has none."""
        while True:
            conversation = self.current_conversation(key)
            if conversation is not None:
                return conversation
            with self._creating:
                conversation = self.current_conversation(key)
                if conversation is not None:
                    return conversation
                fresh = create()
                if self.db.gateway.claim_route(key, fresh, platform=platform):
                    return fresh
            # Another gateway routed the key first: its conversation wins, ours is empty.
            log.info("%s: another gateway started its conversation first", key)
            self.db.delete_conversation(fresh)

    def tip(self, conversation_id: str) -> str:
        """The live segment of ``conversation_id``."""
        return self.db.resolve_tip(conversation_id)

    # -- changes --------------------------------------------------------------------

    def route_new(self, key: str, session_id: str, *, platform: str) -> str:
        """Route a key nobody else can know yet (a fresh id) to its new conversation."""
        self._settled.pop(key, None)
        self.db.gateway.set_route(key, session_id, platform=platform)
        return session_id

    def reset(self, key: str, create: CreateSession, *, platform: str) -> str:
        """Point ``key`` at a new conversation (``/new``); returns its id."""
        return self.route_new(key, create(), platform=platform)

    def adopt(self, key: str, session_id: str, *, platform: str) -> bool:
        """Route ``key`` to an existing conversation unless it already routes somewhere."""
        return self.db.gateway.claim_route(key, session_id, platform=platform)

    def after_turn(
        self, key: str, conversation_id: str, session_id: str | None, *, platform: str
    ) -> bool:
        """The route takes the agent's session id, unless the key was reset meanwhile
        (by this gateway or another); True if it routes there now (or, for a turn that
        ended on the segment where this router last settled the key, did then)."""
        if session_id is None:
            return False
        settled = (conversation_id, session_id)
        if self._settled.get(key) == settled:
            return True
        if self.db.gateway.advance_route(key, conversation_id, session_id, platform=platform):
            if len(self._settled) > MAX_SETTLED:
                self._settled.clear()
            self._settled[key] = settled
            return True
        self._settled.pop(key, None)
        log.info(
            "route %s now serves conversation %s; not moving it back to %s",
            key,
            self.current_conversation(key),
            conversation_id,
        )
        return False
