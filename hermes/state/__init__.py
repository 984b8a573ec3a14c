"""The state store: segments, messages, the compression lease, rotation, search, export.

It imports nothing of the agent, tools, gateway or CLI.
"""

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
from hermes.state.store import Appended, SessionDB

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
