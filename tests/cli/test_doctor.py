"""`hermes doctor` on healthy and broken setups: one line per check, a fix when it fails."""

from __future__ import annotations

import os
import sqlite3
import time

from tests.cli.helpers import build_compressed, doctor_lines


def test_healthy_setup_passes_every_check(hermes, compressed):
    result = hermes("doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = doctor_lines(result)
    for name in ("config", "home", "store files", "store", "integrity", "schema",
                 "invariants", "endpoint", "model"):  # fmt: skip
        assert lines[name].startswith("ok"), lines
    assert result.stdout.rstrip().endswith("All checks passed.")


def test_planted_fork_is_named_and_fails(hermes, compressed):
    # Bypass the store's guard the way a buggy writer could, then fork the conversation.
    with sqlite3.connect(compressed.db_path) as raw:
        raw.execute("DROP INDEX sessions_one_live_tip")
        now = time.time()
        raw.execute(
            "INSERT INTO sessions (id, conversation_id, parent_session_id, lineage,"
            " segment_index, source, started_at, last_active_at)"
            " VALUES ('forked', ?, ?, 'branch', 3, 'cli', ?, ?)",
            (compressed.root, compressed.root, now, now),
        )
    before = compressed.db_path.read_bytes()
    result = hermes("doctor")
    assert result.returncode == 1
    lines = doctor_lines(result)
    assert lines["invariants"].startswith("FAIL")
    assert f"conversation {compressed.root} has 2 live tips" in lines["invariants"]
    assert "Fix:" in lines["invariants"]
    assert lines["schema"].startswith("FAIL") and "sessions_one_live_tip" in lines["schema"]
    assert lines["integrity"].startswith("ok")
    assert compressed.db_path.read_bytes() == before  # doctor only reads


def test_loose_permissions_fail_with_the_chmod_to_run(hermes, cli_env, compressed):
    os.chmod(cli_env.home, 0o755)
    os.chmod(compressed.db_path, 0o644)
    result = hermes("doctor", "--offline")
    assert result.returncode == 1
    lines = doctor_lines(result)
    assert f"chmod 700 {cli_env.home}" in lines["home"]
    assert f"chmod 600 {compressed.db_path}" in lines["store files"]
    assert lines["endpoint"].startswith("--")


def test_corrupt_store_fails_in_one_line(hermes, cli_env):
    db = cli_env.home / "state.db"
    db.write_bytes(b"garbage" * 1000)
    db.chmod(0o600)
    result = hermes("doctor", "--offline")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert doctor_lines(result)["store"].startswith("FAIL")
    assert "backup" in doctor_lines(result)["store"]


def test_unreachable_endpoint_and_missing_model(hermes, cli_env, compressed):
    cli_env.vars["HERMES_MODEL"] = "no-such-model"
    lines = doctor_lines(hermes("doctor"))
    assert lines["endpoint"].startswith("ok")
    assert lines["model"].startswith("FAIL") and "fake-model" in lines["model"]

    cli_env.vars["HERMES_BASE_URL"] = "http://127.0.0.1:9/v1"
    result = hermes("doctor")
    assert result.returncode == 1
    assert doctor_lines(result)["endpoint"].startswith("FAIL")


def test_no_key_for_a_remote_endpoint_says_how_to_add_one(hermes, cli_env):
    cli_env.vars["HERMES_BASE_URL"] = "https://llm.invalid/v1"
    result = hermes("doctor")
    assert result.returncode == 1
    line = doctor_lines(result)["api key"]
    assert "HERMES_API_KEY" in line and "hermes setup" in line


def test_broken_config_fails_but_the_other_checks_run(hermes, cli_env):
    build_compressed(cli_env.home / "state.db")
    (cli_env.home / "config.yaml").write_text("agent: [\n")
    result = hermes("doctor")
    assert result.returncode == 1
    lines = doctor_lines(result)
    assert lines["config"].startswith("FAIL") and "line" in lines["config"]
    assert lines["invariants"].startswith("ok")


def test_loose_env_file_is_flagged_by_doctor(hermes, cli_env):
    env = cli_env.home / ".env"
    env.write_text("HERMES_API_KEY=sk-loose-0123456789\n", encoding="utf-8")
    os.chmod(cli_env.home, 0o700)
    os.chmod(env, 0o644)
    result = hermes("doctor", "--offline")
    assert f"chmod 600 {env}" in doctor_lines(result)["home"]


def test_the_sandbox_in_force_is_reported(hermes, cli_env):
    assert doctor_lines(hermes("doctor", "--offline"))["sandbox"].startswith(
        "ok    sandbox: tool commands run in a bubblewrap sandbox"
    )
    (cli_env.home / "config.yaml").write_text("terminal:\n  sandbox: off\n", encoding="utf-8")
    line = doctor_lines(hermes("doctor", "--offline"))["sandbox"]
    assert line.startswith("--") and "no sandbox (terminal.sandbox is off)" in line
    assert "read-only commands only" in line


def test_a_store_deleted_under_a_writer_is_named(hermes, cli_env, compressed):
    # Another process (here: this one) writes the store; the file is then deleted and a
    # new one appears at the path. Its writes now go where no one will read them.
    holder = sqlite3.connect(compressed.db_path)
    try:
        holder.execute("CREATE TABLE IF NOT EXISTS scratch (x)")
        holder.commit()
        compressed.db_path.unlink()
        build_compressed(compressed.db_path)
        result = hermes("doctor", "--offline")
        assert result.returncode == 1, result.stdout
        line = doctor_lines(result)["store file"]
        assert line.startswith("FAIL") and f"process {os.getpid()} (" in line
        assert "deleted or replaced" in line and "Fix: stop that process" in line
    finally:
        holder.close()
    assert "store file" not in doctor_lines(hermes("doctor", "--offline"))


def test_a_wal_deleted_under_a_writer_is_named(hermes, cli_env, compressed):
    # This process writes the store; its -wal is then deleted (by hand, or by a process
    # that took itself for the last user): what it commits now goes nowhere.
    from hermes.state import SessionDB

    with SessionDB(db_path=compressed.db_path) as holder:
        holder.create_session(source="cli")
        (compressed.db_path.parent / "state.db-wal").unlink()
        result = hermes("doctor", "--offline")
        assert result.returncode == 1, result.stdout
        line = doctor_lines(result)["store file"]
        assert line.startswith("FAIL") and f"process {os.getpid()} (" in line
        assert "Fix: stop that process" in line


def test_a_loose_env_in_a_loose_home_is_flagged_too(hermes, cli_env):
    env = cli_env.home / ".env"
    env.write_text("HERMES_API_KEY=sk-loose-0123456789\n", encoding="utf-8")
    os.chmod(cli_env.home, 0o755)
    os.chmod(env, 0o644)
    line = doctor_lines(hermes("doctor", "--offline"))["home"]
    assert f"chmod 700 {cli_env.home}" in line and f"chmod 600 {env}" in line
