"""`hermes backup` makes the zip Hermes Agent 0.19's `hermes backup` makes, and 0.19's
own restore (`hermes import ZIP`, run by a real 0.19 install) brings the home back: the
config, the memories and a store that opens with every message, copied consistently
through SQLite's backup API while a writer keeps appending (issue 56)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from hermes.state import SessionDB

pytestmark = pytest.mark.hermes_agent
HERMES = str(Path(sys.executable).parent / "hermes")

# 0.19's restore, as its `hermes import ZIP --force` runs it, into HERMES_HOME.
RESTORE = """
import sys, types
from hermes_cli.backup import run_import
run_import(types.SimpleNamespace(zipfile=sys.argv[1], force=True))
"""


def test_a_backup_taken_while_writing_is_restored_by_hermes_agent(
    hermes_home: Path, hermes_agent_venv_python: Path, tmp_path: Path
) -> None:
    (hermes_home / "config.yaml").write_text("model:\n  default: m1\n")
    (hermes_home / "memories").mkdir()
    (hermes_home / "memories" / "MEMORY.md").write_text("the user likes Lisbon\n")
    db = SessionDB(db_path=hermes_home / "state.db")
    db.create_session("s", source="cli")
    db.append_message("s", "user", "before the backup")
    stop = threading.Event()

    def keep_writing() -> None:  # a chat going on meanwhile
        n = 0
        while not stop.is_set():
            db.append_message("s", "assistant", f"during {n}")
            n += 1

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        env = {**os.environ, "HERMES_HOME": str(hermes_home)}
        done = subprocess.run([HERMES, "backup", "-o", str(tmp_path / "b.zip")], env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
    finally:
        stop.set()
        writer.join()
        db.close()
    assert done.returncode == 0, done.stderr
    assert f"Backup complete: {tmp_path / 'b.zip'}" in done.stdout
    names = set(zipfile.ZipFile(tmp_path / "b.zip").namelist())
    assert {"config.yaml", "memories/MEMORY.md", "state.db"} <= names
    assert not {n for n in names if n.endswith(("-wal", "-shm"))}

    restored = tmp_path / "restored-home"
    restored.mkdir()
    env = {**os.environ, "HERMES_HOME": str(restored), "HERMES_DISABLE_LAZY_INSTALLS": "1"}
    back = subprocess.run([str(hermes_agent_venv_python), "-c", RESTORE, str(tmp_path / "b.zip")],
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert back.returncode == 0, back.stdout + back.stderr
    assert (restored / "config.yaml").read_text() == "model:\n  default: m1\n"
    assert (restored / "memories" / "MEMORY.md").read_text() == "the user likes Lisbon\n"
    copy = SessionDB(db_path=restored / "state.db", read_only=True)
    try:
        contents = [m["content"] for m in copy.get_messages("s")]
        assert contents[0] == "before the backup"
        assert contents[1:] == [f"during {n}" for n in range(len(contents) - 1)]  # no gap
    finally:
        copy.close()
