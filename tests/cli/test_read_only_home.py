"""A healthy store on a read-only mount (issue 14.2), run as a user would.

The HERMES_HOME folder is bind-mounted read-only in a private mount namespace
(``unshare -m``, which needs root: these tests fail, never skip, without it; chmod does
not stop root, a read-only mount does).
Reading commands work; `chat` says it can only read, without a traceback.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from tests.cli.helpers import assert_one_line_error, hermes_command

READ_ONLY_MOUNT = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'


def hermes_read_only(
    cli_env, *args: str, folder: Path | None = None
) -> subprocess.CompletedProcess:
    """Run `hermes ARGS` with ``folder`` (HERMES_HOME) mounted read-only, for it alone."""
    folder = str(folder or cli_env.home)
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", READ_ONLY_MOUNT, "sh", folder, *hermes_command(), *args],
        env=cli_env.vars,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )


def _digest(home: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in home.iterdir() if p.is_file()
    }


def test_reading_commands_work_on_a_read_only_home(cli_env, compressed):
    before = _digest(cli_env.home)
    listed = hermes_read_only(cli_env, "sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {r["conversation_id"] for r in json.loads(listed.stdout)} == {
        compressed.root, compressed.other,
    }  # fmt: skip
    shown = hermes_read_only(cli_env, "sessions", "show", compressed.tip)
    assert shown.returncode == 0, shown.stderr
    assert "Giraffes have long necks." in shown.stdout
    found = hermes_read_only(cli_env, "sessions", "search", "zebras")
    assert found.returncode == 0 and "zebras" in found.stdout, found.stderr
    exported = hermes_read_only(cli_env, "sessions", "export", compressed.tip)
    assert exported.returncode == 0 and "Lions live in prides." in exported.stdout, exported.stderr
    doctor = hermes_read_only(cli_env, "doctor", "--offline")
    assert "damaged" not in doctor.stdout + doctor.stderr, doctor.stdout
    assert "read-only" in doctor.stdout, doctor.stdout
    assert _digest(cli_env.home) == before


def test_chat_on_a_read_only_home_says_it_can_only_read(cli_env, compressed):
    result = hermes_read_only(cli_env, "chat", "-q", "hello")
    assert_one_line_error(result, "read-only", "hermes chat --read-only")


def test_chat_read_only_shows_the_conversation_and_sends_nothing(cli_env, compressed, fake_llm):
    shown = hermes_read_only(cli_env, "chat", "--read-only", "-r", compressed.tip)
    assert shown.returncode == 0, shown.stderr
    assert "Safari notes" in shown.stdout and "Giraffes have long necks." in shown.stdout
    refused = hermes_read_only(cli_env, "chat", "--read-only", "-q", "hello")
    assert_one_line_error(refused, "Not sent")
    assert fake_llm.requests == []


def test_chat_logs_to_stderr_when_the_log_folder_is_read_only(cli_env, fake_llm):
    logs = cli_env.home / "logs"
    logs.mkdir()
    result = hermes_read_only(cli_env, "chat", "-q", "hello", folder=logs)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.strip() and fake_llm.requests
    assert list(logs.iterdir()) == []
