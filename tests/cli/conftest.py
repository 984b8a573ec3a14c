"""Fixtures of the CLI suite: run `hermes` as a person would, against the fake model.

``hermes`` runs the real command in a subprocess with ``HERMES_HOME`` set to the
test's private folder and the endpoint pointing at the ``fake_llm`` server (which runs
in this process, so a test can script it and read what it was asked). ``spawn_chat``
starts the interactive chat in a pseudo-terminal. ``compressed`` builds a store holding
a conversation that was compressed once, the way the agent does it.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

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


@pytest.fixture
def cli_env(hermes_home: Path, fake_llm) -> Env:
    os.chmod(hermes_home, 0o700)
    env = dict(os.environ)
    env.update(
        HERMES_HOME=str(hermes_home),
        HERMES_BASE_URL=fake_llm.url,
        HERMES_MODEL=FAKE_MODEL,
        PROMPT_TOOLKIT_NO_CPR="1",  # pexpect does not answer cursor-position requests
        TERM="xterm-256color",
        COLUMNS="120",
        LINES="40",
    )
    return Env(home=hermes_home, vars=env)


Run = Callable[..., subprocess.CompletedProcess]


@pytest.fixture
def hermes(cli_env: Env) -> Run:
    """``hermes("sessions", "list", input=None)`` -> CompletedProcess (text, not checked)."""

    def run(
        *args: str, input: str | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*hermes_command(), *args],
            env=cli_env.vars,
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


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


@pytest.fixture
def compressed(cli_env: Env) -> Iterator[Compressed]:
    yield build_compressed(cli_env.home / "state.db")
