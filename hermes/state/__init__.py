"""The state store: segments, messages, the compression lease, rotation, search, export.

``SessionDB`` (``store``) is the face every caller uses; the gateway's routes, queue,
heartbeats and turn locks are ``db.gateway`` (``gateway/store.py``). The shared logic
is written once over ``backend.py``'s seam; each engine is a folder behind it
(``sqlite/``, ``postgres/``: its backend, schema and turn locks) that only ``store.py``
imports, to open one; ``context/`` holds a
message and the rules a list of them keeps.

Where a table group lives: every table's DDL and migrations are in the engines'
schemas (one history per engine). A group whose rows share transactions with the
conversations and messages has its queries here: a module (``blobs.py``,
``usage.py``, ``history.py``), or a folder when it is more (``gateway/``: routes, the
queue and its owners' heartbeats, the HTTP API's runs and retried requests). A group
that stands alone lives with its subsystem, on ``backend.Tx`` (cron's jobs, runs and
outbox: ``hermes/cron/store.py``). ``tests/test_layout.py`` keeps it so.

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
