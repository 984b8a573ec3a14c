"""Opening a board's database, only ever through sqlite3: WAL, a long busy timeout (many
readers poll one board), autocommit between explicit ``BEGIN IMMEDIATE`` transactions, as
0.19's connections are, so a caller's own ``UPDATE`` outside ``write_txn`` commits at once.

The first open of a board in a process checks it (``PRAGMA quick_check``), brings a board
from before 0.19 up to its columns, then makes what is missing. A damaged board is refused
(``KanbanDbCorruptError``), left as it is, and copied aside byte for byte by a child process
(``board_bytes``): this process never opens the file outside SQLite, since closing any
descriptor of it would drop the process's SQLite locks on it. A lock or a busy board is not
damage: that error passes as is, and no child is started.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from hermes.errors import HermesError
from hermes.kanban.board_bytes import DamagedCopy, copy_damaged
from hermes.kanban.paths import kanban_db_path
from hermes.kanban.schema import make_schema

log = logging.getLogger(__name__)

# SQLite's primary result codes for a damaged file and for one that is not a database.
_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}

DEFAULT_BUSY_TIMEOUT_MS = 120_000
_INITIALIZED_PATHS: set[str] = set()
_INIT_LOCK = threading.Lock()


def busy_timeout_ms() -> int:
    raw = os.environ.get("HERMES_KANBAN_BUSY_TIMEOUT_MS", "").strip()
    try:
        value = int(raw) if raw else 0
    except ValueError:
        value = 0
    return value if value > 0 else DEFAULT_BUSY_TIMEOUT_MS


class KanbanDbCorruptError(HermesError, sqlite3.DatabaseError, RuntimeError):
    """A board's file is damaged: refused, left in place, with a copy beside it. A
    ``sqlite3.DatabaseError`` too, as 0.19 raises for a file that is no database."""

    def __init__(self, db_path: Path, backup_path: Path | None, reason: str) -> None:
        self.db_path = db_path
        self.backup_path = backup_path
        self.reason = reason
        kept = (
            f"it is left as it is and a byte-for-byte copy of it is at {backup_path}"
            if backup_path is not None
            else "it is left as it is (it could not be copied)"
        )
        super().__init__(
            f"The Kanban board {db_path} is damaged ({reason}); {kept}: restore it from "
            f"a backup of your own, or move {db_path.name} aside to start an empty board."
        )


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _DAMAGED


def _refuse(path: Path, finding: str) -> KanbanDbCorruptError:
    """The error for a board SQLite refused, after copying it aside; when its first bytes
    are no SQLite header they are quoted, with what wrote them if 0.19 would name it."""
    copy: DamagedCopy | None = copy_damaged(path)
    if copy is None:
        return KanbanDbCorruptError(path, None, finding)
    reason = finding
    if not copy.head.startswith(b"SQLite format 3\x00"):
        signature = copy.signature()
        if signature is not None:
            reason += f", {signature}"
        reason += f"; its first bytes are {copy.head.hex(' ')}"
    return KanbanDbCorruptError(path, copy.backup, reason)


def _set_journal(conn: sqlite3.Connection, path: Path) -> None:
    """WAL; on a filesystem whose locking WAL cannot use (NFS, SMB: "locking protocol") a
    rollback journal instead, unless the board is already in WAL (other processes may
    have it open so: switching under them is worse than the error)."""
    try:
        conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError as exc:
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if code != sqlite3.SQLITE_PROTOCOL and "locking protocol" not in str(exc).lower():
            raise
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
            raise
        conn.execute("PRAGMA journal_mode=DELETE")
        log.warning(
            "Kanban board %s is on a filesystem without the locking WAL needs (%s): "
            "it uses a rollback journal instead, which is slower with many readers.",
            path,
            exc,
        )


def _quick_check(conn: sqlite3.Connection) -> str | None:
    """What ``PRAGMA quick_check`` finds wrong, or ``None`` when the board is sound."""
    found = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
    return None if found == ["ok"] else "; ".join(found[:3]) or "quick_check found nothing"


def connect(db_path: Path | None = None, *, board: str | None = None) -> sqlite3.Connection:
    """A connection to ``db_path`` or ``board``'s database (the active board when neither),
    checked and brought to 0.19's tables on its first use in this process;
    ``KanbanDbCorruptError`` for a damaged board."""
    path = Path(db_path) if db_path is not None else kanban_db_path(board=board)
    path.parent.mkdir(parents=True, exist_ok=True)
    timeout = busy_timeout_ms()
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=timeout / 1000)
    try:
        conn.row_factory = sqlite3.Row
        key = str(path.resolve())
        finding: str | None = None  # what SQLite found wrong with the file
        try:
            conn.execute(f"PRAGMA busy_timeout={timeout}")
            _set_journal(conn, path)
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA wal_autocheckpoint=100")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA secure_delete=ON")  # a torn write later shows no stale cells
            conn.execute("PRAGMA cell_size_check=ON")  # a corrupt cell is an error, not data
            with _INIT_LOCK:
                if key not in _INITIALIZED_PATHS:
                    finding = _quick_check(conn)
                    if finding is None:
                        with write_txn(conn):  # two processes opening a board do it once
                            make_schema(conn)
                        _INITIALIZED_PATHS.add(key)
        except sqlite3.DatabaseError as exc:
            if not _is_damage(exc):
                raise
            finding = str(exc)
        if finding is not None:
            raise _refuse(path, finding) from None
    except BaseException:
        conn.close()
        raise
    return conn


@contextlib.contextmanager
def connect_closing(
    db_path: Path | None = None, *, board: str | None = None
) -> Iterator[sqlite3.Connection]:
    """``connect`` that closes the connection on leaving (sqlite3's own ``with`` only ends
    the transaction, which leaks a descriptor per request in a long-lived server)."""
    conn = connect(db_path, board=board)
    try:
        yield conn
    finally:
        conn.close()


def init_db(db_path: Path | None = None, *, board: str | None = None) -> Path:
    """Create the board's tables if missing (always re-checked); the database's path."""
    path = Path(db_path) if db_path is not None else kanban_db_path(board=board)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _INIT_LOCK:
        _INITIALIZED_PATHS.discard(str(path.resolve()))
    with contextlib.closing(connect(path)):
        pass
    return path


def forget(path: Path) -> None:
    """Drop ``path`` from the created-tables cache (its file is moving or going away)."""
    with _INIT_LOCK:
        _INITIALIZED_PATHS.discard(str(path.resolve()))


@contextlib.contextmanager
def write_txn(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` transaction: committed on leaving, rolled back on an error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
