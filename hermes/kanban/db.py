"""Opening a board's database, only ever through sqlite3: WAL, a long busy timeout (many
readers poll one board), autocommit between explicit ``BEGIN IMMEDIATE`` transactions, as
0.19's connections are, so a caller's own ``UPDATE`` outside ``write_txn`` commits at once."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from hermes.kanban.paths import kanban_db_path
from hermes.kanban.schema import SCHEMA_SQL

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


def connect(db_path: Path | None = None, *, board: str | None = None) -> sqlite3.Connection:
    """A connection to ``db_path`` or ``board``'s database (the active board when neither),
    created with its tables on first use in this process."""
    path = Path(db_path) if db_path is not None else kanban_db_path(board=board)
    path.parent.mkdir(parents=True, exist_ok=True)
    timeout = busy_timeout_ms()
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=timeout / 1000)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout={timeout}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA wal_autocheckpoint=100")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA secure_delete=ON")  # a torn write later shows no stale cells
        conn.execute("PRAGMA cell_size_check=ON")  # a corrupt cell is an error, not data
        key = str(path.resolve())
        with _INIT_LOCK:
            if key not in _INITIALIZED_PATHS:
                conn.executescript(SCHEMA_SQL)
                _INITIALIZED_PATHS.add(key)
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
