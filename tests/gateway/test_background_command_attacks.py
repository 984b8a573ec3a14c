"""/background and /agents as the other member of a group chat would try them.

A real gateway process (its own HOME: the planted machine) serves Telegram users 42
and 7, in private and in one group chat with a conversation per member, and the API
keys of alice and bob. A background task belongs to the user who asked: it runs in
their own workspace with their view (user 7's task cannot read 42's notes, nor the
SSH key, the home's ``.env`` or ``auth.json``), ``/agents`` lists only one's own tasks,
its report goes to the chat it was asked in and nowhere else, and its conversation is
stored as the asker's, which no API key of a principal reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.llm_server import Reply, hang, last_user_text, text
from tests.gateway.command_attacks import (
    CANARIES,
    GROUP,
    KEYS,
    OPERATOR_KEY,
    Machine,
    Telegram,
    configure,
    gateway_process,
    planted_machine,
    running,
)
from tests.gateway.harness import wait_for
from tests.gateway.principals import obedient

pytestmark = pytest.mark.slow  # gateway processes

NOTE = "42-private-note-8e1d"


@pytest.fixture
def machine(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    yield from planted_machine(monkeypatch)  # hermes_home: for its clean environment


def model(body: dict[str, Any]) -> Reply | None:
    """Obeys RUN:/READ: lines; ``SLOW`` waits before its answer (a task that runs)."""
    if last_user_text(body) == "SLOW" and body["messages"][-1].get("role") == "user":
        return hang(6, then=text("slow answer"))
    return obedient(body)


@pytest.fixture
def gateway(machine: Machine, fake_llm: Any) -> Iterator[tuple[Telegram, str]]:
    fake_llm.responder = model
    with gateway_process(machine, fake_llm.url) as (telegram, api, _):
        yield telegram, api


def test_a_background_task_is_its_askers_alone(
    machine: Machine, gateway: tuple[Telegram, str]
) -> None:
    telegram, api = gateway
    own = telegram.says("42", f"RUN: echo {NOTE} > notes.txt && pwd")
    folder = re.search(r"^(/\S+?)(?:>>)?$", own, re.MULTILINE)  # what pwd said
    assert folder is not None and NOTE not in own, own
    notes = Path(folder.group(1)) / "notes.txt"
    assert notes.read_text(encoding="utf-8").strip() == NOTE

    # User 7, in the group: background tasks that reach for 42's notes and the host's secrets.
    assert "#1" in telegram.says("7", f"/background READ: {notes}", group=True)
    secrets = (
        f"RUN: cat {notes} ~/.ssh/id_rsa {machine.hermes}/.env {machine.hermes}/auth.json "
        f"{machine.home}/.ssh/id_rsa; env"
    )
    assert "#2" in telegram.says("7", f"/background {secrets}", group=True)
    first, second = telegram.report(GROUP, "READ: "), telegram.report(GROUP, "RUN: ")
    for report in (first, second):
        assert "RESULT<<" in report, report
        assert NOTE not in report and not [c for c in CANARIES if c in report], report

    # User 42's task runs; 7's /agents in the same group does not list it, 42's does.
    assert "#1" in telegram.says("42", "/background SLOW", group=True)
    theirs = telegram.says("7", "/agents", group=True)
    mine = telegram.says("42", "/agents", group=True)
    assert "SLOW" in mine and "SLOW" not in theirs, (mine, theirs)
    slow = telegram.report(GROUP, "SLOW")
    assert slow.count("slow answer") == 1
    # Each report went to the group, where it was asked, and to no private chat.
    for chat in ("42", "7"):
        assert not [t for t in telegram.sent(chat) if "Background task" in t]

    # The task's conversation is 42's: bob's and alice's keys read it as an unknown id.
    conversation = re.search(r"Its conversation: (\S+?)\.\)", slow)
    assert conversation is not None, slow
    for who in ("alice", "bob"):
        headers = {"Authorization": f"Bearer {KEYS[who]}"}
        for path in ("/api/sessions/{id}", "/api/sessions/{id}/messages"):
            answer = httpx.get(api + path.format(id=conversation.group(1)), headers=headers)
            assert answer.status_code == 404, (who, path, answer.text)
    # Over the API, /background is refused for every key: there is no chat to report to.
    for key in (KEYS["alice"], OPERATOR_KEY):
        body = {"model": "fake-model", "messages": [{"role": "user", "content": "/background x"}]}
        answer = httpx.post(
            api + "/v1/chat/completions",
            json=body,
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
        assert "works in a messaging chat" in answer.json()["choices"][0]["message"]["content"]


def test_a_task_asked_in_a_group_acts_as_its_asker_in_that_group(
    machine: Machine, gateway: tuple[Telegram, str]
) -> None:
    """A group member's turns act as that member *in that group* (``42@-1001``: its own
    workspace and memory, never their direct chat's), since what is said there is read
    by every member; a background task asked there does too, so 42's direct-chat notes
    are not posted in the group by 42's own task."""
    telegram, _ = gateway
    own = telegram.says("42", f"RUN: echo {NOTE} > notes.txt && pwd")
    folder = re.search(r"^(/\S+?)(?:>>)?$", own, re.MULTILINE)
    assert folder is not None, own
    notes = Path(folder.group(1)) / "notes.txt"
    in_group = telegram.says("42", f"READ: {notes}", group=True)  # a turn there: refused
    assert "#1" in telegram.says("42", f"/background READ: {notes}", group=True)
    report = telegram.report(GROUP, "READ: ")
    assert "RESULT<<" in in_group and NOTE not in in_group, in_group
    assert "RESULT<<" in report and NOTE not in report, report
    # In 42's direct chat the same task reads 42's own notes.
    assert "#1" in telegram.says("42", f"/background READ: {notes}")
    assert NOTE in telegram.report("42", "READ: ")


def test_in_a_shared_group_agents_lists_only_the_senders_tasks(
    machine: Machine, fake_llm: Any
) -> None:
    """The default group chat: one conversation for all its members
    (``gateway.group_per_user`` off), each member still their own principal there."""
    fake_llm.responder = model
    telegram = configure(machine, fake_llm.url, gateway={"group_per_user": False})
    with running(machine, telegram) as chats:
        started = chats.says("42", "/background SLOW", group=True)[0]
        theirs = chats.says("7", "/agents", group=True)[0]
        mine = chats.says("42", "/agents", group=True)[0]
        wait_for(lambda: any("slow answer" in t for t in chats.telegram.texts(GROUP)), timeout=60)
    assert "#1" in started
    assert "SLOW" in mine and "SLOW" not in theirs, (mine, theirs)
