"""``run_agent.AIAgent``: hermes's agent taking Hermes Agent 0.19's constructor keywords.

Keywords with a meaning here are renamed (``platform`` is hermes's ``source``,
``gateway_session_key`` its ``session_key``, ``stream_delta_callback`` its
``stream_callback``); the rest of Hermes Agent's keywords have none and are accepted
with one warning line naming them, never a TypeError.
"""

from __future__ import annotations

import logging
from typing import Any

from hermes.agent import AIAgent as HermesAIAgent

log = logging.getLogger("hermes.compat")

RENAMED = {
    "platform": "source",
    "gateway_session_key": "session_key",
    "stream_delta_callback": "stream_callback",
}
_init = HermesAIAgent.__init__.__code__  # not inspect.signature: `inspect` costs ~8 ms
_OWN = frozenset(_init.co_varnames[: _init.co_argcount + _init.co_kwonlyargcount]) - {"self"}


class AIAgent(HermesAIAgent):
    """hermes's AIAgent; accepts the keywords Hermes Agent's callers pass."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        own, ignored = translate_keywords(kwargs)
        if ignored:
            log.warning(
                "AIAgent: ignoring Hermes Agent keywords with no meaning in hermes: %s",
                ", ".join(sorted(ignored)),
            )
        super().__init__(*args, **own)


def translate_keywords(kwargs: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """(hermes keywords, the names dropped) for Hermes Agent constructor keywords."""
    own: dict[str, Any] = {}
    ignored: set[str] = set()
    for name, value in kwargs.items():
        target = RENAMED.get(name, name)
        if target in _OWN:
            if value is not None or target not in own:
                own[target] = value
        else:
            ignored.add(name)
    if own.get("source") is None:
        own.pop("source", None)
    return own, ignored
