"""Helpers of the CLI suite: how to run `hermes`, what a one-line error looks like, and
a store holding a conversation that was compressed once, the way the agent does it.

The fixtures that use them are in tests/cli/conftest.py.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hermes.state import SessionDB, make_holder

FAKE_MODEL = "fake-model"


def hermes_command() -> list[str]:
    script = Path(sys.executable).with_name("hermes")
    return [str(script)] if script.exists() else [sys.executable, "-m", "hermes"]


@dataclass
class Env:
    """The environment the commands run in; tests adjust ``vars`` before running."""

    home: Path
    vars: dict[str, str]


Run = Callable[..., subprocess.CompletedProcess]


def assert_one_line_error(result: subprocess.CompletedProcess, *words: str) -> None:
    """Exit 1 with one sentence on stderr (no traceback) that contains ``words``."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- a store with a compressed conversation ---------------------------------------------


@dataclass
class Compressed:
    """Ids of the conversation built by the ``compressed`` fixture."""

    db_path: Path
    root: str
    tip: str
    other: str  # a second, uncompressed conversation from another source


def rotate(db: SessionDB, session_id: str, summary: str = "[summary] zebras and lions") -> str:
    holder = make_holder()
    assert db.try_acquire_compression_lock(session_id, holder)
    try:
        return db.publish_compression_child(
            session_id,
            holder=holder,
            messages=[{"role": "user", "content": summary}],
            watermark=db.last_message_id(session_id),
        )
    finally:
        db.release_compression_lock(session_id, holder)


def build_compressed(db_path: Path, *, model: str = FAKE_MODEL) -> Compressed:
    with SessionDB(db_path=db_path) as db:
        root = db.create_session(source="cli", title="Safari notes", model=model)
        db.append_messages(root, [
            {"role": "user", "content": "tell me about zebras"},
            {"role": "assistant", "content": "Zebras are striped horses of Africa."},
            {"role": "user", "content": "and lions?"},
            {"role": "assistant", "content": "Lions live in prides."},
        ])  # fmt: skip
        tip = rotate(db, root)
        db.append_messages(tip, [
            {"role": "user", "content": "what about giraffes"},
            {"role": "assistant", "content": "Giraffes have long necks."},
        ])  # fmt: skip
        other = db.create_session(source="telegram", title="Shopping")
        db.append_message(other, "user", "buy milk")
        db.append_message(other, "assistant", "Milk is on the list.")
    return Compressed(db_path=db_path, root=root, tip=tip, other=other)


def doctor_lines(result: subprocess.CompletedProcess) -> dict[str, str]:
    """check name -> its line (the summary line is left out)."""
    found = {}
    for line in result.stdout.splitlines():
        status, _, rest = line.partition("  ")
        if ":" in rest and status.strip() in ("ok", "FAIL", "--"):
            found[rest.split(":", 1)[0].strip()] = line
    return found
