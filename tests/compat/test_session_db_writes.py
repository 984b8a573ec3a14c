"""hermes_state.SessionDB's raw-write names third-party code calls: ``_execute_write``
(hermes-webui sets a message count with it) and ``close()`` leaving ``_conn`` None
(hermes-webui's test for "this handle is still open"), on both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes.state.errors import StateError
from hermes_state import SessionDB


def compat_db(spec: Any) -> SessionDB:
    """hermes_state.SessionDB on the test's store (SQLite file or PostgreSQL schema)."""
    return SessionDB(db_path=spec.path) if spec.kind == "sqlite" else SessionDB(url=spec.url)


def test_execute_write_runs_its_function_in_one_transaction(store: Any) -> None:
    db = compat_db(store)
    try:
        db.create_session("s1", "webui")

        def set_count(conn: Any) -> int:
            conn.execute("UPDATE sessions SET message_count = ? WHERE id = ?", (7, "s1"))
            row = conn.execute("SELECT message_count FROM sessions WHERE id = ?", ("s1",))
            return int(row.fetchone()["message_count"])

        assert db._execute_write(set_count) == 7

        def half_done(conn: Any) -> None:
            conn.execute("UPDATE sessions SET message_count = 99 WHERE id = ?", ("s1",))
            raise RuntimeError("changed my mind")

        with pytest.raises(RuntimeError):
            db._execute_write(half_done)
        assert db.get_session("s1")["message_count"] == 7
    finally:
        db.close()


def test_a_commit_inside_execute_write_does_not_end_the_transaction(tmp_path: Path) -> None:
    """0.19's callers must not commit; one that does must not break the store's own."""
    with SessionDB(db_path=tmp_path / "state.db") as db:
        db.create_session("s1", "cli")

        def committing(conn: Any) -> None:
            conn.execute("UPDATE sessions SET title = 'T' WHERE id = 's1'")
            conn.commit()

        db._execute_write(committing)
        assert db.get_session("s1")["title"] == "T"


def test_a_closed_session_db_has_no_conn_and_refuses_clearly(tmp_path: Path) -> None:
    db = SessionDB(db_path=tmp_path / "state.db")
    db.create_session("s1", "cli")
    assert db._conn is not None
    db.close()
    assert db._conn is None
    with pytest.raises(StateError, match="is closed"):
        db.get_session("s1")
    with SessionDB(db_path=tmp_path / "state.db") as again:  # a new one opens it
        assert again.get_session("s1") is not None
