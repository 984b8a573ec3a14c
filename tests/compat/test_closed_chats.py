"""Chats Hermes Agent 0.19 ended go on as 0.19's ``--resume`` goes on with them: a
terminal chat it closed (``cli_close``, ``user_exit``) continues with ``hermes --resume
ID`` and ``hermes -c``, imported or in the upgraded store; a messaging chat the user
reset stays closed for good (issue 56)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hermes.compat.session_db import SessionDB
from tests.cli.helpers import hermes_command

pytestmark = pytest.mark.hermes_agent
HERE = Path(__file__).parent
TIMEOUT = 60


def build_closed_chats(python: Path, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HERMES_HOME": str(path.parent / "ha-runtime-home"),
           "HERMES_DISABLE_LAZY_INSTALLS": "1"}  # fmt: skip
    subprocess.run([str(python), str(HERE / "ha_build_closed_chats.py"), str(path)],
                   env=env, capture_output=True, check=True, timeout=TIMEOUT)  # fmt: skip


def hermes(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*hermes_command(), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=TIMEOUT, env=env)  # fmt: skip


@pytest.fixture(params=["imported", "in place"])
def closed_chats(request, hermes_agent_python: Path, hermes_home: Path, tmp_path: Path) -> Path:
    """The hermes store holding 0.19's ended chats: imported from another home, or
    0.19's own state.db upgraded in place."""
    if request.param == "imported":
        source = tmp_path / "ha" / "state.db"
        build_closed_chats(hermes_agent_python, source)
        done = hermes("import", "hermes-agent", str(source))
    else:
        build_closed_chats(hermes_agent_python, hermes_home / "state.db")
        done = hermes("import", "hermes-agent", "--yes")
    assert done.returncode == 0, done.stderr
    return hermes_home / "state.db"


def test_a_chat_the_terminal_closed_continues_with_resume_and_c(closed_chats, fake_llm) -> None:
    env = {**os.environ, "HERMES_BASE_URL": fake_llm.url, "HERMES_MODEL": "fake-model"}

    continued = hermes("chat", "-c", "-q", "another question", env=env)  # the latest terminal chat
    assert continued.returncode == 0, continued.stderr
    sent = [m.get("content") for m in fake_llm.requests[-1]["messages"]]
    assert sent[-3:] == ["first question of exited", "first answer of exited", "another question"]

    resumed = hermes("chat", "--resume", "closed", "-q", "second question", env=env)
    assert resumed.returncode == 0, resumed.stderr
    sent = [m.get("content") for m in fake_llm.requests[-1]["messages"]]
    assert sent[-3:] == ["first question of closed", "first answer of closed", "second question"]

    db = SessionDB(db_path=closed_chats, read_only=True)
    try:
        for sid, asked in (("closed", "second question"), ("exited", "another question")):
            assert db.get_session(sid)["ended_at"] is None  # open again, as 0.19 reopens it
            assert asked in [m["content"] for m in db.get_messages(sid)]
    finally:
        db.close()


def test_a_chat_the_user_reset_stays_closed(closed_chats, fake_llm) -> None:
    env = {**os.environ, "HERMES_BASE_URL": fake_llm.url, "HERMES_MODEL": "fake-model"}
    done = hermes("chat", "--resume", "reset", "-q", "are you there?", env=env)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "was ended (session_reset)" in done.stderr and "start a new one" in done.stderr
    assert fake_llm.requests == []
