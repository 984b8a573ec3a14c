"""Both backends hold the same data model: every table and column of one is in the other.

The two schemas are written per dialect (schema_sqlite.py, schema_postgres.py), so a
migration added to one and forgotten in the other would otherwise pass every test that
happens not to read the new column. Views count, since readers query them like tables
(PostgreSQL lists their columns too). Search indexes are the one allowed difference: each
engine keeps its own (FTS5 tables on SQLite, a trigram index on PostgreSQL).
"""

from __future__ import annotations

from pathlib import Path

from hermes.state import SessionDB
from tests.stores import postgres_store


def _sqlite_columns(path: Path) -> dict[str, set[str]]:
    with SessionDB(db_path=str(path)) as db:
        conn = db._conn
        tables = [
            row["name"]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'"
                " AND name NOT LIKE 'messages_fts%' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {t: {row["name"] for row in conn.execute(f"PRAGMA table_info({t})")} for t in tables}


def _postgres_columns() -> dict[str, set[str]]:
    with postgres_store() as spec:
        SessionDB(url=spec.url).close()  # creates and migrates the schema
        rows = spec.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema()"
        )
    tables: dict[str, set[str]] = {}
    for table, column in rows:
        tables.setdefault(table, set()).add(column)
    return tables


def test_both_backends_have_the_same_tables_and_columns(tmp_path: Path) -> None:
    sqlite, postgres = _sqlite_columns(tmp_path / "state.db"), _postgres_columns()
    assert sorted(sqlite) == sorted(postgres)
    for table in sqlite:
        assert sqlite[table] == postgres[table], table
