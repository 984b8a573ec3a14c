"""/status, /stop, /queue and /steer in a messaging chat: a real gateway (its lanes, its
store, its turn workers), a fake chat platform and the fake model over HTTP."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from hermes.gateway.runner import QUEUED_ACK
from hermes.tools.processes.store import KILLED, ProcessStore
from tests.fakes.llm_server import hang, text, tool_call
from tests.gateway.api_calls import ask
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for

STEERED = "Steering the running turn after its next tool call: also check the tests"


@pytest.fixture
def chat_gateway(hermes_home: Path, config_file: Path):
    chats: list[FakeChat] = []
    factory = {"telegram": lambda r, s: chats.append(FakeChat(r, s)) or chats[-1]}
    platforms = {"telegram": {"token": "123456:" + "x" * 32, "allowed_users": ["42"]}}
    with GatewayThread(hermes_home, api=None, platforms=platforms, adapters=factory) as gateway:
        gateway.chat = chats[0]
        yield gateway


def send(gateway: GatewayThread, *messages: str) -> None:
    async def deliver() -> None:
        for message in messages:
            await gateway.runner.handle_message(incoming(message))

    gateway.call(deliver())


def stored(gateway: GatewayThread) -> list[tuple[str, str | None]]:
    route = gateway.db.gateway.get_route("telegram:100")
    return [(m["role"], m["content"]) for m in gateway.db.get_conversation_messages(route)]


def test_steer_reaches_the_running_turn_after_its_tool_call(chat_gateway, fake_llm) -> None:
    fake_llm.enqueue(
        hang(3, then=tool_call("read_file", {"path": "missing.txt"})), text("Checked both.")
    )
    send(chat_gateway, "look at missing.txt")
    wait_for(lambda: len(fake_llm.requests) == 1)
    send(chat_gateway, "/steer also check the tests")
    wait_for(lambda: "Checked both." in chat_gateway.chat.texts(), timeout=30)
    assert chat_gateway.chat.texts() == [STEERED, "Checked both."]
    roles = [role for role, _ in stored(chat_gateway)]
    assert roles == ["user", "assistant", "tool", "user", "assistant"]
    assert stored(chat_gateway)[3] == ("user", "also check the tests")
    assert fake_llm.requests[-1]["messages"][-1]["content"] == "also check the tests"


def test_steer_the_turn_did_not_take_is_the_next_message(chat_gateway, fake_llm) -> None:
    fake_llm.enqueue(hang(3, then=text("First answer.")))
    send(chat_gateway, "hello")
    wait_for(lambda: len(fake_llm.requests) == 1)
    send(chat_gateway, "/steer also check the tests")
    wait_for(lambda: "echo: also check the tests" in chat_gateway.chat.texts(), timeout=30)
    assert chat_gateway.chat.texts() == [STEERED, "First answer.", "echo: also check the tests"]
    contents = [content for _, content in stored(chat_gateway)]
    assert contents.count("also check the tests") == 1


def test_steer_without_a_running_turn_is_an_ordinary_message(chat_gateway, fake_llm) -> None:
    send(chat_gateway, "/steer")
    send(chat_gateway, "/steer use the staging server")
    wait_for(lambda: "echo: use the staging server" in chat_gateway.chat.texts())
    texts = chat_gateway.chat.texts()
    assert texts[0].startswith("Usage: /steer <prompt>")
    assert texts[1:] == ["echo: use the staging server"]
    assert stored(chat_gateway) == [
        ("user", "use the staging server"),
        ("assistant", "echo: use the staging server"),
    ]


def test_queue_waits_behind_the_running_turn(chat_gateway, fake_llm) -> None:
    fake_llm.enqueue(hang(2, then=text("First answer.")))
    send(chat_gateway, "first")
    wait_for(lambda: len(fake_llm.requests) == 1)
    send(chat_gateway, "/queue", "/q then this")
    wait_for(lambda: "echo: then this" in chat_gateway.chat.texts(), timeout=30)
    texts = chat_gateway.chat.texts()
    assert texts[0].startswith("Usage: /queue <prompt>")
    assert texts[1:] == [QUEUED_ACK, "First answer.", "echo: then this"]
    assert [c for _, c in stored(chat_gateway)] == [
        "first",
        "First answer.",
        "then this",
        "echo: then this",
    ]


def test_status_answers_at_once_while_a_turn_runs(chat_gateway, fake_llm) -> None:
    send(chat_gateway, "/status")
    wait_for(lambda: len(chat_gateway.chat.texts()) == 1)
    assert "Conversation: new" in chat_gateway.chat.texts()[0]
    fake_llm.enqueue(hang(3, then=text("Slow answer.")))
    send(chat_gateway, "slow one", "waiting one")
    wait_for(lambda: len(fake_llm.requests) == 1)
    send(chat_gateway, "/status")
    wait_for(lambda: len(chat_gateway.chat.texts()) == 3)
    status = chat_gateway.chat.texts()[2]
    route = chat_gateway.db.gateway.get_route("telegram:100")
    assert f"Conversation: {route} (untitled), segment 1" in status
    assert "Model: fake-model at http://" in status
    assert "a turn is running, 1 message queued" in status
    wait_for(lambda: "echo: waiting one" in chat_gateway.chat.texts(), timeout=30)
    send(chat_gateway, "/status")
    wait_for(lambda: len(chat_gateway.chat.texts()) == 6)
    after = chat_gateway.chat.texts()[5]
    assert "no turn is running, nothing queued" in after and "Context: ~" in after


def test_stop_also_stops_the_chat_background_processes(chat_gateway, fake_llm, hermes_home):
    fake_llm.enqueue(
        tool_call("terminal", {"command": "sleep 120", "background": True}), text("Started.")
    )
    send(chat_gateway, "start the long job")
    wait_for(lambda: "Started." in chat_gateway.chat.texts(), timeout=30)
    (record,) = ProcessStore(hermes_home).all()
    assert not record.finished and psutil.pid_exists(record.pid)
    send(chat_gateway, "/stop")
    wait_for(lambda: len(chat_gateway.chat.texts()) == 2, timeout=30)
    reply = chat_gateway.chat.texts()[1]
    assert reply.startswith("Stopped 1 background process:") and "sleep 120" in reply
    after = ProcessStore(hermes_home).load(record.id)
    assert after is not None and after.status == KILLED
    send(chat_gateway, "/stop")
    wait_for(lambda: len(chat_gateway.chat.texts()) == 3)
    assert chat_gateway.chat.texts()[2] == "Nothing is running right now."


def test_queue_steer_and_status_over_the_http_api(client, gateway, fake_llm) -> None:
    _, session = ask(client, "one")
    assert ask(client, "/queue", session)[0].startswith("Usage: /queue <prompt>")
    assert ask(client, "/q two", session)[0] == "echo: two"
    assert ask(client, "/steer three", session)[0] == "echo: three"  # no turn runs
    status = ask(client, "/status", session)[0]
    assert f"Conversation: {session} (untitled)" in status and "no turn is running" in status
    asked = len(fake_llm.requests)
    fake_llm.enqueue(hang(3, then=tool_call("read_file", {"path": "x.txt"})), text("Both done."))
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(ask, client, "four", session)
        wait_for(lambda: len(fake_llm.requests) > asked)
        steered = ask(client, "/steer also check the tests", session)[0]
        assert running.result(timeout=60)[0] == "Both done."
    assert steered == STEERED
    assert fake_llm.requests[-1]["messages"][-1]["content"] == "also check the tests"
    users = [m["content"] for m in gateway.db.get_messages(session) if m["role"] == "user"]
    assert users == ["one", "two", "three", "four", "also check the tests"]


def test_an_api_steer_the_turn_did_not_take_is_the_conversation_next_turn(
    client, gateway, fake_llm
) -> None:
    """Over the API the steer was acknowledged ("Steering ..."): a turn that answers without
    another tool call leaves it to the conversation's next turn, never drops it."""
    _, session = ask(client, "one")
    asked = len(fake_llm.requests)
    fake_llm.enqueue(hang(3, then=text("First answer.")))
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(ask, client, "two", session)
        wait_for(lambda: len(fake_llm.requests) > asked)
        assert ask(client, "/steer also check the tests", session)[0] == STEERED
        assert running.result(timeout=60)[0] == "First answer."

    def contents() -> list[str]:
        return [m["content"] for m in gateway.db.get_messages(session)]

    wait_for(lambda: "echo: also check the tests" in contents(), timeout=30)
    assert contents() == [
        "one", "echo: one", "two", "First answer.", "also check the tests",
        "echo: also check the tests",
    ]  # fmt: skip
    assert gateway.db.invariant_violations() == []
