"""The store fixtures every suite may use: one store per test, on SQLite and PostgreSQL.

``store`` is parametrised over both backends: a fresh, empty store (a file for SQLite,
a schema of its own for PostgreSQL) as a picklable ``StoreSpec``, so threads and
``multiprocessing`` children can open their own ``SessionDB`` on it; pin one backend
with ``@pytest.mark.parametrize("store", ["postgres"], indirect=True)``. ``make_db``
opens ``SessionDB``s on it, all closed at teardown.

``tests/conftest.py`` loads this module as a plugin (``pytest_plugins``), so these
fixtures need no import. The PostgreSQL parameters need ``HERMES_TEST_PG_URL`` (``make
test`` starts a throwaway server and sets it). Without it they skip with one reason that
says how to run them, except under CI (``CI=true``), where they fail: CI must test both
backends.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.state import SessionDB
from tests.state.helpers import StoreSpec

PG_ENV = "HERMES_TEST_PG_URL"
BACKENDS = ["sqlite", "postgres"]


class DBFactory:
    """``make_db()`` opens another ``SessionDB`` on the test's store; all close at teardown."""

    def __init__(self, spec: StoreSpec) -> None:
        self.spec = spec
        self.opened: list[SessionDB] = []

    def __call__(self, **kwargs: Any) -> SessionDB:
        db = self.spec.open(**kwargs)
        self.opened.append(db)
        return db

    def close_all(self) -> None:
        for db in reversed(self.opened):
            db.close()


PG_MISSING = (
    "PostgreSQL not available: run `make test` (it starts one) or set "
    f"{PG_ENV} (e.g. `bash scripts/with-postgres .venv/bin/pytest ...`)"
)


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def pg_url() -> str:
    """The test server's URL; without one, skip the test (fail it under CI)."""
    url = os.environ.get(PG_ENV)
    if url:
        return url
    if under_ci():
        pytest.fail(f"{PG_MISSING}; CI runs the PostgreSQL tests, so this fails.", pytrace=False)
    pytest.skip(PG_MISSING)


def with_search_path(url: str, schema: str) -> str:
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options=-csearch_path%3D{schema},public"


_trgm_ready = False


def _ensure_pg_trgm(url: str) -> None:
    global _trgm_ready
    if _trgm_ready:
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
        except psycopg.errors.UniqueViolation:
            pass  # another test process created it at the same moment
    _trgm_ready = True


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    """A fresh, empty store on the parametrised backend."""
    if request.param == "sqlite":
        yield StoreSpec("sqlite", path=str(tmp_path / "state.db"))
        return
    with postgres_store() as spec:
        yield spec


@contextlib.contextmanager
def postgres_store() -> Iterator[StoreSpec]:
    """A fresh, empty PostgreSQL store: a schema of its own, dropped afterwards."""
    base = pg_url()
    import psycopg

    _ensure_pg_trgm(base)
    schema = f"t_{uuid.uuid4().hex}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield StoreSpec("postgres", url=with_search_path(base, schema))
    finally:
        _drop_schema(psycopg, base, schema)


def _drop_schema(psycopg: Any, base: str, schema: str) -> None:
    """Drop the test's schema; a process the test started may still be letting go of its
    locks (PostgreSQL then aborts one side as a deadlock): try again shortly."""
    for attempt in range(5):
        try:
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            return
        except psycopg.errors.DeadlockDetected:
            if attempt == 4:
                raise
            time.sleep(0.5)


@pytest.fixture
def make_db(store: StoreSpec) -> Iterator[DBFactory]:
    factory = DBFactory(store)
    try:
        yield factory
    finally:
        factory.close_all()
