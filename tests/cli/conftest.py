"""Fixtures of the CLI suite: run `hermes` as a person would, against the fake model.

``hermes`` runs the real command in a subprocess with ``HERMES_HOME`` set to the
test's private folder and the endpoint pointing at the ``fake_llm`` server (which runs
in this process, so a test can script it and read what it was asked). ``chat``
starts the interactive chat in a pseudo-terminal. ``compressed`` builds a store holding
a conversation that was compressed once, the way the agent does it. What these use
(and tests may import) is in tests/cli/helpers.py and tests/cli/chat_pty.py.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.chat_pty import Chat
from tests.cli.helpers import FAKE_MODEL, Compressed, Env, Run, build_compressed, hermes_command


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


@pytest.fixture
def chat(cli_env: Env) -> Iterator:
    """``chat(*args, bare=False)`` -> a started ``Chat`` (`hermes chat ARGS`); killed after."""
    opened: list[Chat] = []

    def start(*args: str, bare: bool = False, preexec_fn: Callable[[], None] | None = None) -> Chat:
        command = args if bare else ("chat", *args)
        opened.append(Chat(cli_env, *command, preexec_fn=preexec_fn))
        return opened[-1]

    yield start
    for running in opened:
        if running.child.isalive():
            running.child.terminate(force=True)


@pytest.fixture
def compressed(cli_env: Env) -> Iterator[Compressed]:
    yield build_compressed(cli_env.home / "state.db")
