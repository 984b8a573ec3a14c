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
