"""The state store: segments, messages, the compression lease, rotation, search, export.

``SessionDB`` (``store``) is the face every caller uses; the gateway's routes, queue,
heartbeats and turn locks are ``db.gateway`` (``gateway_store.GatewayStore``).

It imports nothing of the agent, tools, gateway or CLI. ``SessionDB`` (and the store's
modules behind it) is imported on first use, so the agent's own imports from this
package (its errors, the well-formed rules, the lease holder) stay light and
``import run_agent`` stays fast for a caller that never opens a store.
"""

from typing import TYPE_CHECKING, Any

from hermes.state.errors import (
    CorruptStoreError,
    InvalidContextError,
    LeaseNotHeldError,
    MessageNotFoundError,
    NotTipError,
    ReadOnlyStoreError,
    SegmentEndedError,
    SessionNotFoundError,
    StateError,
    StoreBusyError,
    StoreUnavailableError,
)
from hermes.state.lease import make_holder

if TYPE_CHECKING:
    from hermes.state.store import Appended, SessionDB


def __getattr__(name: str) -> Any:
    if name in ("Appended", "SessionDB"):
        from hermes.state import store

        return getattr(store, name)
    raise AttributeError(f"module 'hermes.state' has no attribute {name!r}")


__all__ = [
    "Appended",
    "CorruptStoreError",
    "LeaseNotHeldError",
    "InvalidContextError",
    "MessageNotFoundError",
    "NotTipError",
    "ReadOnlyStoreError",
    "SegmentEndedError",
    "SessionDB",
    "SessionNotFoundError",
    "StateError",
    "StoreBusyError",
    "StoreUnavailableError",
    "make_holder",
]
