"""Numbered, forward-only migrations, each applied with its record in one transaction.

A backend lists its migrations as ``Migration`` values; ``apply`` runs the pending
ones. It reads first and writes only when something is pending, so opening an
up-to-date store never writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

from hermes.state import diagnose
from hermes.state.backend import Backend, Tx

T = TypeVar("T")

# The one table every store has before its first migration: the record of migrations.
VERSION_TABLE = """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at DOUBLE PRECISION NOT NULL
)"""


class MigrationTarget(Protocol):
    """All ``apply`` needs of a backend: a backend itself, or a wrapper that runs each
    migration's transaction its own way (PostgreSQL's under an advisory lock)."""

    @property
    def location(self) -> str: ...

    def schema_version(self) -> int: ...

    def transact(self, fn: Callable[[Tx], T], *, write: bool) -> T: ...


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]
    # A step SQL alone cannot say (text the search index needs tokenised by hermes),
    # run after the statements in the same transaction.
    then: Callable[[Tx], None] | None = None


def bring_up_to_date(
    backend: Backend,
    migrations: Sequence[Migration],
    *,
    runner: MigrationTarget | None = None,
) -> list[int]:
    """What every backend's ``migrate`` does: nothing (no write) when the store is
    current, a clear refusal when it is newer or read-only, else ``apply``.

    ``runner`` is the backend the migration transactions run on, when it differs
    (PostgreSQL serialises them under an advisory lock).
    """
    current, latest = backend.schema_version(), migrations[-1].version
    if current == latest:
        return []
    if current < latest and backend.read_only:
        raise diagnose.older_schema(backend.location, current, latest).error()
    return apply(runner or backend, migrations)


def apply(backend: MigrationTarget, migrations: Sequence[Migration]) -> list[int]:
    """Apply every migration newer than the store; return the versions applied."""
    latest = migrations[-1].version
    current = backend.schema_version()
    if current > latest:
        raise diagnose.newer_schema(backend.location, current, latest).error()
    applied = []
    for migration in migrations:
        if migration.version <= current:
            continue
        if backend.transact(partial(_apply_one, migration=migration), write=True):
            applied.append(migration.version)
    return applied


def _apply_one(tx: Tx, *, migration: Migration) -> bool:
    tx.run(VERSION_TABLE)
    # Another process may have applied it while we waited for the write lock.
    row = tx.one("SELECT MAX(version) AS v FROM schema_version")
    if row and (row["v"] or 0) >= migration.version:
        return False
    for statement in migration.statements:
        tx.run(statement)
    if migration.then is not None:
        migration.then(tx)
    tx.run(
        "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
        (migration.version, migration.name, time.time()),
    )
    return True
