"""The commands that show something (``/model``, ``/status``, ``/codex-runtime``,
``/usage``, ``/version``, ``/update``, ``/help``, ``/commands``, ``/whoami``,
``/personality``, ``/debug``) as a chat user or an API key would read them for the
operator's secrets: the planted ones, and a password in the model endpoint's URL (a
proxy's basic auth), which the chat shows masked and the logs and the debug report
never show; nor where the operator's home is (the debug report is named within it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.command_attacks import (
    CANARIES,
    Machine,
    answer_of,
    configure,
    planted_machine,
    running,
)

pytestmark = pytest.mark.slow  # a gateway per test

URL_PASSWORD = "url-password-canary-77aa31"
SHOWN = (
    "/model", "/model nothing-like-it", "/status", "/codex-runtime", "/usage", "/version",
    "/update", "/whoami", "/personality", "/commands", "/profile", "/debug",
)  # fmt: skip


@pytest.fixture
def machine(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    yield from planted_machine(monkeypatch)  # hermes_home: for its clean environment


def test_what_the_commands_show_holds_no_secret(machine: Machine, fake_llm: Any) -> None:
    endpoint = fake_llm.url.replace("http://", f"http://hermes:{URL_PASSWORD}@")
    telegram = configure(machine, endpoint)
    secrets = (*CANARIES, URL_PASSWORD)
    with running(machine, telegram) as chats:
        said = {line: chats.says("42", line)[0] for line in SHOWN}
        said.update({f"group {line}": chats.says("7", line, group=True)[0] for line in SHOWN})
        session = chats.call("alice", "hello").headers["X-Hermes-Session-Id"]
        said.update(
            {f"api {line}": answer_of(chats.call("alice", line, session)) for line in SHOWN}
        )
    assert "[redacted]@127.0.0.1" in said["/model"], said["/model"]  # shown, masked
    leaked = {line: answer for line, answer in said.items() if any(s in answer for s in secrets)}
    assert leaked == {}
    # Where the operator's home is is not a chat's business either (/profile, /debug).
    placed = {line: answer for line, answer in said.items() if str(machine.home) in answer}
    assert placed == {}
    reports = [m for a in said.values() for m in re.findall(r"debug report (\S+) in ", a)]
    assert len(reports) == 3
    for report in reports:
        written = (machine.hermes / report).read_text(encoding="utf-8")
        assert not [s for s in secrets if s in written]
