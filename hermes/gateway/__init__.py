"""hermes.gateway: the messaging gateway (HTTP API, Telegram, Discord, Slack).

The runner (``runner.py``) takes messages from platform adapters (the messaging
platforms in ``adapters/``, the HTTP API in ``http/``, which it meets only through the
protocols of ``core.py``), maps each chat to a conversation through the store's routes
(``routing.py``), runs one turn at a time per conversation on its lane (``lanes.py``)
with the conversation's agent in a worker thread (``work.py``), and sends the answers
back split to each platform's limit (``split.py``). See docs/design.md, invariants 4,
8, 11 and 13.
"""

from hermes.gateway.envelopes import IncomingMessage, Origin, WorkResult
from hermes.gateway.errors import GatewayClosed, GatewayError, MissingExtraError, PlatformStartError
from hermes.gateway.routing import SessionKey
from hermes.gateway.runner import GatewayRunner
from hermes.gateway.split import split_message

__all__ = [
    "GatewayClosed",
    "GatewayError",
    "GatewayRunner",
    "IncomingMessage",
    "MissingExtraError",
    "Origin",
    "PlatformStartError",
    "SessionKey",
    "WorkResult",
    "split_message",
]
