"""Graceful shutdown in-process: queued input is kept, a restart answers it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.llm_server import hang, text
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for

PLATFORMS = {"telegram": {"token": "tg-token-shutdown", "allowed_users": ["42"]}}


def chat_gateway(home: Path) -> GatewayThread:
    chats: list[FakeChat] = []
    factory = {"telegram": lambda r, s: chats.append(FakeChat(r, s)) or chats[-1]}
    gateway = GatewayThread(home, api=None, platforms=PLATFORMS, adapters=factory).start()
    gateway.chat = chats[0]
    return gateway


def say(gateway: GatewayThread, *texts: str) -> None:
    async def deliver() -> None:
        for words in texts:
            await gateway.runner.handle_message(incoming(words))

    gateway.call(deliver())


@pytest.mark.usefixtures("config_file")
def test_queued_input_is_answered_after_a_restart(hermes_home: Path, fake_llm) -> None:
    fake_llm.enqueue(text("first answer", delay=0.5))
    gateway = chat_gateway(hermes_home)
    try:
        say(gateway, "one", "two", "three")
        wait_for(lambda: len(fake_llm.requests) == 1)
        wait_for(lambda: len(gateway.db.gateway.pending_gateway_inputs()) == 2)
    finally:
        gateway.stop(grace=10)
    assert gateway.chat.texts()[-1] == "first answer"  # the running turn finished
    assert [p["payload"]["text"] for p in _pending(hermes_home)] == ["two", "three"]

    again = chat_gateway(hermes_home)
    try:
        wait_for(lambda: again.chat.texts() == ["echo: two", "echo: three"])
        assert again.db.gateway.pending_gateway_inputs() == []
        session = again.db.gateway.get_route("telegram:100")
        stored = [m["content"] for m in again.db.get_conversation_messages(session)]
        assert stored == ["one", "first answer", "two", "echo: two", "three", "echo: three"]
    finally:
        again.stop()


@pytest.mark.usefixtures("config_file")
def test_a_turn_outliving_the_grace_period_is_kept_and_answered_first_after_restart(
    hermes_home: Path, fake_llm
) -> None:
    """Nothing lost at shutdown (issue 13): the interrupted turn is undone and its message
    goes back to the queue ahead of what came after it; the restart answers each once."""
    fake_llm.enqueue(hang(60))
    gateway = chat_gateway(hermes_home)
    say(gateway, "slow", "queued")
    wait_for(lambda: len(fake_llm.requests) == 1)
    gateway.stop(grace=0.2)
    assert not [t for t in gateway.chat.texts() if t.startswith(("(stopped)", "Operation"))]
    assert gateway.chat.texts()[-1].startswith(
        "The gateway is shutting down; your message is saved"
    )
    in_arrival_order = sorted(_pending(hermes_home), key=lambda p: p["payload"]["seq"])
    assert [p["payload"]["text"] for p in in_arrival_order] == ["slow", "queued"]

    again = chat_gateway(hermes_home)
    try:
        wait_for(lambda: again.chat.texts() == ["echo: slow", "echo: queued"])
        session = again.db.gateway.get_route("telegram:100")
        standing = [m["content"] for m in again.db.get_messages(session)]
        assert standing == ["slow", "echo: slow", "queued", "echo: queued"]
        every = again.db.get_conversation_messages(session)
        assert [(m["content"], bool(m["undone"])) for m in every][:1] == [("slow", True)]
    finally:
        again.stop()


@pytest.mark.usefixtures("config_file")
def test_messages_arriving_during_shutdown_are_kept(hermes_home: Path, fake_llm) -> None:
    gateway = chat_gateway(hermes_home)
    try:
        gateway.runner.closing = True  # as between the signal and the adapters stopping
        say(gateway, "late message")
    finally:
        gateway.runner.closing = False
        gateway.stop()
    assert [p["payload"]["text"] for p in _pending(hermes_home)] == ["late message"]
    assert fake_llm.requests == []


def _pending(home: Path) -> list[dict]:
    from hermes.state import SessionDB

    with SessionDB(db_path=home / "state.db") as db:
        return db.gateway.pending_gateway_inputs()
