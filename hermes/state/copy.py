"""Copying a whole store into an empty one, between SQLite and PostgreSQL, verified.

``copy_store`` reads the source page by page and writes each page into the target in
one transaction, through the backend seam: sessions first (parents before children),
then messages with their ids (watermarks and ``origin_id`` links stay valid), then the
compression leases, gateway routes and the gateway queue. Afterwards it proves the copy:
the row count of every table, and a sha256 over every message, computed the same way
on both sides (``message_checksum``), must be equal.

The engines differ in three places only, each a small branch here:
- SQLite's full-text index is a contentless table that must be fed every original row
  (``sqlite.SQLiteTx.insert_messages`` does the same for new messages);
- PostgreSQL's id sequences must be moved past the copied ids, or the next append
  would collide with a copied row;
- a PostgreSQL reader takes one snapshot (REPEATABLE READ) so that counts and the
  checksum describe one moment.

Nothing must write to the source meanwhile: stop every hermes process first. A write
that lands anyway makes the verification fail, naming the table.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from hermes.state.backend import Row, Tx
from hermes.state.context.message import SAID_COLUMNS
from hermes.state.errors import ReadOnlyStoreError, StateError
from hermes.state.store import SessionDB

# progress(step, done, total): step is a table name while copying, then "verify".
Progress = Callable[[str, int, int], None]

# The columns the checksum covers, in this order (everything but timestamps and counts,
# whose float and integer forms are engine details).
CHECKSUM_COLUMNS = (
    "id",
    "session_id",
    "message_uid",
    *SAID_COLUMNS,
    "compacted",
    "origin_id",
    "undone",
    "content_parts",
)
# Rows per INSERT statement are capped so a statement never has more than this many
# parameters (SQLite builds before 3.32 allow 999).
_MAX_PARAMS = 900


@dataclass(frozen=True)
class _Table:
    """A table to copy and its keyset order (unique, parents before children)."""

    name: str
    keys: tuple[str, ...]


TABLES = (
    _Table("sessions", ("conversation_id", "segment_index")),
    _Table("messages", ("id",)),
    _Table("blobs", ("sha256",)),
    _Table("compression_locks", ("session_id",)),
    _Table("segment_coverage", ("session_id", "origin_id")),
    _Table("history_digests", ("digest", "message_id")),
    _Table("gateway_routes", ("session_key",)),
    _Table("gateway_queue", ("id",)),
    _Table("webhook_deliveries", ("route", "delivery_id")),  # the queue's webhook events
    _Table(
        "session_model_usage",
        ("session_id", "model", "billing_provider", "billing_base_url", "billing_mode", "task"),
    ),
    _Table("state_meta", ("key",)),
    _Table("cron_jobs", ("id",)),
    _Table("cron_runs", ("id",)),
    _Table("cron_outbox", ("run_id",)),
)
# Tables whose integer ``id`` a PostgreSQL sequence hands out.
_SEQUENCED = ("messages", "gateway_queue")


@dataclass(frozen=True)
class CopyReport:
    """What was copied, verified equal on both sides."""

    source: str
    target: str
    counts: dict[str, int]  # rows per table
    checksum: str  # sha256 (hex) of every message, see ``message_checksum``
    seconds: float


# As state/errors.py's: its own sentence, its context kept as attributes.
class TargetNotEmptyError(StateError):
    """The target store already holds rows; a copy goes into an empty store only."""

    def __init__(self, location: str, counts: dict[str, int]) -> None:
        held = ", ".join(f"{n} rows in {table}" for table, n in counts.items() if n)
        super().__init__(
            f"The target store {location} is not empty (it holds {held}); hermes migrate "
            "copies only into an empty store, so point it at a new database file or schema."
        )
        self.location = location
        self.counts = counts


class CopyMismatchError(StateError):
    """The target does not hold what the source holds after the copy."""

    def __init__(self, table: str, detail: str) -> None:
        super().__init__(
            f"The copy of {table} does not match its source ({detail}); was hermes still "
            "writing to the source? Stop every hermes process and copy into an empty store "
            "again."
        )
        self.table = table


def copy_store(
    source: SessionDB,
    target: SessionDB,
    *,
    progress: Progress | None = None,
    batch: int = 2000,
) -> CopyReport:
    """Copy every row of ``source`` into the empty ``target``, then verify it.

    Raises TargetNotEmptyError before writing anything when the target holds rows, and
    CopyMismatchError when the verification finds a difference. The source is only read.
    """
    if target.read_only:
        raise ReadOnlyStoreError(target.location)
    if batch < 1:
        raise ValueError("batch must be at least 1")
    started = time.monotonic()
    copier = _Copier(source, target, batch, progress or _no_progress)
    copier.run()
    counts, checksum = copier.verify()
    return CopyReport(
        source=source.location,
        target=target.location,
        counts=counts,
        checksum=checksum,
        seconds=time.monotonic() - started,
    )


def table_counts(db: SessionDB) -> dict[str, int]:
    """Rows per copied table (0 for a table the store does not have)."""
    present = _present_tables(db)

    def run(tx: Tx) -> dict[str, int]:
        _snapshot(tx, db)
        return {t.name: _count(tx, t.name) if t.name in present else 0 for t in TABLES}

    return db.backend.transact(run, write=False)


def message_checksum(db: SessionDB, *, page: int = 5000) -> str:
    """sha256 (hex) over ``CHECKSUM_COLUMNS`` of every message, in id order.

    Each row is hashed as one line of compact JSON, so the digest depends on the values
    only, never on the engine that returned them.
    """

    def run(tx: Tx) -> str:
        _snapshot(tx, db)
        digest = hashlib.sha256()
        after: tuple[Any, ...] | None = None
        columns = ", ".join(CHECKSUM_COLUMNS)
        while True:
            rows = _page(tx, "messages", ("id",), after, page, columns)
            for row in rows:
                digest.update(_canonical(row))
            if len(rows) < page:
                return digest.hexdigest()
            after = (rows[-1]["id"],)

    return db.backend.transact(run, write=False)


# -- the copy ---------------------------------------------------------------------------


class _Copier:
    """One copy: its stores, its batch size, and the session links it has to defer."""

    def __init__(self, source: SessionDB, target: SessionDB, batch: int, progress: Progress):
        self.source = source
        self.target = target
        self.batch = batch
        self.progress = progress
        self.source_counts: dict[str, int] = {}
        self.target_tables: set[str] = set()
        self.copied_sessions: set[str] = set()
        # (session, parent) links to a parent not copied yet: a branch whose origin
        # conversation sorts after it. Written once every session is in.
        self.deferred: list[tuple[str, str]] = []

    def run(self) -> None:
        self.source_counts = table_counts(self.source)
        self._check_target()
        for table in TABLES:
            self._copy(table)
            if table.name == "sessions":
                self._relink()
        if self.target.backend.kind == "postgresql":
            self._advance_sequences()

    def _check_target(self) -> None:
        self.target_tables = _present_tables(self.target)
        held = table_counts(self.target)
        if any(held.values()):
            raise TargetNotEmptyError(self.target.location, held)
        for table, n in self.source_counts.items():
            if n and table not in self.target_tables:
                raise StateError(
                    f"The target store {self.target.location} has no {table} table, so the "
                    f"{n} rows of {table} in the source cannot be copied; upgrade hermes on "
                    "the target's side, or report this as a bug."
                )

    def _copy(self, table: _Table) -> None:
        total = self.source_counts[table.name]
        if not total:
            return
        done, after = 0, None
        self.progress(table.name, 0, total)
        while True:
            rows = self.source.backend.transact(
                partial(_page, table=table.name, keys=table.keys, after=after, limit=self.batch),
                write=False,
            )
            if rows:
                self._store(table, rows)
                done += len(rows)
                self.progress(table.name, done, max(total, done))
            if len(rows) < self.batch:
                return
            after = tuple(rows[-1][k] for k in table.keys)

    def _store(self, table: _Table, rows: list[Row]) -> None:
        """Write one page in one target transaction (retried whole on a transient failure)."""
        if table.name == "sessions":
            rows = self._defer_links(rows)
        index = table.name == "messages" and self.target.backend.kind == "sqlite"

        def run(tx: Tx) -> None:
            _insert(tx, table.name, rows)
            if index:
                _index_sqlite(tx, rows)

        self.target.backend.transact(run, write=True)

    def _defer_links(self, rows: list[Row]) -> list[Row]:
        """The page with links to parents not copied yet cut, to be restored later."""
        out = []
        for row in rows:
            parent = row.get("parent_session_id")
            if parent is not None and parent not in self.copied_sessions:
                self.deferred.append((row["id"], parent))
                row = {**row, "parent_session_id": None}
            self.copied_sessions.add(row["id"])
            out.append(row)
        return out

    def _relink(self) -> None:
        links, self.deferred = self.deferred, []
        if not links:
            return

        def run(tx: Tx) -> None:
            for session_id, parent in links:
                tx.run(
                    "UPDATE sessions SET parent_session_id = ? WHERE id = ?", (parent, session_id)
                )

        self.target.backend.transact(run, write=True)

    def _advance_sequences(self) -> None:
        def run(tx: Tx) -> None:
            for table in _SEQUENCED:
                if table not in self.target_tables:
                    continue
                row = tx.one(f"SELECT MAX(id) AS top FROM {table}")
                if row and row["top"] is not None:
                    # NULL (no sequence behind the column) makes setval a no-op.
                    tx.one(
                        "SELECT setval(pg_get_serial_sequence(?, 'id'), ?) AS v",
                        (table, row["top"]),
                    )

        self.target.backend.transact(run, write=True)

    # -- verification -------------------------------------------------------------------

    def verify(self) -> tuple[dict[str, int], str]:
        self.progress("verify", 0, 1)
        source, target = table_counts(self.source), table_counts(self.target)
        for table in source:
            if source[table] != target[table]:
                raise CopyMismatchError(
                    table, f"{source[table]} rows in the source, {target[table]} in the target"
                )
        if self.target.backend.kind == "sqlite":
            _check_sqlite_index(self.target)
        theirs, ours = message_checksum(self.source), message_checksum(self.target)
        if theirs != ours:
            raise CopyMismatchError(
                "messages", f"checksum {theirs[:12]}… in the source, {ours[:12]}… in the target"
            )
        self.progress("verify", 1, 1)
        return target, ours


def _no_progress(step: str, done: int, total: int) -> None:
    """The default: report nothing."""


# -- SQL helpers ------------------------------------------------------------------------


def _page(
    tx: Tx,
    table: str,
    keys: Sequence[str],
    after: tuple[Any, ...] | None,
    limit: int,
    columns: str = "*",
) -> list[Row]:
    """Up to ``limit`` rows after the key ``after`` (None: from the start), in key order."""
    sql = f"SELECT {columns} FROM {table}"
    params: list[Any] = []
    if after is not None:
        clause, params = _after(keys, after)
        sql += f" WHERE {clause}"
    sql += f" ORDER BY {', '.join(keys)} LIMIT ?"
    return tx.all(sql, [*params, limit])


def _after(keys: Sequence[str], values: Sequence[Any]) -> tuple[str, list[Any]]:
    """``(k1, k2) > (v1, v2)`` spelled out, which both engines plan as an index range."""
    arms, params = [], []
    for i, key in enumerate(keys):
        equal = [f"{k} = ?" for k in keys[:i]]
        arms.append("(" + " AND ".join([*equal, f"{key} > ?"]) + ")")
        params += [*values[:i], values[i]]
    return " OR ".join(arms), params


def _insert(tx: Tx, table: str, rows: list[Row]) -> None:
    """Insert ``rows`` (dicts with the same keys) with multi-row INSERT statements."""
    columns = list(rows[0])
    per_statement = max(1, _MAX_PARAMS // len(columns))
    one = "(" + ", ".join("?" for _ in columns) + ")"
    head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
    for start in range(0, len(rows), per_statement):
        chunk = rows[start : start + per_statement]
        params = [row[c] for row in chunk for c in columns]
        tx.run(head + ", ".join(one for _ in chunk), params)


def _index_sqlite(tx: Tx, rows: list[Row]) -> None:
    """Feed SQLite's contentless full-text index the rows it indexes on insert.

    The same rule as ``SQLiteTx.insert_messages``: originals (not compacted) with text,
    CJK characters spaced out.
    """
    tx.index_messages([row for row in rows if not row["compacted"] and row["content"]])


def _check_sqlite_index(db: SessionDB) -> None:
    def run(tx: Tx) -> tuple[int, int]:
        indexed = _count(tx, "messages_fts")
        expected = tx.one(
            "SELECT COUNT(*) AS n FROM messages"
            " WHERE compacted = 0 AND content IS NOT NULL AND content != ''"
        )
        return indexed, int(expected["n"]) if expected else 0

    indexed, expected = db.backend.transact(run, write=False)
    if indexed != expected:
        raise CopyMismatchError(
            "messages_fts", f"{indexed} messages indexed for search, {expected} expected"
        )


def _count(tx: Tx, table: str) -> int:
    row = tx.one(f"SELECT COUNT(*) AS n FROM {table}")
    return int(row["n"]) if row else 0


def _present_tables(db: SessionDB) -> set[str]:
    names = [t.name for t in TABLES]

    def run(tx: Tx) -> set[str]:
        if db.backend.kind == "sqlite":
            marks = ", ".join("?" for _ in names)
            rows = tx.all(
                f"SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ({marks})",
                names,
            )
            return {r["name"] for r in rows}
        return {
            n
            for n in names
            if (tx.one("SELECT to_regclass(?) IS NOT NULL AS p", (n,)) or {}).get("p")
        }

    return db.backend.transact(run, write=False)


def _snapshot(tx: Tx, db: SessionDB) -> None:
    """Make the rest of a PostgreSQL read transaction see one moment (SQLite already does)."""
    if db.backend.kind == "postgresql":
        tx.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")


def _canonical(row: Row) -> bytes:
    values = [row[c] for c in CHECKSUM_COLUMNS]
    return json.dumps(values, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
