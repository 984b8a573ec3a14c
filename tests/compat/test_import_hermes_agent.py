"""`hermes import hermes-agent` against a state.db written by a real Hermes Agent 0.19.

The package is installed into a throwaway venv (cached under /tmp by version); the
test skips only when pip cannot get it, and HERMES_REQUIRE_HERMES_AGENT=1 (set by
.ci/run) turns that skip into a failure.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.compat import importer
from hermes.compat.session_db import SessionDB
from tests.compat.hermes_agent import build_store, check_imported

HERMES = str(Path(sys.executable).parent / "hermes")


def started_at(path: Path) -> dict[str, float]:
    with sqlite3.connect(path) as conn:
        found = dict(conn.execute("SELECT id, started_at FROM sessions"))
    conn.close()
    return found


def hermes(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([HERMES, *args], capture_output=True, text=True)


@pytest.mark.hermes_agent
def test_a_real_hermes_agent_store_is_imported_exactly_once(hermes_agent_python, tmp_path, hermes_home) -> None:  # fmt: skip
    source = tmp_path / "ha" / "state.db"
    rows = build_store(hermes_agent_python, source)
    started = started_at(source)
    before = (source.read_bytes(), source.stat().st_mtime_ns, sorted(source.parent.iterdir()))

    dry = hermes("import", "hermes-agent", "--dry-run", str(source))
    assert dry.returncode == 0, dry.stderr
    assert f"Would import 3 new sessions and {len(rows)} new messages" in dry.stdout
    assert not (hermes_home / "state.db").exists()  # a dry run changes nothing

    first = hermes("import", "hermes-agent", str(source))
    assert first.returncode == 0, first.stderr
    assert f"{len(rows)} new messages" in first.stdout and "Verified" in first.stdout

    db = SessionDB(db_path=hermes_home / "state.db")
    try:
        check_imported(db, rows)
        root = db.get_session("root")
        assert root["title"] == "Trip planning" and root["user_id"] == "u1"
        assert root["started_at"] == started["root"]  # its own time, not the import's
    finally:
        db.close()

    dry_again = hermes("import", "hermes-agent", "--dry-run", str(source))
    assert "Nothing to import" in dry_again.stdout, dry_again.stderr
    second = hermes("import", "hermes-agent", str(source))
    assert second.returncode == 0, second.stderr
    assert "Nothing to import" in second.stdout
    assert (source.read_bytes(), source.stat().st_mtime_ns, sorted(source.parent.iterdir())) == before  # fmt: skip


@pytest.mark.hermes_agent
def test_in_place_compactions_come_over_as_history_on_both_backends(hermes_agent_python, tmp_path, store) -> None:  # fmt: skip
    source = tmp_path / "ha" / "state.db"
    rows = build_store(hermes_agent_python, source)
    conn = importer.open_source(source)
    db = SessionDB(db_path=store.path, url=store.url)
    try:
        report = importer.import_store(conn, db)
        assert report.new_messages == len(rows)
        check_imported(db, rows)
        again = importer.import_store(conn, db)
        assert (again.new_sessions, again.new_messages) == (0, 0)
        check_imported(db, rows)
    finally:
        db.close()
        conn.close()
