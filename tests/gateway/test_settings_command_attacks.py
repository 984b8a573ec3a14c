"""/personality, /reasoning and /fast as one user would try them on another's requests
or on the operator's configuration.

As documented (hermes/agent/commands_settings.py, docs/gateway.md), a messaging chat's
or an API conversation's settings are that conversation's: in a group chat where each
member has a conversation of their own, what user 42 sets never reaches user 7's
requests, alice's never reaches bob's, and ``--global`` (which writes config.yaml) is
the terminal chat's alone: refused for every chat user and every API key, the
operator's included, with config.yaml unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.gateway.runner import QUEUED_ACK
from tests.gateway.command_attacks import (
    GROUP,
    Chats,
    Machine,
    answer_of,
    configure,
    planted_machine,
    running,
)
from tests.gateway.harness import wait_for

pytestmark = pytest.mark.slow  # a gateway per test

SETTINGS = ("/personality pirate", "/reasoning high", "/fast on")
GLOBAL = ("/reasoning high --global", "/fast on --global", "/reasoning show --global")
TERMINAL_ONLY = "only the terminal chat (hermes chat) may do"


@pytest.fixture
def machine(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    yield from planted_machine(monkeypatch)  # hermes_home: for its clean environment


def answer(chats: Chats, user: str, words: str) -> str:
    """User ``user``'s answer in the group (the queued note left out)."""
    before = len(chats.telegram.texts(GROUP))
    chats.sends(user, words, group=True)

    def answered() -> list[str]:
        return [t for t in chats.telegram.texts(GROUP)[before:] if t != QUEUED_ACK]

    wait_for(answered, timeout=60)
    return answered()[0]


def carried(request: dict[str, Any]) -> dict[str, Any]:
    """What of a model request the settings change."""
    system = str(request["messages"][0].get("content"))
    return {
        "reasoning_effort": request.get("reasoning_effort"),
        "service_tier": request.get("service_tier"),
        "pirate": "buccaneer" in system,
    }


SET = {"reasoning_effort": "high", "service_tier": "priority", "pirate": True}
UNSET = {"reasoning_effort": None, "service_tier": None, "pirate": False}


def test_a_group_member_sets_their_own_conversation_only(machine: Machine, fake_llm: Any) -> None:
    telegram = configure(machine, fake_llm.url)
    config = (machine.hermes / "config.yaml").read_bytes()
    with running(machine, telegram) as chats:
        for line in SETTINGS:
            assert "for this chat" in answer(chats, "42", line)
        refused = [answer(chats, "42", line) for line in GLOBAL]
        assert answer(chats, "42", "hello from 42") == "echo: hello from 42"
        mine = carried(fake_llm.requests[-1])
        assert answer(chats, "7", "hello from 7") == "echo: hello from 7"
        theirs = carried(fake_llm.requests[-1])
    assert mine == SET and theirs == UNSET
    assert all(TERMINAL_ONLY in said or "Only the terminal chat" in said for said in refused)
    assert (machine.hermes / "config.yaml").read_bytes() == config


def test_an_api_key_sets_its_own_conversation_only(machine: Machine, fake_llm: Any) -> None:
    telegram = configure(machine, fake_llm.url)
    config = (machine.hermes / "config.yaml").read_bytes()
    with running(machine, telegram) as chats:
        first = chats.call("alice", "hello")
        session = first.headers["X-Hermes-Session-Id"]
        for line in SETTINGS:
            assert "for this chat" in answer_of(chats.call("alice", line, session))
        refused = [answer_of(chats.call(who, line)) for who in ("alice", None) for line in GLOBAL]
        # bob naming alice's conversation: an unknown id, nothing set.
        tried = [chats.call("bob", line, session).status_code for line in SETTINGS]
        answer_of(chats.call("alice", "again", session))
        mine = carried(fake_llm.requests[-1])
        answer_of(chats.call("bob", "hello"))
        theirs = carried(fake_llm.requests[-1])
    assert mine == SET and theirs == UNSET
    assert tried == [404, 404, 404]
    assert all(TERMINAL_ONLY in said or "Only the terminal chat" in said for said in refused)
    assert (machine.hermes / "config.yaml").read_bytes() == config
