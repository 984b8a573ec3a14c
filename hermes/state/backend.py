"""The seam between the shared store logic and a database engine.

Everything that differs between SQLite and PostgreSQL lives behind these two small
protocols; the rules (rotation, leases, tip resolution, reconstruction, export) are
written once in the modules that use them. The engines (``state/sqlite/``,
``state/postgres/``) implement them; outside their folders only ``store.py`` imports
one, to open the store a location names (``tests/test_layout.py``).

Shared SQL is written with ``?`` placeholders, ``ON CONFLICT`` and ``RETURNING``, a
subset both engines accept; a backend translates placeholders if it must.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

Row = dict[str, Any]


@dataclass(frozen=True)
class MessageRow:
    """A message about to be inserted (the columns of ``messages`` but ``id``)."""

    session_id: str
    message_uid: str
    role: str
    content: str | None
    tool_calls: str | None
    tool_call_id: str | None
    tool_name: str | None
    reasoning: str | None
    created_at: float
    token_count: int | None
    compacted: int = 0
    origin_id: int | None = None
    content_parts: int = 0  # 1: content is a JSON list of parts
    finish_reason: str | None = None  # why the model stopped (assistant rows)
    # Hermes Agent's provider fields, kept for its readers and replays (JSON texts
    # where the value is structured); hermes's own turns do not read them.
    reasoning_content: str | None = None
    reasoning_details: str | None = None
    codex_reasoning_items: str | None = None
    codex_message_items: str | None = None
    platform_message_id: str | None = None
    observed: int = 0
    effect_disposition: str | None = None
    api_content: str | None = None

    def hermes_agent_fields(self) -> tuple[Any, ...]:
        """The provider fields in the order both engines insert them."""
        return (
            self.reasoning_content,
            self.reasoning_details,
            self.codex_reasoning_items,
            self.codex_message_items,
            self.platform_message_id,
            self.observed,
            self.effect_disposition,
            self.api_content,
        )

    @property
    def active(self) -> int:
        """Hermes Agent's ``active``: 0 for a compacted copy (its original stands in the
        parent segment); a new row is never undone."""
        return 0 if self.compacted else 1


@dataclass(frozen=True)
class SearchScope:
    """Which conversations a search looks in: those with every value given."""

    source: str | None = None
    conversation_id: str | None = None
    user_id: str | None = None

    def columns(self) -> list[tuple[str, str]]:
        """(column of ``sessions``, value) for each value given."""
        named = vars(self).items()
        return [(column, value) for column, value in named if value]


@dataclass(frozen=True)
class SearchHit:
    """A message row a backend's full-text search matched."""

    message_id: int
    session_id: str
    conversation_id: str
    role: str
    content: str
    created_at: float

    @classmethod
    def from_row(cls, row: Row) -> SearchHit:
        return cls(
            message_id=row["id"],
            session_id=row["session_id"],
            conversation_id=row["conversation_id"],
            role=row["role"],
            content=row["content"],
            created_at=row["created_at"],
        )


class Tx(Protocol):
    """One open transaction. Rows come back as plain dicts."""

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute a statement and return the number of rows it changed."""
        ...

    def clock(self) -> float:
        """Seconds since the epoch by the store's clock, for times other processes or
        hosts compare (leases, heartbeats): PostgreSQL's server clock, one for every
        host; SQLite's store lives on one host, so that host's clock."""
        ...

    def lock_session(self, session_id: str) -> None:
        """Hold the session row until commit, where the engine has row locks.

        SQLite's ``BEGIN IMMEDIATE`` already serialises every writer, so there it does
        nothing; PostgreSQL takes ``SELECT ... FOR NO KEY UPDATE``.
        """
        ...

    def insert_messages(self, rows: Sequence[MessageRow]) -> list[int]:
        """Insert rows whose ``message_uid`` is known to be new; return their ids in order.

        Rows with ``compacted == 0`` are added to the full-text index in the same
        transaction.
        """
        ...

    def index_messages(self, rows: Sequence[Row]) -> None:
        """Add stored rows (``id``, ``content``, ``content_parts``) to the full-text index
        (a store copy fills the index this way; engines whose index follows the rows do
        nothing)."""
        ...

    def unindex_messages(self, rows: Sequence[Row]) -> None:
        """Remove message rows (with ``id`` and ``content``) from the full-text index."""
        ...

    def search(self, terms: Sequence[str], *, limit: int, scope: SearchScope) -> list[SearchHit]:
        """Original (non-compacted) messages matching every term, newest first.

        A term is a word or phrase, ending in ``*`` for a prefix (see ``search``)."""
        ...


def conversation_key(conversation_id: str, namespace: str = "") -> int:
    """A stable 62-bit number for a conversation (the same in every process and host;
    ``hash()`` is salted per process)."""
    data = f"{namespace}\0{conversation_id}".encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big") >> 2


class TurnLocks(Protocol):
    """Per-conversation locks a turn holds while it runs (each engine's ``turn_lock.py``;
    each hashes a conversation to ``conversation_key``).

    Exclusive across processes, hosts and handles; freed when the holder's process dies;
    no durable write.
    """

    @property
    def instant(self) -> bool:
        """True if ``try_lock`` and ``unlock`` never wait on I/O (a local file lock), so
        an event loop may call them without a thread."""
        ...

    def try_lock(self, conversation_id: str) -> bool:
        """Take the lock without waiting; False if anyone else holds it."""
        ...

    def unlock(self, conversation_id: str) -> None:
        """Give the lock back; nothing happens unless this handle holds it."""
        ...

    def close(self) -> None:
        """Give back every lock this handle holds."""
        ...


class Backend(Protocol):
    """A connection to one store.

    Its attributes are read-only properties here so that a backend may narrow them
    (``SQLiteBackend.turn_locks`` is a ``FileTurnLocks``): a protocol's plain attribute
    would have to match exactly. Each backend module checks it satisfies this protocol.
    """

    @property
    def kind(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        ...

    @property
    def location(self) -> str:
        """A path, or a URL without its password, for messages."""
        ...

    @property
    def read_only(self) -> bool: ...

    @property
    def turn_locks(self) -> TurnLocks: ...

    def transact(self, fn: Callable[[Tx], T], *, write: bool) -> T:
        """Run ``fn`` in one transaction, retrying the whole of it on a transient conflict.

        Write transactions take the write lock up front (``BEGIN IMMEDIATE``); patience
        is bounded and jittered, and a write that finally fails raises StoreBusyError.
        """
        ...

    def schema_version(self) -> int:
        """The highest migration applied, 0 for an empty database."""
        ...

    def migrate(self) -> None:
        """Apply pending migrations, each in its own transaction; no write if none."""
        ...

    def in_place(self) -> bool:
        """Whether the store is still the one the next process will open (a SQLite file
        deleted or replaced under it is not; writes then raise StoreReplacedError)."""
        ...

    def ping(self, timeout: float) -> None:
        """Raise StoreUnavailableError unless the store answers a query within about
        ``timeout`` seconds (a watcher's question, answered without the store's patience)."""
        ...

    def close(self) -> None: ...
