"""/sethome and /restart as an attacker would try them (the operator's commands in a
chat): only the ids of ``allow_admin_from`` may run them, nobody when it is absent, not
a member of a group chat who is not listed, not any key over the HTTP API. A refused
command changes nothing: the home's files are as they were and nothing restarts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.llm_server import text
from tests.gateway.command_attacks import Machine, configure, planted_machine, running

pytestmark = pytest.mark.slow  # a gateway per test

REFUSED = "Only the gateway's admins may"
NOT_HERE = "works in a messaging chat (Telegram, Discord, Slack) only"


@pytest.fixture
def machine(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    yield from planted_machine(monkeypatch)  # hermes_home: for its clean environment


@pytest.fixture
def answering(fake_llm: Any) -> Any:
    fake_llm.responder = lambda body: text("an ordinary answer")
    return fake_llm


def test_without_allow_admin_from_nobody_may(machine: Machine, answering: Any) -> None:
    telegram = configure(machine, answering.url)
    with running(machine, telegram) as chats:
        before = machine.snapshot()
        said = []
        for user in ("42", "7"):
            for command in ("/sethome", "/restart", "/restart@HermesBot"):
                said += chats.says(user, command)
                said += chats.says(user, command, group=True)
        for who in ("alice", "bob", None):
            for command in ("/sethome", "/restart"):
                answer = chats.call(who, command)
                assert answer.status_code == 200, answer.text
                assert NOT_HERE in answer.json()["choices"][0]["message"]["content"]
        after = machine.snapshot()
    assert len(said) == 12 and all(REFUSED in answer for answer in said), said
    assert after == before  # no home channel in .env, no config change
    assert not (machine.hermes / "logs" / "gateway.log").exists()  # no restart began


def test_a_group_member_not_listed_is_refused_where_an_admin_is_not(
    machine: Machine, answering: Any
) -> None:
    telegram = configure(machine, answering.url)
    with running(machine, {**telegram, "allow_admin_from": ["42"]}) as chats:
        before = machine.snapshot()
        refused = chats.says("7", "/sethome", group=True) + chats.says("7", "/restart", group=True)
        refused += chats.says("7", "/sethome") + chats.says("7", "/restart")
        unchanged = machine.snapshot()
        # The admin, in the same group: both commands get past the check.
        set_home = chats.says("42", "/sethome", group=True)
        restart = chats.says("42", "/restart", group=True)
        after = machine.snapshot()
    assert all(REFUSED in answer for answer in refused), refused
    assert unchanged == before
    assert "is now the home channel of telegram" in set_home[0]
    assert after[".env"] != before[".env"]  # the admin's /sethome did write
    assert "cannot restart itself" in restart[0]  # no `hermes gateway run` to restart here
