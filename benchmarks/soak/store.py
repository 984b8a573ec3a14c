"""Where the soak's store lives: a SQLite file or a fresh PostgreSQL schema, named by
one string a worker process can be given on its command line."""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hermes.state import SessionDB

PG_ENV = "HERMES_TEST_PG_URL"


def is_postgres(location: str) -> bool:
    return location.startswith(("postgres://", "postgresql://"))


def open_db(location: str) -> SessionDB:
    """A SessionDB on the soak's store (``location``: a file path or a PostgreSQL URL)."""
    if is_postgres(location):
        return SessionDB(url=location)
    return SessionDB(db_path=location)


def raw(location: str) -> Any:
    """A raw autocommit DB-API connection, behind the store's back."""
    if is_postgres(location):
        import psycopg

        return psycopg.connect(location, autocommit=True)
    return sqlite3.connect(location, isolation_level=None, timeout=30)


def query(location: str, sql: str) -> list[tuple]:
    """Rows of one read (``sql`` without parameters) on a short-lived raw connection."""
    conn = raw(location)
    try:
        return [tuple(row) for row in conn.execute(sql).fetchall()]
    finally:
        conn.close()


@contextlib.contextmanager
def fresh_store(backend: str, workdir: Path, pg_url: str | None) -> Iterator[str]:
    """A new, empty store for one soak; a PostgreSQL schema is dropped afterwards."""
    if backend == "sqlite":
        yield str(workdir / "state.db")
        return
    if not pg_url:
        raise SystemExit(
            f"The postgres soak needs {PG_ENV}: run it as "
            "`bash scripts/with-postgres .venv/bin/python -m benchmarks.soak --backend postgres`."
        )
    import psycopg

    schema = f"soak_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        with contextlib.suppress(psycopg.errors.UniqueViolation):
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
        conn.execute(f"CREATE SCHEMA {schema}")
    joiner = "&" if "?" in pg_url else "?"
    try:
        yield f"{pg_url}{joiner}options=-csearch_path%3D{schema},public"
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
