"""/steer, /queue and /stop as another user would try them on someone else's turn.

In a group chat where each member has a conversation of their own
(``gateway.group_per_user``), what user 7 steers or queues while user 42's turn runs
goes to 7's own conversation, never into 42's turn; over the HTTP API bob naming
alice's conversation with any command (``/steer``, ``/queue``, ``/stop``, ``/new``,
``/undo``, ``/retry``, ``/title``, ``/compress``, ...) is answered as an unknown id (404),
while her turn runs and after, and nothing of his reaches it.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.llm_server import Reply, hang, last_user_text, text, tool_call
from tests.gateway.command_attacks import (
    GROUP,
    Machine,
    answer_of,
    configure,
    planted_machine,
    running,
)
from tests.gateway.fakechat import incoming
from tests.gateway.harness import wait_for

pytestmark = pytest.mark.slow  # a gateway per test

LONG = "the long job"  # the victim's turn: it waits, calls a tool, then answers


@pytest.fixture
def machine(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    yield from planted_machine(monkeypatch)  # hermes_home: for its clean environment


def slow_victim(body: dict[str, Any]) -> Reply | None:
    """The long job waits 3 s and calls a tool before it answers; anything else echoes."""
    last = (body.get("messages") or [{}])[-1]
    if last.get("role") == "tool":
        return text("The long job is done.")
    if last_user_text(body) == LONG:
        return hang(3, then=tool_call("read_file", {"path": "missing.txt"}))
    return None


def test_a_group_member_steers_and_queues_only_their_own_conversation(
    machine: Machine, fake_llm: Any
) -> None:
    fake_llm.responder = slow_victim
    telegram = configure(machine, fake_llm.url)
    with running(machine, telegram) as chats:
        chats.sends("42", LONG, group=True)
        wait_for(lambda: len(fake_llm.requests) == 1)
        said = chats.says("7", "/steer STEERED-BY-7", group=True)
        said += chats.says("7", "/queue QUEUED-BY-7", group=True, answers=2)
        wait_for(lambda: any("long job is done" in t for t in chats.telegram.texts()), timeout=60)
        wait_for(lambda: "QUEUED-BY-7" in chats.stored(chats.route("7", group=True)), timeout=60)
        victim = chats.stored(chats.route("42", group=True))
        attacker = chats.stored(chats.route("7", group=True))
    assert not any(t.startswith("Steering the running turn") for t in said), said
    assert "STEERED-BY-7" not in victim and "QUEUED-BY-7" not in victim
    assert "STEERED-BY-7" in attacker and "QUEUED-BY-7" in attacker
    victims_requests = [b for b in fake_llm.requests if LONG in str(b["messages"])]
    assert victims_requests and not any("BY-7" in str(b["messages"]) for b in victims_requests)


# What bob sends naming alice's conversation: every command that acts on one (/model
# over the API names no conversation: each request chooses its own).
BOBS = (
    "/steer STEERED-BY-BOB",
    "/queue QUEUED-BY-BOB",
    "/stop",
    "/status",
    "/new",
    "/undo",
    "/retry",
    "/title BY-BOB",
    "/compress",
    "/usage",
    "/personality pirate",
    "/debug",
)


def test_another_key_cannot_steer_queue_or_stop_a_conversation(
    machine: Machine, fake_llm: Any
) -> None:
    fake_llm.responder = slow_victim
    telegram = configure(machine, fake_llm.url)
    with running(machine, telegram) as chats:
        started = chats.call("alice", "hello")
        session = started.headers["X-Hermes-Session-Id"]
        with ThreadPoolExecutor(1) as pool:
            long_turn = pool.submit(chats.call, "alice", LONG, session)
            wait_for(lambda: any(LONG in str(b["messages"]) for b in fake_llm.requests))
            tried = [chats.call("bob", line, session) for line in BOBS]
            done = answer_of(long_turn.result(timeout=60))
        after = [chats.call("bob", line, session) for line in BOBS]  # and with no turn running
        stored = chats.stored(session)
        title = (chats.gateway.db.get_session(session) or {}).get("title")
        tip = chats.gateway.db.resolve_tip(session)
    assert [r.status_code for r in tried + after] == [404] * 2 * len(BOBS), [
        r.text for r in tried + after
    ]
    assert title is None and tip == session  # no /title, /new or /compress of bob's took
    assert done == "The long job is done."  # bob's /stop stopped nothing
    assert "BY-BOB" not in stored
    assert not any("BY-BOB" in str(b["messages"]) for b in fake_llm.requests)


def test_a_group_conversation_is_no_members_to_continue_in_a_topic(
    machine: Machine, fake_llm: Any
) -> None:
    """``/topic ID`` continues one of the sender's own conversations in a Telegram topic
    of their private chat. A group's conversation is nobody's own, though it is stored
    under whoever spoke first: continued in 42's private topic, 7's group text would
    lead turns that act as 42 in private, and 42's private turns would land in what
    every member's group turn reads."""
    telegram = configure(machine, fake_llm.url, gateway={"group_per_user": False})
    with running(machine, telegram) as chats:
        chats.says("42", "hello group", group=True)
        chats.says("7", "PLANTED-BY-7 in the group", group=True)
        group = chats.gateway.db.gateway.get_route(f"telegram:{GROUP}")
        assert group is not None
        message = incoming(f"/topic {group}", user="42", chat="42", thread="5")
        chats.gateway.call(chats.gateway.runner.handle_message(message))
        wait_for(lambda: chats.telegram.texts("42"))
        said = chats.telegram.texts("42")[0]
        topic = chats.gateway.db.gateway.get_route("telegram:42:t5")
    assert said.startswith(f"You have no conversation '{group}' on telegram"), said
    assert topic != group
