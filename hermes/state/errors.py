"""Errors of the state store, each a sentence a person can act on.

StateError
├── SessionNotFoundError    no segment with that id
├── MessageNotFoundError    no message with that id in the conversation
├── SegmentEndedError       appending to a segment ended for a reason other than compression
├── LeaseNotHeldError       publishing a rotation without holding the compression lease
├── NotTipError             rotating a segment that is no longer its conversation's tip
├── InvalidContextError     a compression child whose context a provider would refuse
├── UndoneInSummaryError    a compression child whose summary read a row undone meanwhile
├── StoreBusyError          another writer held the store past our patience
├── StoreUnavailableError   the store cannot be opened or reached (path, permissions, server)
│   └── StoreReplacedError  the database file was deleted or replaced under an open store
├── CorruptStoreError       the file is not a hermes database or is damaged
├── HermesAgentStoreError   the file is a Hermes Agent store, to upgrade in place first
└── ReadOnlyStoreError      a write on a store opened read-only
"""

from __future__ import annotations

from hermes.errors import HermesError


class StateError(HermesError):
    """A problem with the state store; ``diagnosis`` (a ``diagnose.Diagnosis``) when a
    diagnosis of the store found it."""

    diagnosis: object | None = None


# Each error below writes its own sentence and keeps its context as attributes: alike in shape,
# a template would hide what the user reads.
class SessionNotFoundError(StateError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"No session with id '{session_id}' in the state store.")
        self.session_id = session_id


class MessageNotFoundError(StateError):
    def __init__(self, session_id: str, message_id: int) -> None:
        super().__init__(
            f"No message with id {message_id} in the conversation of session '{session_id}'; "
            "branch at a message of that conversation."
        )
        self.session_id = session_id
        self.message_id = message_id


class SegmentEndedError(StateError):
    def __init__(self, session_id: str, end_reason: str | None) -> None:
        super().__init__(
            f"Session '{session_id}' was ended ({end_reason or 'no reason given'}) and takes no "
            "more messages; start a new session or resume another one."
        )
        self.session_id = session_id
        self.end_reason = end_reason


class LeaseNotHeldError(StateError):
    def __init__(self, session_id: str, holder: str, current: str | None) -> None:
        who = f"it is held by {current}" if current else "nobody holds it"
        super().__init__(
            f"Cannot rotate session '{session_id}': the compression lease is not held by "
            f"{holder} ({who})."
        )
        self.session_id = session_id
        self.holder = holder
        self.current_holder = current


class NotTipError(StateError):
    def __init__(self, session_id: str, tip: str | None) -> None:
        super().__init__(
            f"Cannot rotate session '{session_id}': it is no longer the live segment of its "
            f"conversation (the tip is '{tip}')."
        )
        self.session_id = session_id
        self.tip = tip


class InvalidContextError(StateError):
    def __init__(self, session_id: str, problem: str) -> None:
        super().__init__(
            f"Cannot rotate session '{session_id}': the compacted context is not one a model "
            f"provider accepts ({problem}); nothing was changed."
        )
        self.session_id = session_id
        self.problem = problem


class UndoneInSummaryError(StateError):
    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"Cannot rotate session '{session_id}': its summary read messages that were undone "
            "meanwhile; nothing was changed, and the next compression reads what remains."
        )
        self.session_id = session_id


class StoreBusyError(StateError):
    """Another writer kept the store locked longer than our patience."""


class StoreUnavailableError(StateError):
    """The store cannot be opened or reached."""


class StoreReplacedError(StoreUnavailableError):
    def __init__(self, path: object) -> None:
        super().__init__(
            f"The state database {path} (or its -wal file) was deleted or replaced while hermes "
            "had it open; "
            "hermes stopped writing to it, so nothing more is stored where the next start "
            "would not find it. Put the file back (or restore a backup) and start hermes again."
        )
        self.path = path


class CorruptStoreError(StateError):
    """The database file is damaged or is not a hermes state database."""


class HermesAgentStoreError(StateError):
    """The SQLite file is a Hermes Agent store: hermes reads it once upgraded in place."""


class ReadOnlyStoreError(StateError):
    def __init__(self, location: str) -> None:
        super().__init__(
            f"The state store {location} was opened read-only; this command cannot write."
        )
