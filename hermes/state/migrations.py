"""Numbered, forward-only migrations, each applied with its record in one transaction.

A backend lists its migrations as ``Migration`` values; ``apply`` runs the pending
ones. It reads first and writes only when something is pending, so opening an
up-to-date store never writes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from hermes.state import diagnose
from hermes.state.backend import Backend, Tx

# The one table every store has before its first migration: the record of migrations.
VERSION_TABLE = """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at DOUBLE PRECISION NOT NULL
)"""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


def bring_up_to_date(
    backend: Backend, migrations: Sequence[Migration], *, runner: Backend | None = None
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


def apply(backend: Backend, migrations: Sequence[Migration]) -> list[int]:
    """Apply every migration newer than the store; return the versions applied."""
    latest = migrations[-1].version
    current = backend.schema_version()
    if current > latest:
        raise diagnose.newer_schema(backend.location, current, latest).error()
    applied = []
    for migration in migrations:
        if migration.version <= current:
            continue
        if backend.transact(lambda tx, m=migration: _apply_one(tx, m), write=True):
            applied.append(migration.version)
    return applied


def _apply_one(tx: Tx, migration: Migration) -> bool:
    tx.run(VERSION_TABLE)
    # Another process may have applied it while we waited for the write lock.
    row = tx.one("SELECT MAX(version) AS v FROM schema_version")
    if row and (row["v"] or 0) >= migration.version:
        return False
    for statement in migration.statements:
        tx.run(statement)
    tx.run(
        "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
        (migration.version, migration.name, time.time()),
    )
    return True
