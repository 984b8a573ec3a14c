"""`hermes migrate` run as a person would: SQLite -> PostgreSQL -> SQLite, and its errors.

The PostgreSQL store is a fresh schema from the shared ``store`` fixture (``tests/stores.py``,
pinned to PostgreSQL); without ``HERMES_TEST_PG_URL`` those tests skip (fail under CI):
run them with ``make test`` or ``bash scripts/with-postgres .venv/bin/pytest tests/cli``.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from hermes.state import SessionDB
from hermes.state.copy import message_checksum
from hermes.testing.ports import free_port
from tests.cli.helpers import Compressed, Env, Run, assert_one_line_error, hermes_command
from tests.state.helpers import StoreSpec

on_postgres = pytest.mark.parametrize("store", ["postgres"], indirect=True)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def reported_checksum(stdout: str) -> str:
    match = re.search(r"message checksum\s+sha256:([0-9a-f]{64})", stdout)
    assert match, stdout
    return match.group(1)


def reported_counts(stdout: str) -> dict[str, int]:
    return {m[0]: int(m[1]) for m in re.findall(r"^\s+([a-z_]+)\s+(\d+)$", stdout, re.M)}


@on_postgres
def test_sqlite_to_postgres_and_back(
    hermes: Run,
    cli_env: Env,
    compressed: Compressed,
    store: StoreSpec,
) -> None:
    before = digest(compressed.db_path)
    with SessionDB(db_path=compressed.db_path, read_only=True) as db:
        checksum = message_checksum(db)
        conversations = db.list_conversations()
    listed = json.loads(hermes("sessions", "list", "--json").stdout)

    there = hermes("migrate", "--from", str(compressed.db_path), "--to", store.url)
    assert there.returncode == 0, there.stderr
    assert reported_checksum(there.stdout) == checksum
    assert reported_counts(there.stdout) == {
        "sessions": 3, "messages": 9, "blobs": 0, "compression_locks": 0, "segment_coverage": 0,
        "history_digests": 0, "gateway_routes": 0,
        "gateway_queue": 0, "webhook_deliveries": 0, "session_model_usage": 0, "state_meta": 0,
        "cron_jobs": 0, "cron_runs": 0, "cron_outbox": 0,
    }  # fmt: skip
    assert "messages: 9/9" in there.stderr  # a line per batch when stderr is no terminal
    assert digest(compressed.db_path) == before

    back_path = cli_env.home / "back.db"
    back = hermes("migrate", "--from", store.url, "--to", str(back_path))
    assert back.returncode == 0, back.stderr
    assert reported_checksum(back.stdout) == checksum
    with SessionDB(db_path=back_path, read_only=True) as db:
        assert db.list_conversations() == conversations
        assert message_checksum(db) == checksum

    # The other commands work against the PostgreSQL store.
    cli_env.vars["HERMES_STATE_URL"] = store.url
    assert json.loads(hermes("sessions", "list", "--json").stdout) == listed
    shown = hermes("sessions", "show", compressed.root)
    assert shown.returncode == 0, shown.stderr
    assert "Giraffes have long necks." in shown.stdout
    hits = json.loads(hermes("sessions", "search", "zebras", "--json").stdout)
    assert {h["session_id"] for h in hits} == {compressed.root}
    doctor = hermes("doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "invariants: no forked conversation" in doctor.stdout


@on_postgres
def test_a_non_empty_target_is_one_sentence_and_nothing_changes(
    hermes: Run,
    compressed: Compressed,
    store: StoreSpec,
) -> None:
    assert hermes("migrate", "--from", str(compressed.db_path), "--to", store.url).returncode == 0
    before = digest(compressed.db_path)
    again = hermes("migrate", "--from", str(compressed.db_path), "--to", store.url)
    assert_one_line_error(again, "is not empty", "3 rows in sessions", "new database")
    assert digest(compressed.db_path) == before
    with (
        store.open(read_only=True) as target,
        SessionDB(db_path=compressed.db_path, read_only=True) as source,
    ):
        assert message_checksum(target) == message_checksum(source)


def test_sqlite_to_sqlite_makes_a_private_file(
    hermes: Run, cli_env: Env, compressed: Compressed
) -> None:
    target = cli_env.home / "copies" / "copy.db"
    result = hermes("migrate", "--from", str(compressed.db_path), "--to", str(target))
    assert result.returncode == 0, result.stderr
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    with SessionDB(db_path=target, read_only=True) as db:
        assert db.search_messages("zebras")[0]["session_id"] == compressed.root


def test_a_missing_source_is_one_sentence_and_creates_nothing(hermes: Run, cli_env: Env) -> None:
    target = cli_env.home / "new.db"
    result = hermes("migrate", "--from", str(cli_env.home / "nope.db"), "--to", str(target))
    assert_one_line_error(result, "There is no state store at", "nope.db", "--from")
    assert not target.exists()


def test_an_unreachable_server_is_one_sentence(
    hermes: Run, cli_env: Env, compressed: Compressed
) -> None:
    port = free_port()  # nothing listens there
    before = digest(compressed.db_path)
    url = f"postgresql://hermes:s3cret@127.0.0.1:{port}/nowhere"
    result = hermes("migrate", "--from", str(compressed.db_path), "--to", url)
    assert_one_line_error(result, f"Cannot reach PostgreSQL at 127.0.0.1:{port}/nowhere")
    # The URL came from --to, not from the configuration: the fix says so.
    assert "Check the host and port in the --to URL" in result.stderr
    assert "state.url" not in result.stderr
    assert "s3cret" not in result.stderr
    assert digest(compressed.db_path) == before
    back = hermes("migrate", "--from", url, "--to", str(cli_env.home / "b.db"))
    assert_one_line_error(back, f"127.0.0.1:{port}/nowhere")
    assert "in the --from URL" in back.stderr
    assert not (cli_env.home / "b.db").exists()


def test_a_url_of_another_database_is_one_sentence_and_creates_nothing(
    cli_env: Env, compressed: Compressed, tmp_path: Path
) -> None:
    """Not a SQLite file named `mysql:/db/hermes` under the current folder."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    target = "mysql://hermes:s3cret@db/hermes"
    result = subprocess.run(
        [*hermes_command(), "migrate", "--from", str(compressed.db_path), "--to", target],
        cwd=folder, env=cli_env.vars, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert_one_line_error(result, "not behind a mysql:// URL", "postgresql://")
    assert "s3cret" not in result.stderr
    assert list(folder.iterdir()) == []


def test_the_same_store_twice_is_refused(hermes: Run, compressed: Compressed) -> None:
    path = str(compressed.db_path)
    result = hermes("migrate", "--from", path, "--to", path)
    assert_one_line_error(result, "--from and --to both name")


def test_help_explains_the_command(hermes: Run) -> None:
    result = hermes("migrate", "--help")
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert result.stdout.startswith("Usage: hermes migrate")
    for phrase in ("SQLite file path or a postgresql:// URL", "read-only", "must be empty",
                   "checksum of every message", "--from PATH|URL", "--to PATH|URL"):  # fmt: skip
        assert phrase in out, phrase
