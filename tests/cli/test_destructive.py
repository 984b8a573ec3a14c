"""Destructive commands ask on a terminal and refuse without one unless --yes (issue 14.1).

`prune`, `delete`, `import` and `migrate` into a store that holds data are run the way a person
(a pty, through pexpect) and a script (a pipe) would run them; the store is read back
afterwards to see what survived.
"""

from __future__ import annotations

import sqlite3
import time

import pexpect

from hermes.state import SessionDB
from tests.cli.helpers import Env, assert_one_line_error, hermes_command

TIMEOUT = 30


def _age(db_path, conversation_id: str, days: float) -> None:
    with sqlite3.connect(db_path) as raw:
        raw.execute("UPDATE sessions SET last_active_at = ? WHERE conversation_id = ?",
                    (time.time() - days * 86400, conversation_id))  # fmt: skip


def _conversation_ids(db_path) -> set[str]:
    with SessionDB(db_path=db_path, read_only=True) as db:
        return {r["conversation_id"] for r in db.list_conversations(limit=100)}


def _on_a_terminal(env: Env, *args: str) -> pexpect.spawn:
    command = hermes_command()
    return pexpect.spawn(command[0], [*command[1:], *args], env=env.vars, encoding="utf-8",
                         timeout=TIMEOUT, dimensions=(40, 120))  # fmt: skip


def _finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def test_prune_without_a_terminal_refuses_whatever_is_piped_in(hermes, compressed):
    _age(compressed.db_path, compressed.root, 1)
    _age(compressed.db_path, compressed.other, 1)
    before = _conversation_ids(compressed.db_path)
    for answer in ("n\n", "y\n", ""):
        refused = hermes("sessions", "prune", "--older-than", "0.005", input=answer)
        assert_one_line_error(refused, "--yes", "terminal")
    assert _conversation_ids(compressed.db_path) == before


def test_prune_with_yes_deletes_and_dry_run_only_lists(hermes, compressed):
    _age(compressed.db_path, compressed.root, 40)
    preview = hermes("sessions", "prune", "--older-than", "30d", "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert compressed.root in preview.stdout and "Would delete 1 conversation" in preview.stdout
    assert compressed.root in _conversation_ids(compressed.db_path)
    done = hermes("sessions", "prune", "--older-than", "30d", "--yes")
    assert done.returncode == 0, done.stderr
    assert "Deleted 1 conversation idle for more than 30 days" in done.stdout
    assert _conversation_ids(compressed.db_path) == {compressed.other}


def test_prune_takes_durations(hermes, compressed):
    _age(compressed.db_path, compressed.root, 1)  # a day old: older than 12h, not than 2d
    assert "Nothing to delete" in hermes("sessions", "prune", "--older-than", "2d").stdout
    assert "Nothing to delete" in hermes("sessions", "prune", "--older-than", "30").stdout
    twelve = hermes("sessions", "prune", "--older-than", "12h", "--dry-run")
    assert "Would delete 1 conversation idle for more than 12 hours" in twelve.stdout
    bad = hermes("sessions", "prune", "--older-than", "soon")
    assert bad.returncode == 2 and "not a duration" in bad.stderr


def test_prune_on_a_terminal_asks_and_no_keeps_everything(cli_env, compressed):
    _age(compressed.db_path, compressed.root, 40)
    child = _on_a_terminal(cli_env, "sessions", "prune", "--older-than", "30d")
    child.expect_exact("Delete these 1 conversation? This cannot be undone")
    child.sendline("n")
    assert _finish(child) == 1
    assert compressed.root in _conversation_ids(compressed.db_path)
    child = _on_a_terminal(cli_env, "sessions", "prune", "--older-than", "30d")
    child.expect_exact("This cannot be undone")
    child.sendline("y")
    child.expect_exact("Deleted 1 conversation")
    assert _finish(child) == 0
    assert _conversation_ids(compressed.db_path) == {compressed.other}


def test_delete_without_a_terminal_needs_yes(hermes, compressed):
    refused = hermes("sessions", "delete", compressed.tip, input="y\n")
    assert_one_line_error(refused, "--yes", "terminal")
    assert compressed.root in _conversation_ids(compressed.db_path)


def test_delete_on_a_terminal_asks(cli_env, compressed):
    child = _on_a_terminal(cli_env, "sessions", "delete", compressed.tip)
    child.expect_exact("Delete conversation 'Safari notes'")
    child.sendline("n")
    assert _finish(child) == 1
    assert compressed.root in _conversation_ids(compressed.db_path)
    child = _on_a_terminal(cli_env, "sessions", "delete", compressed.tip)
    child.expect_exact("This cannot be undone")
    child.sendline("y")
    child.expect_exact(f"Deleted conversation {compressed.root}")
    assert _finish(child) == 0
    assert _conversation_ids(compressed.db_path) == {compressed.other}


def _hermes_agent_store(path) -> None:
    """The tables a Hermes Agent state.db has (the columns the importer reads), one chat."""
    with sqlite3.connect(path) as raw:
        raw.executescript(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, parent_session_id TEXT,"
            " end_reason TEXT, started_at REAL, ended_at REAL, title TEXT, model TEXT);"
            "CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT,"
            " content TEXT, timestamp REAL, active INTEGER, compacted INTEGER, tool_calls TEXT,"
            " tool_call_id TEXT, tool_name TEXT, reasoning TEXT);"
        )
        raw.execute("INSERT INTO sessions (id, source, started_at, title) VALUES"
                    " ('ha-1', 'cli', 1700000000, 'From Hermes Agent')")  # fmt: skip
        raw.executemany(
            "INSERT INTO messages (session_id, role, content, timestamp, active, compacted)"
            " VALUES ('ha-1', ?, ?, 1700000001, 1, 0)",
            [("user", "imported question"), ("assistant", "imported answer")],
        )
    raw.close()


def test_import_into_a_store_that_holds_conversations_asks(hermes, cli_env, compressed, tmp_path):
    source = tmp_path / "ha.db"
    _hermes_agent_store(source)
    before = _conversation_ids(compressed.db_path)
    refused = hermes("import", "hermes-agent", str(source), input="y\n")
    assert_one_line_error(refused, "--yes", "terminal")
    assert _conversation_ids(compressed.db_path) == before
    child = _on_a_terminal(cli_env, "import", "hermes-agent", str(source))
    child.expect_exact("already holds conversations. Add 1 sessions and 2 messages")
    child.sendline("n")
    assert _finish(child) == 1
    assert _conversation_ids(compressed.db_path) == before
    done = hermes("import", "hermes-agent", str(source), "--yes")
    assert done.returncode == 0, done.stderr
    assert _conversation_ids(compressed.db_path) == before | {"ha-1"}
    again = hermes("import", "hermes-agent", str(source))  # nothing new: nothing to ask
    assert again.returncode == 0 and "Nothing to import" in again.stdout


def test_migrate_never_writes_into_a_store_that_holds_data(hermes, cli_env, compressed, tmp_path):
    """A copy goes only into an empty store, so there is nothing to consent to: it
    refuses on a terminal and off one, --yes or not, and the target is left as it was."""
    target = tmp_path / "target.db"
    with SessionDB(db_path=target) as db:
        db.create_session("mine", source="cli")
        db.append_message("mine", "user", "keep me")
    before = target.read_bytes()
    refused = hermes("migrate", "--from", str(compressed.db_path), "--to", str(target))
    assert_one_line_error(refused, "not empty", "new database file")
    child = _on_a_terminal(
        cli_env, "migrate", "--from", str(compressed.db_path), "--to", str(target)
    )
    child.expect_exact("is not empty")
    assert _finish(child) == 1
    assert target.read_bytes() == before
    assert _conversation_ids(target) == {"mine"}
