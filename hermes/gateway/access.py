"""Who may talk to the bot: per-platform allow-lists of user ids (invariant 13).

Someone not on the list gets one polite refusal (once per gateway run, so a stranger
cannot make the bot spam a group) and nothing else happens: no conversation, no
store write, no model call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from hermes.gateway.envelopes import Origin
from hermes.gateway.settings import PlatformSettings

log = logging.getLogger(__name__)

REFUSAL = (
    "Sorry, I only talk with people on my allow-list. If you think you should be on it, "
    "ask the person who runs this bot to add your user id: {user_id}"
)


class AccessControl:
    def __init__(self, platforms: Mapping[str, PlatformSettings]) -> None:
        self.platforms = platforms
        self._refused: set[tuple[str, str | None]] = set()
        self._lock = threading.Lock()

    def allows(self, origin: Origin) -> bool:
        settings = self.platforms.get(origin.platform)
        return settings is not None and settings.allows(origin.user_id)

    def is_admin(self, origin: Origin) -> bool:
        """Whether the sender may run the operator's commands (``/restart``)."""
        settings = self.platforms.get(origin.platform)
        return settings is not None and self.allows(origin) and settings.is_admin(origin.user_id)

    def refusal(self, origin: Origin) -> str | None:
        """The refusal to send, the first time this user is turned away; else None."""
        who = (origin.platform, origin.user_id)
        with self._lock:
            first = who not in self._refused
            self._refused.add(who)
        log.info(
            "%s: refused a message from user %s, who is not on the allow-list%s",
            origin.platform,
            origin.user_id,
            "" if first else " (again; not answered)",
        )
        return REFUSAL.format(user_id=origin.user_id) if first else None
