"""One diagnosis of a broken store, the same from every command and from `hermes doctor`.

Each case plants a store problem in HERMES_HOME and runs the real `hermes` command:
the sentence names the problem itself (never "needs an upgrade" for a file that is not
a hermes store), doctor gives the problem's own fix once, and nothing is written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.cli.helpers import assert_one_line_error, doctor_lines


def _foreign(path: Path) -> None:
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE bookmarks (url TEXT)")
    raw.execute("CREATE TABLE moz_places (id INTEGER)")
    raw.commit()
    raw.close()


def _garbage(path: Path) -> None:
    path.write_bytes(b"garbage" * 1000)


def _empty(path: Path) -> None:
    path.touch()


PLANTED = {
    "foreign": (_foreign, "another program (tables: bookmarks, moz_places)"),
    "not-sqlite": (_garbage, "is not a SQLite database at all"),
    "empty": (_empty, "is an empty file"),
}


@pytest.fixture(params=sorted(PLANTED))
def planted(request, cli_env) -> tuple[Path, str]:
    plant, words = PLANTED[request.param]
    db = cli_env.home / "state.db"
    plant(db)
    db.chmod(0o600)
    return db, words


@pytest.mark.parametrize("command", [("sessions", "list"), ("sessions", "search", "zebra")])
def test_read_only_commands_name_the_problem(hermes, planted, command):
    db, words = planted
    before = db.read_bytes()
    result = hermes(*command)
    assert_one_line_error(result, words)
    assert "upgrade" not in result.stderr
    assert db.read_bytes() == before


def test_migrate_names_the_problem_of_its_source(hermes, planted, tmp_path):
    db, words = planted
    result = hermes("migrate", "--from", str(db), "--to", str(tmp_path / "copy.db"))
    assert_one_line_error(result, words)
    assert "upgrade" not in result.stderr


def test_doctor_names_the_problem_and_says_its_fix_once(hermes, planted):
    db, words = planted
    before = db.read_bytes()
    result = hermes("doctor", "--offline")
    line = doctor_lines(result)["store"]
    assert words in line and "upgrade" not in line
    # Every sentence of the line appears once (the garbage file used to say it twice).
    sentences = [s.strip() for s in line.replace("Fix:", ".").split(". ") if s.strip()]
    assert len(sentences) == len(set(sentences)), line
    assert db.read_bytes() == before


def test_doctor_gives_each_problem_its_own_fix(hermes, cli_env):
    db = cli_env.home / "state.db"
    fixes = {}
    for name, (plant, _) in PLANTED.items():
        db.unlink(missing_ok=True)
        plant(db)
        fixes[name] = doctor_lines(hermes("doctor", "--offline"))["store"]
    assert "Fix: Point hermes at another file" in fixes["foreign"]
    assert "Fix: If it holds nothing you need, move it aside" in fixes["not-sqlite"]
    assert fixes["empty"].startswith("--") and "hermes chat" in fixes["empty"]


def test_doctor_on_an_unreachable_postgres_says_check_the_server_not_restore(hermes, cli_env):
    cli_env.vars["HERMES_STATE_URL"] = "postgresql://hermes@127.0.0.1:9/hermes"
    result = hermes("doctor", "--offline")
    assert result.returncode == 1
    line = doctor_lines(result)["store"]
    assert line.startswith("FAIL") and "Cannot reach PostgreSQL at 127.0.0.1:9/hermes" in line
    assert "Fix: Check the host and port" in line
    assert "backup" not in line and "move it aside" not in line


def test_doctor_on_an_older_schema_says_how_to_upgrade(hermes, cli_env):
    db = cli_env.home / "state.db"
    raw = sqlite3.connect(db)
    raw.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT,"
                " applied_at REAL)")  # fmt: skip
    raw.execute("INSERT INTO schema_version VALUES (1, 'first', 0)")
    raw.commit()
    raw.close()
    line = doctor_lines(hermes("doctor", "--offline"))["store"]
    assert line.startswith("FAIL") and "needs an upgrade (schema 1" in line
    assert "Fix: Run any hermes command that writes" in line and "backup" not in line
