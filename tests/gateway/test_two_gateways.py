"""Two gateways on one store (one HERMES_HOME/state.db): a chat's route is whatever the
store says, so ``/new`` through one gateway moves the chat in the other at once."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.gateway.runner import QUEUED_ACK
from hermes.tools.events import CompletionEvent
from tests.fakes.llm_server import text
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for

KEY = "telegram:100"


def chat_gateway(home: Path) -> GatewayThread:
    chats: list[FakeChat] = []
    platforms = {"telegram": {"token": "123:two-gateways", "allowed_users": [42]}}
    factory = {"telegram": lambda r, s: chats.append(FakeChat(r, s)) or chats[-1]}
    gateway = GatewayThread(home, api=None, platforms=platforms, adapters=factory).start()
    gateway.chat = chats[0]
    return gateway


@pytest.fixture
def pair(hermes_home: Path, config_file: Path) -> Iterator[tuple[GatewayThread, GatewayThread]]:
    a = chat_gateway(hermes_home)
    try:
        b = chat_gateway(hermes_home)
        try:
            yield a, b
        finally:
            b.stop()
    finally:
        a.stop()


def say(gateway: GatewayThread, words: str) -> None:
    gateway.call(gateway.runner.handle_message(incoming(words)))


def conversation(gateway: GatewayThread) -> str:
    return gateway.db.get_session(gateway.db.get_route(KEY))["conversation_id"]


def stored(gateway: GatewayThread, conversation_id: str) -> list[str]:
    return [m["content"] for m in gateway.db.get_conversation_messages(conversation_id)]


def test_new_through_one_gateway_moves_the_chat_in_the_other(pair, fake_llm) -> None:
    a, b = pair
    say(b, "hello")
    wait_for(lambda: "echo: hello" in b.chat.texts())
    old = conversation(b)
    fake_llm.enqueue(text("a slow answer", delay=0.5))
    say(b, "slow question")
    wait_for(lambda: len(fake_llm.requests) == 2)
    say(a, "/new")  # while B is still answering in the old conversation
    assert a.chat.texts() == ["Started a new conversation."]
    fresh = conversation(a)
    assert fresh != old
    wait_for(lambda: "a slow answer" in b.chat.texts())
    assert conversation(b) == fresh  # B's finished turn did not move the route back
    say(b, "who am I?")
    wait_for(lambda: "echo: who am I?" in b.chat.texts())
    assert stored(b, fresh) == ["who am I?", "echo: who am I?"]
    assert stored(b, old) == ["hello", "echo: hello", "slow question", "a slow answer"]
    assert len(fake_llm.requests[-1]["messages"]) == 2  # system + the new question only
    assert conversation(a) == conversation(b) == fresh


def test_a_completion_event_for_a_conversation_reset_elsewhere_is_dropped(
    pair, fake_llm, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="hermes.gateway")
    a, b = pair
    say(b, "start the build")
    say(b, "and test it")  # B has looked the chat up since it started the conversation
    wait_for(lambda: "echo: and test it" in b.chat.texts())
    old = conversation(b)
    say(a, "/new")
    requests = len(fake_llm.requests)
    event = CompletionEvent(
        process_id="proc_old",
        conversation_id=old,
        command="make build",
        exit_code=0,
        output_tail="build ok",
        finished_at=time.time(),
    )
    watcher = threading.Thread(target=b.runner._completion_arrived, args=(event,))
    watcher.start()
    watcher.join()
    wait_for(lambda: "dropping the completion event of process proc_old" in caplog.text)
    time.sleep(0.2)
    assert len(fake_llm.requests) == requests
    answers = [t for t in b.chat.texts() if t != QUEUED_ACK]
    assert answers == ["echo: start the build", "echo: and test it"]
    assert stored(b, old) == [
        "start the build",
        "echo: start the build",
        "and test it",
        "echo: and test it",
    ]
    assert conversation(b) != old
