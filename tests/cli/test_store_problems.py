"""A store hermes cannot open is told apart from a damaged one (issue 56): a healthy file
that cannot be written beside (a full disk, a file-size limit) is never called damaged,
and its advice never says to restore a backup over it; a truly damaged file still is.

The write failure is real: the commands run under ``RLIMIT_FSIZE`` (``ulimit -f``), so
SQLite cannot create the store's ``-wal``/``-shm`` files, as on a disk with no room.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

from hermes.state import SessionDB


def under_a_file_size_limit() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails (EFBIG) instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def hermes(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HERMES_HOME": str(home), "HERMES_BASE_URL": "http://127.0.0.1:9/v1",
           "HERMES_MODEL": "m"}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "hermes", *args], env=env, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=120,
                          preexec_fn=under_a_file_size_limit)  # fmt: skip


def test_a_healthy_store_that_cannot_be_written_beside_is_not_called_damaged(
    hermes_home: Path,
) -> None:
    db = SessionDB(db_path=hermes_home / "state.db")
    db.create_session("s", source="cli")
    db.append_message("s", "user", "keep me")
    db.close()

    for args in (["sessions", "list"], ["chat", "-q", "hello"]):
        done = hermes(hermes_home, *args)
        assert done.returncode != 0 and "Traceback" not in done.stderr
        said = done.stderr
        assert "the file itself is healthy" in said, said
        assert "damaged" not in said and "restore it from a backup" not in said
        assert "do not restore" in said

    doctor = hermes(hermes_home, "doctor", "--offline")
    store = next(line for line in doctor.stdout.splitlines() if " store: " in line)
    assert store.startswith("FAIL") and "the file itself is healthy" in store
    assert "Fix: Check the disk" in store and "restore it from a backup" not in store

    db = SessionDB(db_path=hermes_home / "state.db", read_only=True)  # untouched
    try:
        assert [m["content"] for m in db.get_messages("s")] == ["keep me"]
    finally:
        db.close()
