"""Numbered, forward-only migrations, each in one transaction (invariant 10)."""

from __future__ import annotations

import pytest

from hermes.state import SessionDB, StateError
from hermes.state.postgres import schema as schema_postgres
from hermes.state.schema import migrations
from hermes.state.schema.migrations import Migration
from hermes.state.sqlite import schema as schema_sqlite

from .helpers import StoreSpec, raw_all


def _versions(db: SessionDB) -> list[dict]:
    return raw_all(db, "SELECT version, name, applied_at FROM schema_version ORDER BY version")


def _table_exists(db: SessionDB, name: str) -> bool:
    try:
        db._read(lambda tx: tx.one(f"SELECT COUNT(*) AS n FROM {name}"))
    except Exception:
        return False
    return True


def test_a_new_store_is_migrated_to_the_latest_version(db: SessionDB) -> None:
    rows = _versions(db)
    # Every migration either backend declares, once each, in order (the two lists agree).
    declared = [m.version for m in schema_sqlite.MIGRATIONS]
    assert declared == [m.version for m in schema_postgres.MIGRATIONS] == sorted(set(declared))
    assert [r["version"] for r in rows] == declared
    assert db.backend.schema_version() == rows[-1]["version"] >= 1
    for table in ("sessions", "messages", "compression_locks", "gateway_routes"):
        assert _table_exists(db, table), table


def test_reopening_an_up_to_date_store_applies_nothing(make_db) -> None:
    first = make_db()
    first.create_session("s", source="cli")
    before = _versions(first)
    first.close()
    again = make_db()
    assert _versions(again) == before
    assert again.get_session("s") is not None


def test_a_store_with_only_the_version_table_is_migrated(store: StoreSpec) -> None:
    store.execute(migrations.VERSION_TABLE)  # e.g. a first run that stopped right there
    with store.open() as db:
        assert db.backend.schema_version() >= 1
        db.create_session("s", source="cli")


# Regression (found by this suite; fixed in 22687ea): SQLiteBackend.migrate() returned
# early when the stored version was >= the newest it knew, so a database written by a
# newer hermes was opened (and written to) without a word.
def test_a_store_newer_than_the_code_is_refused(make_db) -> None:
    db = make_db()
    newer = db.backend.schema_version() + 1
    db._write(
        lambda tx: tx.run(
            "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
            (newer, "from the future", 0.0),
        )
    )
    db.close()
    with pytest.raises(StateError, match="newer"):
        make_db()


def test_a_failing_migration_rolls_back_and_a_rerun_applies_each_once(db: SessionDB) -> None:
    current = db.backend.schema_version()
    done = Migration(current, "current", ())
    broken = Migration(
        current + 1, "broken", ("CREATE TABLE extra_a (x INTEGER)", "NOT SQL AT ALL")
    )
    with pytest.raises(Exception):  # noqa: B017 - the engine's syntax error
        migrations.apply(db.backend, [done, broken])
    assert db.backend.schema_version() == current
    assert not _table_exists(db, "extra_a")

    fixed = Migration(current + 1, "fixed", ("CREATE TABLE extra_a (x INTEGER)",))
    assert migrations.apply(db.backend, [done, fixed]) == [current + 1]
    assert migrations.apply(db.backend, [done, fixed]) == []
    assert _table_exists(db, "extra_a")
    assert [r["name"] for r in _versions(db)][-1] == "fixed"


def test_apply_refuses_a_store_newer_than_the_migrations(db: SessionDB) -> None:
    current = db.backend.schema_version()
    with pytest.raises(StateError, match="newer"):
        migrations.apply(db.backend, [Migration(current - 1, "old", ())])
