"""`hermes import hermes-agent` refuses what is not a Hermes Agent store: one sentence, exit 2."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

HERMES = str(Path(sys.executable).parent / "hermes")


def other_program_db(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.close()


@pytest.mark.parametrize(
    "make",
    [
        lambda p: p.write_text("just some notes\n" * 20),
        lambda p: p.write_bytes(b""),
        other_program_db,
    ],
    ids=["not-sqlite", "empty", "other-program"],
)
def test_a_file_that_is_not_a_hermes_agent_store_is_refused(make, tmp_path, hermes_home) -> None:
    source = tmp_path / "state.db"
    make(source)
    before = source.read_bytes()
    done = subprocess.run([HERMES, "import", "hermes-agent", str(source)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2
    assert "is not a" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert source.read_bytes() == before
    assert not (hermes_home / "state.db").exists()


def hermes_agent_shaped_db(path: Path, *, timestamp: object = 1.0, session_id: str = "s1") -> None:
    """The tables and columns the importer reads, as Hermes Agent names them."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (22)")
        conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, parent_session_id"
                     " TEXT, end_reason TEXT, started_at REAL, ended_at REAL, title TEXT)")  # fmt: skip
        conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT,"
                     " content TEXT, timestamp REAL, active INTEGER, compacted INTEGER)")  # fmt: skip
        conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('s1', 'cli', 1.0)")
        conn.execute("INSERT INTO messages VALUES (1, ?, 'user', 'hi', ?, 1, 0)",
                     (session_id, timestamp))  # fmt: skip
    conn.close()


@pytest.mark.parametrize(
    ("craft", "words"),
    [
        ({"timestamp": "yesterday"}, "timestamp is 'yesterday'"),
        ({"timestamp": b"\x00\x01"}, "timestamp is"),
        ({"session_id": "nowhere"}, "of a session it does not hold"),
    ],
    ids=["text-time", "blob-time", "orphan-message"],
)
def test_rows_hermes_agent_does_not_write_are_refused_before_anything_is_stored(
    craft, words, tmp_path, hermes_home
) -> None:
    source = tmp_path / "state.db"
    hermes_agent_shaped_db(source, **craft)
    before = source.read_bytes()
    done = subprocess.run([HERMES, "import", "hermes-agent", str(source)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr
    assert "nothing was changed" in done.stderr
    assert source.read_bytes() == before
    assert not (hermes_home / "state.db").exists()


def test_a_well_formed_hermes_agent_shaped_db_imports(tmp_path, hermes_home) -> None:
    source = tmp_path / "state.db"
    hermes_agent_shaped_db(source)
    done = subprocess.run([HERMES, "import", "hermes-agent", str(source)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Imported 1 new sessions and 1 new messages" in done.stdout
