"""`--dry-run` says what `migrate` and `sessions delete` would do and changes nothing
(issue 14.1): the store's bytes are the same afterwards, and no target is created."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.cli.helpers import Compressed, Env, Run


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_delete_dry_run_says_what_it_would_delete_and_keeps_it(
    hermes: Run, compressed: Compressed
) -> None:
    before = _digest(compressed.db_path)
    result = hermes("sessions", "delete", compressed.tip, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "Would delete conversation" in result.stdout and compressed.root in result.stdout
    assert _digest(compressed.db_path) == before
    assert compressed.root in hermes("sessions", "list", "--json").stdout


def test_migrate_dry_run_counts_what_it_would_copy_and_creates_nothing(
    hermes: Run, cli_env: Env, compressed: Compressed
) -> None:
    before = _digest(compressed.db_path)
    target = cli_env.home / "copy.db"
    result = hermes("migrate", "--from", str(compressed.db_path), "--to", str(target), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "Would copy" in result.stdout and "messages" in result.stdout
    assert not target.exists()
    assert _digest(compressed.db_path) == before


def test_migrate_dry_run_into_a_non_empty_target_says_it_would_refuse(
    hermes: Run, cli_env: Env, compressed: Compressed
) -> None:
    target = cli_env.home / "copy.db"
    assert hermes("migrate", "--from", str(compressed.db_path), "--to", str(target)).returncode == 0
    before = _digest(target)
    result = hermes("migrate", "--from", str(compressed.db_path), "--to", str(target), "--dry-run")
    assert result.returncode == 1
    assert "not empty" in result.stderr
    assert _digest(target) == before


def test_progress_off_a_terminal_is_a_few_lines_per_step(capsys):
    """Piped or logged, an import of 300 batches says so in a handful of lines (it once
    wrote one per batch), and still gives each step's last count."""
    from hermes.cli._progress import ProgressLines

    show = ProgressLines()
    show("verify", 0, 1)
    for step in ("messages", "sessions"):
        for done in range(1, 301):
            show(step, done, 300)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "verifying: counting rows and hashing every message",
        "messages: 1/300",
        "messages: 300/300",
        "sessions: 1/300",
        "sessions: 300/300",
    ]
