"""The interactive chat in a pseudo-terminal, driven like a person at a keyboard (the
``chat`` fixture of tests/cli/conftest.py starts one)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pexpect

from tests.cli.helpers import Env, hermes_command

PROMPT = "›"
TIMEOUT = 30


class Chat:
    """A running `hermes ARGS` (the chat) in a pty."""

    def __init__(self, env: Env, *args: str, preexec_fn: Callable[[], None] | None = None) -> None:
        command = hermes_command()
        self.child = pexpect.spawn(command[0], [*command[1:], *args], env=env.vars,
                                   encoding="utf-8", timeout=TIMEOUT, dimensions=(40, 120),
                                   preexec_fn=preexec_fn)  # fmt: skip
        self.expect(PROMPT)

    def expect(self, pattern: str, timeout: float = TIMEOUT) -> str:
        """Wait for literal text; return what came before it (escape codes stripped)."""
        self.child.expect_exact(pattern, timeout=timeout)
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.child.before or "")

    def say(self, line: str, *then: str) -> None:
        """Type a line and Enter, then wait for each of ``then`` in order."""
        self.child.sendline(line)
        for pattern in then:
            self.expect(pattern)

    def command(self, line: str, reply: str) -> None:
        self.say(line, reply)
        self.expect(PROMPT)

    def leave(self) -> int:
        """Ctrl-D at the prompt (wait for the prompt first: a turn's end swallows it)."""
        self.child.sendeof()
        self.child.expect(pexpect.EOF, timeout=TIMEOUT)
        self.child.close()
        return self.child.exitstatus
