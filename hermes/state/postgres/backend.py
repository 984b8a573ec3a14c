"""The PostgreSQL backend: one conversation store shared by many hosts.

Connections come from a ``psycopg_pool`` pool, each in autocommit mode so that this
module writes ``BEGIN`` and ``COMMIT`` itself. Every transaction runs at READ COMMITTED;
the shared logic serialises the writers that must not interleave (appends to a
segment, its rotation, its lease) through ``Tx.lock_session``, a row lock on the
segment held until commit. Because every statement of a READ COMMITTED transaction
sees what committed before it started, a check made after taking that lock sees the
latest state: no lost update, no second compression child.

A transaction that fails for a transient reason (a deadlock, a serialization failure,
a lock wait past the remaining patience, a dropped connection) is retried whole, with
bounded, jittered, time-based patience. Everything else is translated into a
``StateError`` that names the server as ``host:port/db`` and never the password.
"""

from __future__ import annotations

import getpass
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from itertools import groupby
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from hermes.redaction import redact, register
from hermes.state import diagnose
from hermes.state.backend import Backend, MessageRow, Row, SearchHit, SearchScope
from hermes.state.errors import (
    ReadOnlyStoreError,
    StateError,
    StoreBusyError,
    StoreUnavailableError,
)
from hermes.state.patience import Backoff, retry_until
from hermes.state.postgres.schema import FTS_TEXT_LIMIT, MIGRATIONS, fts_document
from hermes.state.schema import migrations
from hermes.state.search import has_cjk, split_prefix

try:
    import psycopg
    from psycopg.pq import TransactionStatus
    from psycopg.rows import DictRow, dict_row
    from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

    from hermes.state.postgres.turn_lock import AdvisoryTurnLocks, Connection
except ImportError:  # the optional extra is not installed
    psycopg = None  # type: ignore[assignment]

T = TypeVar("T")

DEFAULT_PATIENCE = 60.0  # seconds a transaction keeps retrying a transient failure
_BACKOFF = Backoff(first=0.01, most=1.0)  # between whole-transaction retries
CONNECT_TIMEOUT = 10  # seconds, unless the URL sets connect_timeout
# pg_advisory_xact_lock key ("hermes" in ASCII): first-time migrations by several
# processes take turns, database-wide, because CREATE EXTENSION is database-wide.
MIGRATION_LOCK = 0x6865726D6573

# Conflicts between writers: retrying the whole transaction resolves them.
_BUSY_STATES = frozenset({"40001", "40P01", "55P03"})
# The server is restarting, shutting down or full of connections: try again later.
_DOWN_STATES = frozenset({"53300", "57P01", "57P02", "57P03"})

_INSERT_MESSAGE = (
    "INSERT INTO messages (session_id, message_uid, role, content, tool_calls, tool_call_id,"
    " tool_name, reasoning, created_at, token_count, compacted, origin_id, content_parts,"
    " timestamp, active, finish_reason, reasoning_content, reasoning_details,"
    " codex_reasoning_items, codex_message_items, platform_message_id, observed,"
    " effect_disposition, api_content)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
    " %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)
_FTS_DOCUMENT = fts_document("m.content")
_PARTS_TEXT = "jsonb_path_query_array(m.content::jsonb, '$[*].text')::text"


class _Transient(Exception):
    """An attempt failed for a reason a retry may fix; ``busy`` tells which kind."""

    def __init__(self, error: Exception, *, busy: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.busy = busy


# -- SQL and parameters ------------------------------------------------------------


# A quoted string or identifier: its ``?`` is text, not a placeholder.
_QUOTED = re.compile(r"""('(?:[^']|'')*'|"(?:[^"]|"")*")""")


@lru_cache(maxsize=1024)
def _sql(sql: str) -> str:
    """Shared SQL (``?`` placeholders) in psycopg's dialect (``%s``, literal ``%%``).

    psycopg reads ``%`` everywhere, quotes included, so every ``%`` is doubled; a ``?``
    becomes a placeholder only outside quotes.
    """
    pieces = _QUOTED.split(sql.replace("%", "%%"))
    # split() with one group alternates: outside, quoted, outside, ...
    return "".join(p if i % 2 else p.replace("?", "%s") for i, p in enumerate(pieces))


def _param(value: Any) -> Any:
    # SQLite takes a bool as 0/1 and a NUL inside text; PostgreSQL refuses both, and a
    # message must never become impossible to store because of a stray NUL byte.
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value


def _params(params: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_param(p) for p in params)


def _escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _script_runs(term: str) -> list[str]:
    """``東京tower`` as ``東京`` and ``tower``: each part is searched its own way."""
    return ["".join(run) for _, run in groupby(term, key=has_cjk)]


def _pieces(term: str) -> list[tuple[str, bool]]:
    """A term's script runs, each with whether it is a prefix (only a last word run is)."""
    text, prefix = split_prefix(term)
    runs = [run.strip() for run in _script_runs(text) if run.strip()]
    return [(run, prefix and i == len(runs) - 1) for i, run in enumerate(runs)]


def _is_word(term: str) -> bool:
    """True when the full-text index can find ``term`` as whole words (a word or phrase).

    CJK terms, and terms with characters PostgreSQL's parser may not count as letters
    (superscripts, combining marks), are matched as substrings instead.
    """
    return (
        not has_cjk(term)
        and term.strip() != ""
        and all(
            c == " " or (c.isascii() and c.isalnum()) or (not c.isascii() and c.isalpha())
            for c in term
        )
    )


def _word_operator(prefix: bool) -> str:
    return "to_tsquery" if prefix else "phraseto_tsquery"


def _word_query(text: str, prefix: bool) -> str:
    """The words as ``phraseto_tsquery`` takes them, or a prefix phrase for ``to_tsquery``
    (``'red' <-> 'app':*``; safe to quote: a word run holds letters and digits only)."""
    if not prefix:
        return text
    return " <-> ".join(f"'{word}'" for word in text.split()) + ":*"


# -- the transaction ---------------------------------------------------------------


class PostgresTx:
    """One open transaction on a pooled connection; see ``hermes.state.backend.Tx``."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[DictRow]:
        """Run one statement written with ``?`` placeholders; return its cursor."""
        return self.conn.execute(_sql(sql), _params(params))

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.execute(sql, params).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.execute(sql, params).rowcount

    def clock(self) -> float:
        # clock_timestamp(), not now(): the time of this call, not of the transaction.
        row = self.one("SELECT extract(epoch FROM clock_timestamp())::float8 AS t")
        assert row is not None
        return float(row["t"])

    def lock_session(self, session_id: str) -> None:
        # NO KEY UPDATE conflicts with itself (appends, rotation and leases take turns
        # on a segment) but not with the key-share locks of foreign-key checks.
        self.execute("SELECT 1 FROM sessions WHERE id = ? FOR NO KEY UPDATE", (session_id,))

    def insert_messages(self, rows: Sequence[MessageRow]) -> list[int]:
        """Insert in one pipelined batch; the search indexes follow the rows."""
        if not rows:
            return []
        with self.conn.cursor() as cur:
            cur.executemany(_INSERT_MESSAGE, [_message_params(r) for r in rows], returning=True)
            ids: list[int] = []
            while True:
                row = cur.fetchone()
                assert row is not None  # RETURNING id: one row per statement
                ids.append(row["id"])
                if not cur.nextset():
                    break
        return ids

    def index_messages(self, rows: Sequence[Row]) -> None:
        """Nothing to do: the search indexes are derived from the rows themselves."""

    def unindex_messages(self, rows: Sequence[Row]) -> None:
        """Nothing to do: the search indexes are derived from the rows themselves."""

    def search(self, terms: Sequence[str], *, limit: int, scope: SearchScope) -> list[SearchHit]:
        sql, params = _search_sql(terms, scope)
        return [SearchHit.from_row(r) for r in self.all(sql, [*params, limit])]


def _message_params(row: MessageRow) -> tuple[Any, ...]:
    return _params(
        (
            row.session_id,
            row.message_uid,
            row.role,
            row.content,
            row.tool_calls,
            row.tool_call_id,
            row.tool_name,
            row.reasoning,
            row.created_at,
            row.token_count,
            row.compacted,
            row.origin_id,
            row.content_parts,
            row.created_at,  # Hermes Agent's ``timestamp``
            row.active,
            row.finish_reason,
            *row.hermes_agent_fields(),
        )
    )


def _search_sql(terms: Sequence[str], scope: SearchScope) -> tuple[str, list[Any]]:
    """The search statement (its last placeholder is the limit) and its parameters.

    Every term is required (a term mixing CJK and other letters counts as its runs): a
    word or phrase through the full-text index (a prefix term as ``word:*``), anything else (CJK) as a substring through the
    trigram index, or by a scan when it is shorter than three characters. Messages
    longer than the vectorised prefix also match when every term is somewhere in them,
    through ``messages_long``.

    The matches are collected first (a materialised CTE) and only then ordered: asked
    for ``ORDER BY id DESC LIMIT n`` directly, the planner may walk the primary key
    backwards computing ``to_tsvector`` on every row, which takes seconds for a rare word.
    """
    pieces = list(dict.fromkeys(p for term in terms for p in _pieces(term)))
    words = [(text, prefix) for text, prefix in pieces if _is_word(text)]
    patterns = {text: "%" + _escape_like(text) + "%" for text, _ in pieces}
    others = [patterns[text] for text, _ in pieces if not _is_word(text)]
    word_params = [_word_query(text, prefix) for text, prefix in words]
    matched = ["m.compacted = 0", "m.undone = 0", "m.content_parts = 0"]
    matched += [f"{_FTS_DOCUMENT} @@ {_word_operator(p)}('simple', ?)" for _, p in words]
    matched += ["m.content ILIKE ?" for _ in others]
    params: list[Any] = [*word_params, *others]
    arms = [f"SELECT m.id, m.session_id FROM messages m WHERE {' AND '.join(matched)}"]
    if words:
        long = ["m.compacted = 0", "m.undone = 0", "m.content_parts = 0"]
        long.append(f"length(m.content) > {FTS_TEXT_LIMIT}")
        long += ["m.content ILIKE ?" for _ in patterns]
        arms.append(f"SELECT m.id, m.session_id FROM messages m WHERE {' AND '.join(long)}")
        params += patterns.values()
    # Multi-part content (rare): only the text parts count, never the JSON around them.
    parts = ["m.compacted = 0", "m.undone = 0", "m.content_parts = 1"]
    parts += [
        f"to_tsvector('simple', {_PARTS_TEXT}) @@ {_word_operator(p)}('simple', ?)"
        for _, p in words
    ]
    parts += [f"{_PARTS_TEXT} ILIKE ?" for _ in others]
    arms.append(f"SELECT m.id, m.session_id FROM messages m WHERE {' AND '.join(parts)}")
    params += [*word_params, *others]
    narrowed = scope.columns()
    params += [value for _, value in narrowed]
    top = "SELECT h.id FROM hits h"
    if narrowed:
        where = " AND ".join(f"s.{column} = ?" for column, _ in narrowed)
        top += f" JOIN sessions s ON s.id = h.session_id WHERE {where}"
    sql = (
        f"WITH hits AS MATERIALIZED ({' UNION '.join(arms)}),"
        f" top AS ({top} ORDER BY h.id DESC LIMIT ?)"
        " SELECT m.id, m.session_id, s.conversation_id, m.role, m.content, m.created_at"
        " FROM top JOIN messages m ON m.id = top.id JOIN sessions s ON s.id = m.session_id"
        " ORDER BY m.id DESC"
    )
    return sql, params


# -- SessionDB._conn on PostgreSQL --------------------------------------------------


class StatementResult:
    """The rows of one statement, read while its connection was held."""

    def __init__(self, rows: list[Row], rowcount: int) -> None:
        self._rows = rows
        self._next = 0
        self.rowcount = rowcount

    def fetchone(self) -> Row | None:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[Row]:
        rows = self._rows[self._next :]
        self._next = len(self._rows)
        return rows

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


class StatementConnection:
    """A ``sqlite3.Connection``-like face for ad-hoc SQL with ``?`` placeholders.

    Each ``execute`` is its own transaction on a pooled connection, retried like any
    other, and returns its rows (dicts) already fetched.
    """

    def __init__(self, backend: PostgresBackend) -> None:
        self._backend = backend

    def execute(self, sql: str, params: Sequence[Any] = ()) -> StatementResult:
        def run(tx: PostgresTx) -> StatementResult:
            cur = tx.execute(sql, params)
            return StatementResult(cur.fetchall() if cur.description else [], cur.rowcount)

        return self._backend.transact(run, write=not self._backend.read_only)

    def executemany(self, sql: str, seq_of_params: Sequence[Sequence[Any]]) -> StatementResult:
        def run(tx: PostgresTx) -> StatementResult:
            with tx.conn.cursor() as cur:
                cur.executemany(_sql(sql), [_params(p) for p in seq_of_params])
                return StatementResult([], cur.rowcount)

        return self._backend.transact(run, write=not self._backend.read_only)

    def commit(self) -> None:
        """Nothing to do: every statement committed on its own."""

    def rollback(self) -> None:
        """Nothing to do: every statement committed on its own."""


# -- naming the server -------------------------------------------------------------


class _Server:
    """How messages name a server: ``host:port/db``, and the URL minus its password."""

    def __init__(self, url: str) -> None:
        register(_password_of(url))  # every message of ours and psycopg's is redacted
        try:
            params = psycopg.conninfo.conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise StoreUnavailableError(
                f"The PostgreSQL URL is not valid ({redact(_reason(exc))}). "
                "Check state.url / HERMES_STATE_URL."
            ) from None
        host = params.get("host") or params.get("hostaddr") or "localhost"
        port = params.get("port") or "5432"
        dbname = params.get("dbname") or params.get("user") or getpass.getuser()
        self.label = f"{host}:{port}/{dbname}"
        self.location = redact(url)
        self.params = {k: v for k, v in params.items() if k != "password"}


def _password_of(url: str) -> str | None:
    try:
        password = psycopg.conninfo.conninfo_to_dict(url).get("password")
        return None if password is None else str(password)
    except psycopg.Error:
        try:
            return urlsplit(url).password
        except ValueError:
            return None


def _reason(exc: BaseException) -> str:
    """The server's or libpq's sentence, on one line, without a trailing period."""
    diag = getattr(exc, "diag", None)
    text = (diag.message_primary if diag is not None else None) or str(exc) or type(exc).__name__
    return " ".join(text.split()).rstrip(".")


# -- the backend -------------------------------------------------------------------


class PostgresBackend:
    """A PostgreSQL database (or one schema of it, by the URL's ``options``)."""

    kind = "postgresql"

    def __init__(
        self,
        url: str,
        *,
        read_only: bool = False,
        patience: float = DEFAULT_PATIENCE,
        pool_min: int = 1,
        pool_max: int = 10,
    ) -> None:
        if psycopg is None:
            raise StoreUnavailableError(
                "A postgresql:// state URL needs psycopg: install hermes-agent-runtime[postgres] "
                "(pip install 'hermes-agent-runtime[postgres]')."
            )
        self._url = url
        self._server = _Server(url)
        self.location = self._server.location
        self.read_only = read_only
        self.patience = patience
        self._pid = os.getpid()
        self._closed = False
        self._connect_kwargs = self._kwargs()
        self._probe()
        self._pool = ConnectionPool(
            url,
            connection_class=Connection,
            min_size=pool_min,
            max_size=max(pool_min, pool_max),
            kwargs=self._connect_kwargs,
            configure=self._configure,
            open=False,
            name=f"hermes-state {self._server.label}",
            timeout=patience,
        )
        self._pool.open(wait=False)
        self._statements = StatementConnection(self)
        self.turn_locks = AdvisoryTurnLocks(
            lambda: psycopg.connect(url, **self._connect_kwargs), self._turn_lock_failed
        )

    def __repr__(self) -> str:
        return f"PostgresBackend({self.location!r}, read_only={self.read_only})"

    @property
    def conn(self) -> StatementConnection:
        return self._statements

    # -- opening --------------------------------------------------------------------

    def _kwargs(self) -> dict[str, Any]:
        # Only defaults the URL leaves unset: its own parameters reach libpq unchanged.
        kwargs: dict[str, Any] = {"autocommit": True, "row_factory": dict_row}
        if "connect_timeout" not in self._server.params:
            kwargs["connect_timeout"] = CONNECT_TIMEOUT
        if "application_name" not in self._server.params:
            kwargs["application_name"] = "hermes"
        return kwargs

    def _configure(self, conn: Connection) -> None:
        if self.read_only:
            conn.execute("SET default_transaction_read_only = on")

    def _probe(self) -> None:
        """Connect once, so that an unreachable server fails now, with libpq's reason."""
        try:
            psycopg.connect(self._url, **self._connect_kwargs).close()
        except psycopg.Error as exc:
            raise self._unreachable(exc) from None

    def _turn_lock_failed(self, exc: psycopg.Error) -> StateError:
        if isinstance(exc, psycopg.OperationalError):
            return self._unreachable(exc)
        reason = redact(_reason(exc))
        return StateError(f"The turn locks at PostgreSQL {self._server.label} failed: {reason}.")

    def _unreachable(self, exc: BaseException) -> StateError:
        reason = redact(_reason(exc))
        return diagnose.postgres_connect_failed(self._server.label, reason).error()

    # -- transactions ---------------------------------------------------------------

    def transact(self, fn: Callable[[PostgresTx], T], *, write: bool) -> T:
        self._check_usable()
        if write and self.read_only:
            raise ReadOnlyStoreError(self.location)
        deadline = time.monotonic() + self.patience
        return retry_until(
            deadline,
            lambda: self._attempt(fn, write, deadline),
            transient=_Transient,
            give_up=lambda transient: self._gave_up(transient, write),
            backoff=_BACKOFF,
        )

    def _check_usable(self) -> None:
        if self._closed:
            raise StateError(f"The state store {self.location} is closed.")
        if self._pid != os.getpid():
            raise StateError(
                "A SessionDB cannot be used across fork(); open a new one in the child."
            )

    def _attempt(self, fn: Callable[[PostgresTx], T], write: bool, deadline: float) -> T:
        conn = self._getconn(deadline)
        try:
            self._begin(conn, write, deadline)
            try:
                result = fn(PostgresTx(conn))
            except BaseException:
                _rollback_quietly(conn)
                raise
            self._commit(conn, write)
            return result
        except psycopg.Error as exc:
            raise self._classify(exc, conn) from exc
        finally:
            self._pool.putconn(conn)

    def _getconn(self, deadline: float) -> Connection:
        try:
            return self._pool.getconn(timeout=max(0.05, deadline - time.monotonic()))
        except PoolClosed:
            raise StateError(f"The state store {self.location} is closed.") from None
        except PoolTimeout as exc:
            raise self._no_connection(exc) from None

    def _no_connection(self, exc: PoolTimeout) -> StateError:
        """Why the pool had nothing to give: the server is gone, or every one is busy."""
        try:
            psycopg.connect(self._url, **{**self._connect_kwargs, "connect_timeout": 5}).close()
        except psycopg.Error as probe:
            return self._unreachable(probe)
        return StoreBusyError(
            f"No connection to PostgreSQL at {self._server.label} came free within "
            f"{self.patience:.0f} s: all {self._pool.max_size} pooled connections stayed busy. "
            "Look for stuck threads, or allow more connections."
        )

    def _begin(self, conn: Connection, write: bool, deadline: float) -> None:
        # A lock wait never outlasts the patience left: it fails with 55P03, is retried,
        # and the retry loop gives up on time.
        wait_ms = max(1, int((deadline - time.monotonic()) * 1000))
        mode = "READ WRITE" if write else "READ ONLY"
        conn.execute(
            f"BEGIN ISOLATION LEVEL READ COMMITTED {mode}; SET LOCAL lock_timeout = {wait_ms}",
            prepare=False,
        )

    def _commit(self, conn: Connection, write: bool) -> None:
        try:
            conn.execute("COMMIT", prepare=False)
        except psycopg.Error as exc:
            if write and _connection_lost(exc, conn):
                # The server may have committed before the connection died: retrying
                # could apply the write twice, so say so instead.
                raise StoreUnavailableError(
                    f"Lost the connection to PostgreSQL at {self._server.label} while "
                    "committing; the last write may or may not have been saved "
                    f"({redact(_reason(exc))}). Check the server and try again."
                ) from exc
            raise

    def _classify(self, exc: psycopg.Error, conn: Connection) -> Exception:
        """A ``_Transient`` to retry, or the ``StateError`` to raise."""
        state = exc.sqlstate or ""
        label = self._server.label
        reason = redact(_reason(exc))
        if _connection_lost(exc, conn) or state in _DOWN_STATES:
            return _Transient(exc, busy=False)
        if state in _BUSY_STATES:
            return _Transient(exc, busy=True)
        if state == "25006":  # read_only_sql_transaction
            return ReadOnlyStoreError(self.location)
        if state == "57014":  # query_canceled: statement_timeout or a cancel request
            return StoreBusyError(f"PostgreSQL at {label} cancelled a statement: {reason}.")
        if state == "42501":  # insufficient_privilege
            return StoreUnavailableError(
                f"PostgreSQL at {label} refused: {reason}. Grant the role of state.url the "
                "needed rights, or use another role."
            )
        if state.startswith("23"):  # integrity constraint violation
            return StateError(f"The state store at PostgreSQL {label} refused a write: {reason}.")
        return StateError(f"The state store at PostgreSQL {label} failed: {reason}.")

    def _gave_up(self, transient: _Transient, write: bool) -> StateError:
        reason = redact(_reason(transient.error))
        label = self._server.label
        if transient.busy:
            what = "write to" if write else "read from"
            return StoreBusyError(
                f"Could not {what} PostgreSQL at {label}: other writers kept conflicting for "
                f"over {self.patience:.0f} s ({reason}). Try again; if it persists, look for "
                "long transactions in pg_stat_activity or a stuck hermes process."
            )
        return StoreUnavailableError(
            f"Lost PostgreSQL at {label} and could not get it back within "
            f"{self.patience:.0f} s ({reason}). Check state.url / HERMES_STATE_URL and that the "
            "server runs."
        )

    # -- schema ---------------------------------------------------------------------

    def schema_version(self) -> int:
        def read(tx: PostgresTx) -> int:
            row = tx.one("SELECT to_regclass('schema_version') IS NOT NULL AS present")
            if not row or not row["present"]:
                return 0
            row = tx.one("SELECT MAX(version) AS v FROM schema_version")
            return int(row["v"] or 0) if row else 0

        return self.transact(read, write=False)

    def migrate(self) -> None:
        migrations.bring_up_to_date(self, MIGRATIONS, runner=_SerialMigrations(self))

    def in_place(self) -> bool:
        return True  # a server's database cannot be unlinked under a connection

    def ping(self, timeout: float) -> None:
        # A connection of its own: the pool would wait out the patience for one.
        self._check_usable()
        kwargs = {**self._connect_kwargs, "connect_timeout": max(1, round(timeout))}
        try:
            with psycopg.connect(self._url, **kwargs) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            raise self._unreachable(exc) from None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.turn_locks.close()
        self._pool.close()


class _SerialMigrations:
    """The backend as ``migrations.apply`` sees it: each migration under one advisory lock.

    Several processes opening a new store at once take turns; the later ones find the
    migration recorded and apply nothing. The lock is released at commit or rollback.
    """

    def __init__(self, backend: PostgresBackend) -> None:
        self._backend = backend
        self.location = backend.location

    def schema_version(self) -> int:
        return self._backend.schema_version()

    def transact(self, fn: Callable[[PostgresTx], T], *, write: bool) -> T:
        def locked(tx: PostgresTx) -> T:
            tx.run("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            return fn(tx)

        return self._backend.transact(locked, write=write)


def _connection_lost(exc: psycopg.Error, conn: Connection) -> bool:
    state = exc.sqlstate or ""
    return (
        conn.broken
        or conn.closed
        or state.startswith("08")
        or (
            not state
            and isinstance(exc, psycopg.OperationalError)
            and not isinstance(exc, psycopg.errors.PipelineAborted)
        )
    )


def _rollback_quietly(conn: Connection) -> None:
    if conn.broken or conn.closed:
        return
    if conn.pgconn.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
        try:
            conn.execute("ROLLBACK", prepare=False)
        except psycopg.Error:
            pass  # the pool discards a connection it cannot reset


if TYPE_CHECKING:  # mypy checks here that this backend satisfies the seam's protocol
    _satisfies_backend: type[Backend] = PostgresBackend
