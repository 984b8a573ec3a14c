"""The SQLite backend: one writer connection per database file per process.

Every SessionDB on the same file in a process shares one connection and one lock (a
process-wide registry), so threads never contend for SQLite's file lock among
themselves. Across processes, writers take the lock up front with ``BEGIN IMMEDIATE``
and wait for it with bounded, jittered, time-based patience. Durability defaults to
WAL with ``synchronous=FULL``: an acknowledged message is on disk.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hermes.state import diagnose
from hermes.state.backend import Backend, MessageRow, Row, SearchHit, SearchScope
from hermes.state.errors import (
    CorruptStoreError,
    StateError,
    StoreBusyError,
    StoreReplacedError,
    StoreUnavailableError,
)
from hermes.state.patience import Backoff, retry_until
from hermes.state.schema import migrations
from hermes.state.search import fts5_match, phrase_match, searchable_text, spaced_cjk
from hermes.state.sqlite.group_commit import WriteQueue
from hermes.state.sqlite.schema import MIGRATIONS
from hermes.state.sqlite.turn_lock import FileTurnLocks

T = TypeVar("T")

DEFAULT_PATIENCE = 60.0  # seconds a writer waits for another process's lock
_BACKOFF = Backoff(first=0.005, most=0.25)  # a lock is usually held for milliseconds
_BUSY_WORDS = ("database is locked", "database is busy", "database table is locked")


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> Row:
    return {col[0]: value for col, value in zip(cursor.description, row, strict=True)}


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    return any(word in str(exc) for word in _BUSY_WORDS)


MAX_READERS = 4  # read connections kept per database file per process


@dataclass
class _Shared:
    """The one writer connection (and its lock) a process keeps for a database file,
    and a small pool of read connections.

    WAL lets readers run beside the writer, so a read never waits for another
    thread's commit (and its fsync). The pool is bounded: when every reader is busy,
    a read takes the writer connection under its lock, as all reads once did.
    """

    conn: sqlite3.Connection
    pid: int
    path: Path | None = None  # None: no separate readers (a read-only store)
    lock: threading.RLock = field(default_factory=threading.RLock)
    users: int = 0
    idle: list[sqlite3.Connection] = field(default_factory=list)
    opened: int = 0
    pool_lock: threading.Lock = field(default_factory=threading.Lock)
    writes: WriteQueue = field(init=False)
    # The file this connection writes, as (device, inode): a file deleted or replaced
    # under it takes its writes where no later process looks (``check_in_place``).
    identity: tuple[int, int] | None = None
    # Its -wal likewise: while this connection is open no SQLite removes it, so a -wal
    # gone or new means it was deleted (by hand, or by a process that believed itself
    # the last user because this one's locks were dropped) and commits go nowhere.
    wal_identity: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        self.writes = WriteQueue(self.lock)
        if self.path is not None:
            self.identity = _identity(self.path)
            self.wal_identity = _identity(_wal_of(self.path))

    def in_place(self) -> bool:
        """Whether the file at the path, and its -wal, are still the ones this connection
        writes."""
        if self.path is None:
            return True
        if _identity(self.path) != self.identity:
            return False
        wal = _identity(_wal_of(self.path))
        if self.wal_identity is None:  # not made yet when the connection opened
            self.wal_identity = wal
        return wal == self.wal_identity

    def check_in_place(self) -> None:
        if not self.in_place():
            raise StoreReplacedError(self.path)

    def checkout(self) -> sqlite3.Connection | None:
        """An idle reader, a new one while the pool has room, else None."""
        if self.path is None:
            return None
        with self.pool_lock:
            if self.idle:
                return self.idle.pop()
            if self.opened >= MAX_READERS:
                return None
            self.opened += 1
        conn = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=0.1
        )
        conn.row_factory = _dict_row
        conn.execute("PRAGMA query_only=ON")
        return conn

    def checkin(self, conn: sqlite3.Connection) -> None:
        with self.pool_lock:
            self.idle.append(conn)

    def close(self) -> None:
        with self.lock, self.pool_lock:
            for conn in self.idle:
                conn.close()
            self.idle.clear()
            self.conn.close()


_registry: dict[str, _Shared] = {}
_registry_lock = threading.Lock()


class SQLiteTx:
    """A transaction on the shared connection; see ``hermes.state.backend.Tx``."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.stored_messages = False  # rows whose index entry waits for the commit

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        row: Row | None = self.conn.execute(sql, params).fetchone()  # by _dict_row
        return row

    def clock(self) -> float:
        return time.time()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        # Plain tuples, then one dict each with the column names looked up once: a
        # 10k-message read spends most of its time building rows otherwise.
        cursor = self.conn.cursor()
        cursor.row_factory = None
        cursor.execute(sql, params)
        names = [column[0] for column in cursor.description or ()]
        with _collector_paused():
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, params).rowcount

    def lock_session(self, session_id: str) -> None:
        """BEGIN IMMEDIATE already holds the database's single write lock."""

    def insert_messages(self, rows: Sequence[MessageRow]) -> list[int]:
        if not rows:
            return []
        # Under BEGIN IMMEDIATE this connection is the only writer, so ids can be
        # assigned here and the batch written with executemany. Never at or below the
        # index watermark, even after the newest rows were deleted: those ids count as
        # indexed already.
        last, indexed = self._last_ids()
        start = max(last, indexed) + 1
        ids = list(range(start, start + len(rows)))
        self.conn.executemany(
            "INSERT INTO messages (id, session_id, message_uid, role, content, tool_calls,"
            " tool_call_id, tool_name, reasoning, created_at, token_count, compacted, origin_id,"
            " content_parts, timestamp, active, finish_reason, reasoning_content,"
            " reasoning_details, codex_reasoning_items, codex_message_items,"
            " platform_message_id, observed, effect_disposition, api_content)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            " ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    i,
                    r.session_id,
                    r.message_uid,
                    r.role,
                    r.content,
                    r.tool_calls,
                    r.tool_call_id,
                    r.tool_name,
                    r.reasoning,
                    r.created_at,
                    r.token_count,
                    r.compacted,
                    r.origin_id,
                    r.content_parts,
                    r.created_at,  # Hermes Agent's ``timestamp``
                    r.active,
                    r.finish_reason,
                    *r.hermes_agent_fields(),
                )
                for i, r in zip(ids, rows, strict=True)
            ],
        )
        # The index entries wait for the commit (``index_pending``): one FTS5 segment
        # per commit, whatever the number of inserts and savepoints before it.
        self.stored_messages = True
        return ids

    def _last_ids(self) -> tuple[int, int]:
        """The newest message id (0 if none) and the index watermark, in one read."""
        cursor = self.conn.cursor()
        cursor.row_factory = None
        last, indexed = cursor.execute(
            "SELECT (SELECT COALESCE(MAX(id), 0) FROM messages), indexed_through"
            " FROM messages_fts_watermark"
        ).fetchone()
        return int(last), int(indexed)

    def index_messages(self, rows: Sequence[Row]) -> None:
        """Add stored rows (``id``, ``content``, ``content_parts``) to the search index,
        with every deferred row, and move the watermark past them all.

        The rows must not be in the index yet (a store copy's page, just inserted).
        """
        last, indexed = self._last_ids()
        given = {r["id"] for r in rows}
        deferred = [r for r in self._deferred_rows(indexed) if r["id"] not in given]
        self.conn.executemany(
            "INSERT INTO messages_fts (rowid, content) VALUES (?, ?)",
            [(r["id"], _index_text(r)) for r in [*deferred, *rows] if r["content"]],
        )
        if last > indexed:
            self.conn.execute("UPDATE messages_fts_watermark SET indexed_through = ?", (last,))

    def index_pending(self) -> None:
        """Index the rows this transaction deferred, in one FTS5 segment, just before its
        COMMIT: the index is current at every commit, as Hermes Agent 0.19's is, for the
        readers that MATCH ``messages_fts`` themselves (converseek, hermesd)."""
        last, indexed = self._last_ids()
        if last > indexed:
            self.index_messages([])

    def _deferred_rows(self, indexed: int) -> list[Row]:
        """The rows above the watermark the index is to hold (originals with text)."""
        return self.all(
            "SELECT id, content, content_parts FROM messages"
            " WHERE id > ? AND compacted = 0 AND content IS NOT NULL ORDER BY id",
            (indexed,),
        )

    def unindex_messages(self, rows: Sequence[Row]) -> None:
        _, indexed = self._last_ids()
        # Deleting a row FTS5 never indexed would corrupt it: only the indexed ones,
        # which are the originals with text at or below the watermark.
        self.conn.executemany(
            "INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', ?, ?)",
            [
                (r["id"], _index_text(r))
                for r in rows
                if r["content"] and not r["compacted"] and r["id"] <= indexed
            ],
        )

    def search(self, terms: Sequence[str], *, limit: int, scope: SearchScope) -> list[SearchHit]:
        columns = "m.id, m.session_id, s.conversation_id, m.role, m.content, m.created_at"
        narrowed = scope.columns()
        params = [value for _, value in narrowed]
        scope_sql = "".join(f" AND s.{column} = ?" for column, _ in narrowed)
        indexed = self.all(
            f"SELECT {columns} FROM messages_fts f JOIN messages m ON m.id = f.rowid"
            " JOIN sessions s ON s.id = m.session_id"
            f" WHERE messages_fts MATCH ? AND m.undone = 0{scope_sql} ORDER BY f.rowid DESC LIMIT ?",
            [fts5_match(list(terms)), *params, limit],
        )
        # Rows whose index entry is still deferred (fewer than PENDING_LIMIT, above
        # the watermark) are matched here, by the same tokens the index would hold.
        deferred = [
            r
            for r in self.all(
                # CROSS JOIN keeps the (short) range of newest messages the outer loop.
                f"SELECT {columns}, m.content_parts FROM messages m"
                " CROSS JOIN sessions s ON s.id = m.session_id"
                " WHERE m.id > (SELECT indexed_through FROM messages_fts_watermark)"
                f" AND m.compacted = 0 AND m.undone = 0 AND m.content IS NOT NULL{scope_sql}",
                params,
            )
            if phrase_match(_index_text(r), terms)
        ]
        rows = sorted([*indexed, *deferred], key=lambda r: r["id"], reverse=True)[:limit]
        return [SearchHit.from_row(r) for r in rows]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Build many acyclic rows without the cyclic GC scanning a large heap each time
    its allocation threshold trips (a 10k read in a busy process: ~60 -> ~40 ms)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _index_text(row: Row) -> str:
    return spaced_cjk(searchable_text(row["content"], row.get("content_parts", 0)))


class SQLiteBackend:
    """A SQLite database file, opened for writing (shared) or read-only (private)."""

    kind = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        read_only: bool = False,
        synchronous: str = "full",
        patience: float = DEFAULT_PATIENCE,
    ) -> None:
        self.path = Path(path).expanduser()
        self.location = str(self.path)
        self.read_only = read_only
        self.patience = patience
        self._closed = False
        self._grouped_messages = False  # a job of the group commit stored messages
        if read_only:
            self._shared = _Shared(conn=self._open_read_only(), pid=os.getpid())
        else:
            self._shared = _acquire_shared(self.path, synchronous)
        self.turn_locks = FileTurnLocks(self.path)  # its file is made at the first lock

    @property
    def conn(self) -> sqlite3.Connection:
        return self._shared.conn

    # -- opening --------------------------------------------------------------------

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.path.exists():
            raise StoreUnavailableError(
                f"No state database at {self.path}; run hermes once to create it, or check "
                "the path."
            )
        problem = diagnose.file_problem(self.path)
        if problem is not None:
            raise problem.error()
        try:
            conn = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?{_read_only_mode(self.path)}",
                uri=True,
                check_same_thread=False,
                isolation_level=None,
                timeout=1.0,
            )
        except sqlite3.Error as exc:
            raise StoreUnavailableError(f"Cannot open {self.path} read-only: {exc}.") from exc
        conn.row_factory = _dict_row

        def probe() -> None:
            _check_readable(conn, self.path)
            _refuse_foreign(conn, self.path, allow_empty=False)

        try:
            _patiently(probe, self.path, self.patience, "read the database")
        except BaseException:
            conn.close()
            raise
        return conn

    # -- transactions ---------------------------------------------------------------

    def transact(self, fn: Callable[[SQLiteTx], T], *, write: bool) -> T:
        if self._closed:
            raise StateError(f"The state store {self.location} is closed.")
        shared = self._shared
        if shared.pid != os.getpid():
            raise StateError(
                "A SessionDB cannot be used across fork(); open a new one in the child."
            )
        reader = None if write else shared.checkout()
        if reader is not None:
            try:
                return self._run(reader, fn, write=False)
            finally:
                shared.checkin(reader)
        if write and not self.read_only:
            return shared.writes.run(fn, self)
        with shared.lock:
            return self._run(shared.conn, fn, write=write)

    def _run(self, conn: sqlite3.Connection, fn: Callable[[SQLiteTx], T], *, write: bool) -> T:
        self._begin(conn, write)
        try:
            tx = SQLiteTx(conn)
            result = fn(tx)
            if tx.stored_messages:
                tx.index_pending()
            self._commit(conn)
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._raise_if_refused(exc)
            raise
        return result

    def _raise_if_refused(self, exc: BaseException) -> None:
        if isinstance(exc, sqlite3.IntegrityError | OverflowError):
            # A constraint or a value the engine cannot hold: one sentence, not a
            # driver error, and (rolled back) nothing changed.
            raise StateError(
                f"The state store {self.path} refused the write ({exc}); nothing was changed."
            ) from exc

    # -- the Writer of group_commit.WriteQueue ---------------------------------------

    def run_alone(self, work: Callable[[SQLiteTx], T]) -> T:
        return self._run(self.conn, work, write=True)

    def begin_write(self) -> None:
        self._begin(self.conn, True)

    def commit(self) -> None:
        if self._grouped_messages:
            SQLiteTx(self.conn).index_pending()
        self._grouped_messages = False
        self._commit(self.conn)

    def call(self, work: Callable[[SQLiteTx], T]) -> T:
        tx = SQLiteTx(self.conn)
        try:
            return work(tx)
        except BaseException as exc:
            self._raise_if_refused(exc)
            raise
        finally:
            # Under the writer's lock, so the group's COMMIT indexes every job's rows.
            self._grouped_messages |= tx.stored_messages

    def _begin(self, conn: sqlite3.Connection, write: bool) -> None:
        if write:
            self._shared.check_in_place()  # write nothing into a file no one will open
        statement = "BEGIN IMMEDIATE" if write else "BEGIN"
        self._with_patience(lambda: conn.execute(statement), "take the write lock")

    def _commit(self, conn: sqlite3.Connection) -> None:
        self._with_patience(lambda: conn.execute("COMMIT"), "commit")
        if conn is self._shared.conn:
            # Deleted or replaced between BEGIN and COMMIT: the rows are in the old file,
            # so the caller must not take them as stored.
            self._shared.check_in_place()

    def in_place(self) -> bool:
        """Whether the database file at the path is still the one this store writes."""
        return self._shared.in_place()

    def ping(self, timeout: float) -> None:
        # A local file answers or raises at once; a read waits for no writer under WAL.
        self.transact(lambda tx: tx.one("SELECT 1 AS x"), write=False)

    def _with_patience(self, step: Callable[[], object], what: str) -> None:
        _patiently(step, self.path, self.patience, what)

    # -- schema ---------------------------------------------------------------------

    def schema_version(self) -> int:
        def read(tx: SQLiteTx) -> int:
            if not tx.one("SELECT 1 AS x FROM sqlite_master WHERE name = 'schema_version'"):
                return 0
            row = tx.one("SELECT MAX(version) AS v FROM schema_version")
            return int(row["v"] or 0) if row else 0

        return self.transact(read, write=False)

    def migrate(self) -> None:
        migrations.bring_up_to_date(self, MIGRATIONS)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.turn_locks.close()
        if self.read_only:
            self._shared.conn.close()
        else:
            _release_shared(self.path, self._shared)


def _patiently(step: Callable[[], object], path: Path, patience: float, what: str) -> None:
    """Run ``step``, waiting out another process's lock for up to ``patience`` seconds."""
    try:
        step()  # the usual case, without the retry loop's set-up on every statement
        return
    except sqlite3.OperationalError as exc:
        if not _is_busy(exc):
            raise _translate(exc, path) from exc

    def give_up(exc: sqlite3.OperationalError) -> StoreBusyError:
        return StoreBusyError(
            f"Could not {what} on {path}: another process kept the database "
            f"locked for over {patience:.0f} s. Check for a stuck hermes "
            "process (`hermes doctor`) and try again."
        )

    try:
        retry_until(
            time.monotonic() + patience,
            step,
            transient=sqlite3.OperationalError,
            is_transient=_is_busy,
            give_up=give_up,
            backoff=_BACKOFF,
        )
    except sqlite3.OperationalError as exc:  # not a lock: damage, a full disk, ...
        raise _translate(exc, path) from exc


def _check_readable(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a damaged file; a locked one (another process starting the store, say)
    is left to the caller to wait for: locked is not damaged."""
    try:
        conn.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.OperationalError as exc:
        if _is_busy(exc):
            raise
        conn.close()
        raise diagnose.open_failed(path, str(exc)).error() from exc
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise diagnose.damaged(path, str(exc)).error() from exc


def _refuse_foreign(conn: sqlite3.Connection, path: Path, *, allow_empty: bool = True) -> None:
    """Refuse, before any write, a SQLite file some other program made; a reader also
    refuses one without tables (a writer makes its store in it)."""
    tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    names = {r["name"] for r in tables}
    if names and "schema_version" not in names:
        conn.close()
        raise diagnose.foreign(path, sorted(names)).error()
    # Hermes Agent's state.db has a schema_version too (a bare one, at its own numbers):
    # told apart by its tables whatever its version, looked at only when the store
    # lacks a table every current hermes store has.
    if "segment_coverage" not in names and hermes_agent_schema(conn):
        conn.close()
        raise diagnose.hermes_agent_store(str(path)).error()
    if not names and not allow_empty:
        conn.close()
        raise diagnose.empty(path).error()


def hermes_agent_schema(conn: sqlite3.Connection) -> bool:
    """The database holds Hermes Agent's schema (sessions, messages, a bare schema_version).

    Told from a newer hermes by its tables, not its version number: hermes's sessions
    always have ``conversation_id`` and its ``schema_version`` names each migration.
    """

    cursor = conn.cursor()
    cursor.row_factory = None

    def columns(table: str) -> set[str]:
        return {r[1] for r in cursor.execute(f"PRAGMA table_info({table})").fetchall()}

    try:
        tables = {
            r[0] for r in cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if not {"sessions", "messages", "schema_version"} <= tables:
            return False
        session_columns, version_columns = columns("sessions"), columns("schema_version")
        message_columns = columns("messages")
    except sqlite3.DatabaseError:
        return False
    return (
        "conversation_id" not in session_columns
        and "name" not in version_columns
        and {"id", "source", "started_at"} <= session_columns
        and {"id", "session_id", "role", "content", "timestamp"} <= message_columns
    )


def is_hermes_agent_store(path: Path) -> bool:
    """``path`` is a SQLite file holding a Hermes Agent store (read without writing)."""
    if not path.is_file() or diagnose.file_problem(path) is not None:
        return False
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?{_read_only_mode(path)}", uri=True)
    except sqlite3.Error:
        return False
    try:
        return hermes_agent_schema(conn)
    finally:
        conn.close()


def _translate(exc: sqlite3.Error, path: Path) -> StateError:
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return StoreUnavailableError(f"Cannot write to {path}: {text}. Check its permissions.")
    if "malformed" in text or "not a database" in text:
        return CorruptStoreError(f"{path} is damaged ({text}). Run `hermes doctor`.")
    if "disk" in text and "full" in text:
        return StoreUnavailableError(f"Cannot write to {path}: the disk is full.")
    return StateError(f"The state store {path} failed: {text}.")


def _acquire_shared(path: Path, synchronous: str) -> _Shared:
    key = os.path.realpath(path)
    with _registry_lock:
        shared = _registry.get(key)
        # A file deleted or replaced under the shared connection: its users fail on their
        # next write; this store opens the file that is there now.
        if shared is None or shared.pid != os.getpid() or not shared.in_place():
            shared = _Shared(conn=_open_writer(path, synchronous), pid=os.getpid(), path=Path(key))
            _registry[key] = shared
        shared.users += 1
        return shared


def _release_shared(path: Path, shared: _Shared) -> None:
    key = os.path.realpath(path)
    with _registry_lock:
        shared.users -= 1
        if shared.users <= 0:
            shared.close()
            if _registry.get(key) is shared:  # not when a reopened file took its place
                del _registry[key]


def _open_writer(path: Path, synchronous: str) -> sqlite3.Connection:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.exists():
            # Created 0600 before SQLite touches it; its -wal and -shm files take the
            # same mode from it.
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError as exc:
        raise StoreUnavailableError(
            f"Cannot create the state database at {path}: {exc.strerror}. Check the path and "
            "its permissions, or set HERMES_HOME."
        ) from exc
    problem = diagnose.file_problem(path)
    if problem is not None and problem.kind != "empty":  # a writer starts a store in it
        raise problem.error()
    try:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=0.1)
    except sqlite3.Error as exc:
        raise StoreUnavailableError(f"Cannot open the state database {path}: {exc}.") from exc
    conn.row_factory = _dict_row

    def probe() -> None:
        _check_readable(conn, path)
        _refuse_foreign(conn, path)
        mode = conn.execute("PRAGMA journal_mode").fetchone()["journal_mode"]
        if mode != "wal":  # switching is a write: only when the file is not in WAL yet
            conn.execute("PRAGMA journal_mode=WAL")

    try:
        # Another process may be creating the store this moment (its first write holds
        # the file's lock): wait for it like for any lock, not past DEFAULT_PATIENCE.
        _patiently(probe, path, DEFAULT_PATIENCE, "open the database")
    except BaseException:
        conn.close()
        raise
    conn.execute(f"PRAGMA synchronous={'NORMAL' if synchronous == 'normal' else 'FULL'}")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def _wal_of(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def _read_only_mode(path: Path) -> str:
    """URI parameters to read ``path`` without writing anything next to it.

    A WAL database read with ``mode=ro`` still needs its -shm file, which SQLite must
    create in the folder; on a read-only folder that fails. ``immutable=1`` reads
    without the -shm file and without locks. That is safe only when no writer can be
    at work: a folder nobody can write holds no live writer (a writer needs to create
    -wal and -shm there), and with no non-empty -wal every committed row is in the
    main file. Otherwise (a writable folder, or a -wal still to be read) ``mode=ro``.
    """
    folder_writable = os.access(path.parent, os.W_OK)
    wal = _wal_of(path)
    pending_wal = wal.exists() and wal.stat().st_size > 0
    if not folder_writable and not pending_wal:
        return "mode=ro&immutable=1"
    return "mode=ro"


if TYPE_CHECKING:  # mypy checks here that this backend satisfies the seam's protocol
    _satisfies_backend: type[Backend] = SQLiteBackend
