"""The chat path: allow-lists, one turn at a time per conversation, acks, /stop, /new."""

from __future__ import annotations

import concurrent.futures
import logging
import re
from pathlib import Path

import openai
import pytest

from hermes.agent.turn_result import INTERRUPT_WAITING_FOR_MODEL_PREFIX
from hermes.gateway.access import REFUSAL
from hermes.gateway.runner import QUEUED_ACK
from tests.fakes.llm_server import hang, text
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for

TOKEN = "123456:telegram-token-that-must-not-leak"


@pytest.fixture
def chat_gateway(hermes_home: Path, config_file: Path):
    chats: list[FakeChat] = []

    def make(runner, settings):
        chats.append(FakeChat(runner, settings))
        return chats[0]

    platforms = {"telegram": {"token": TOKEN, "allowed_users": [42, "7"]}}
    with GatewayThread(
        hermes_home, api=None, platforms=platforms, adapters={"telegram": make}
    ) as gateway:
        gateway.chat = chats[0]
        yield gateway


def send(gateway: GatewayThread, *messages) -> None:
    async def deliver() -> None:
        for message in messages:
            await gateway.runner.handle_message(message)

    gateway.call(deliver())


def test_twenty_messages_at_once_are_answered_in_order(chat_gateway, fake_llm) -> None:
    fake_llm.latency = 0.02
    send(chat_gateway, *[incoming(f"m{n}") for n in range(20)])
    answers = lambda: [t for t in chat_gateway.chat.texts() if t.startswith("echo:")]  # noqa: E731
    wait_for(lambda: len(answers()) == 20)
    assert answers() == [f"echo: m{n}" for n in range(20)]
    assert chat_gateway.chat.texts().count(QUEUED_ACK) == 19
    session = chat_gateway.db.gateway.get_route("telegram:100")
    stored = [m["content"] for m in chat_gateway.db.get_conversation_messages(session)]
    assert stored == [x for n in range(20) for x in (f"m{n}", f"echo: m{n}")]
    # Nothing is left in the persisted queue once everything was answered.
    assert chat_gateway.db.gateway.pending_gateway_inputs() == []


def test_concurrent_requests_to_one_conversation_never_interleave(gateway, fake_llm) -> None:
    fake_llm.latency = 0.01
    with openai.OpenAI(
        base_url=gateway.url, api_key=gateway.api_key, max_retries=0, timeout=60
    ) as client:
        first = client.chat.completions.with_raw_response.create(
            model="fake-model", messages=[{"role": "user", "content": "start"}]
        )
        session = first.headers["X-Hermes-Session-Id"]

        def one(n: int) -> str:
            reply = client.chat.completions.create(
                model="fake-model",
                messages=[{"role": "user", "content": f"q{n}"}],
                extra_headers={"X-Hermes-Session-Id": session},
            )
            return reply.choices[0].message.content

        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(one, range(20)))
    assert answers == [f"echo: q{n}" for n in range(20)]
    stored = [m["content"] for m in gateway.db.get_conversation_messages(session)]
    assert len(stored) == 42
    for question, answer in zip(stored[0::2], stored[1::2], strict=True):
        assert answer == f"echo: {question}"  # each answer right after its question


def test_different_conversations_run_concurrently(chat_gateway, fake_llm) -> None:
    fake_llm.latency = 0.5
    send(chat_gateway, *[incoming(f"hello {n}", chat=str(n), user="42") for n in range(4)])
    wait_for(lambda: len(chat_gateway.chat.texts()) == 4, timeout=2.0)  # < 4 x 0.5 s in series
    assert QUEUED_ACK not in chat_gateway.chat.texts()


def test_unlisted_user_gets_one_refusal_and_nothing_else(chat_gateway, fake_llm) -> None:
    send(chat_gateway, incoming("let me in", user="666"), incoming("please", user="666"))
    assert chat_gateway.chat.texts() == [REFUSAL.format(user_id="666")]
    assert fake_llm.requests == []
    assert chat_gateway.db.list_conversations() == []
    assert chat_gateway.db.gateway.get_route("telegram:100") is None


def test_stop_interrupts_the_running_turn_and_queued_messages_still_run(
    chat_gateway, fake_llm
) -> None:
    fake_llm.enqueue(hang(30))
    send(chat_gateway, incoming("slow one"), incoming("next one"))
    wait_for(lambda: len(fake_llm.requests) == 1)
    send(chat_gateway, incoming("/stop"))
    wait_for(lambda: "echo: next one" in chat_gateway.chat.texts(), timeout=10)
    texts = chat_gateway.chat.texts()
    assert texts[:2] == [QUEUED_ACK, "Stopping the current reply."]
    assert texts[3:] == ["echo: next one"]
    # Stopped while it waited for the model: Hermes Agent 0.19's sentence, by which its
    # tools tell such a turn ("Operation interrupted: waiting for model response (2.1s
    # elapsed).").
    waiting = re.escape(INTERRUPT_WAITING_FOR_MODEL_PREFIX) + r"\d+\.\ds elapsed\)\."
    assert re.fullmatch(waiting, texts[2])
    session = chat_gateway.db.gateway.get_route("telegram:100")
    stored = [m["content"] for m in chat_gateway.db.get_conversation_messages(session)]
    # What the chat was shown is what is stored: the stopped turn's note answers it.
    assert stored == ["slow one", texts[2], "next one", "echo: next one"]


def test_new_starts_a_fresh_conversation(chat_gateway, fake_llm) -> None:
    send(chat_gateway, incoming("remember me"))
    wait_for(lambda: "echo: remember me" in chat_gateway.chat.texts())
    old = chat_gateway.db.gateway.get_route("telegram:100")
    send(chat_gateway, incoming("/new"), incoming("who am I?"))
    wait_for(lambda: "echo: who am I?" in chat_gateway.chat.texts())
    fresh = chat_gateway.db.gateway.get_route("telegram:100")
    assert fresh != old
    assert [m["content"] for m in chat_gateway.db.get_conversation_messages(fresh)] == [
        "who am I?",
        "echo: who am I?",
    ]
    assert len(fake_llm.requests[-1]["messages"]) == 2  # system + the new question only


def test_group_chats_can_have_one_conversation_per_user(hermes_home, fake_llm, model_key) -> None:
    from tests.gateway.harness import write_config

    write_config(hermes_home, fake_llm.url, gateway={"group_per_user": True})
    chats: list[FakeChat] = []
    platforms = {"telegram": {"token": TOKEN, "allowed_users": ["*"]}}
    factory = {"telegram": lambda r, s: chats.append(FakeChat(r, s)) or chats[-1]}
    with GatewayThread(hermes_home, api=None, platforms=platforms, adapters=factory) as gateway:
        send(
            gateway,
            incoming("a", user="1", chat="-5", group=True),
            incoming("b", user="2", chat="-5", group=True),
        )
        wait_for(lambda: len(chats[0].texts()) == 2)
        one, two = (
            gateway.db.gateway.get_route("telegram:-5:u1"),
            gateway.db.gateway.get_route("telegram:-5:u2"),
        )
    assert one and two and one != two


def test_typing_shows_while_a_turn_runs(chat_gateway, fake_llm) -> None:
    fake_llm.enqueue(text("done", delay=0.3))
    send(chat_gateway, incoming("think"))
    wait_for(lambda: "done" in chat_gateway.chat.texts())
    assert chat_gateway.chat.typing_count >= 2


def test_long_replies_are_split_to_the_platform_limit(chat_gateway, fake_llm) -> None:
    long = " ".join(f"word{n}" for n in range(400))
    fake_llm.enqueue(text(long))
    send(chat_gateway, incoming("talk a lot"))
    wait_for(lambda: len(chat_gateway.chat.texts()) >= 2)
    pieces = chat_gateway.chat.texts()
    assert all(len(p) <= FakeChat.max_length for p in pieces)
    assert " ".join(pieces) == long


def test_secrets_never_reach_the_logs(chat_gateway, fake_llm, caplog, model_key) -> None:
    caplog.set_level(logging.DEBUG)
    logging.getLogger("some.library").info("GET https://api.telegram.org/bot%s/getMe", TOKEN)
    try:
        raise RuntimeError(f"bad key {model_key}")
    except RuntimeError:
        logging.getLogger("some.library").exception("request failed")
    send(chat_gateway, incoming("hi"))
    wait_for(lambda: "echo: hi" in chat_gateway.chat.texts())
    assert "[redacted]" in caplog.text
    assert TOKEN not in caplog.text
    assert model_key not in caplog.text


def test_messages_handled_concurrently_keep_their_order(chat_gateway, fake_llm) -> None:
    """Adapters like discord.py hand over each message in its own task."""
    import asyncio

    async def burst() -> None:
        first = [
            chat_gateway.runner.handle_message(incoming(f"n{n}", chat="900")) for n in range(10)
        ]
        await asyncio.gather(*first)
        await asyncio.gather(
            chat_gateway.runner.handle_message(incoming("/new", chat="900")),
            chat_gateway.runner.handle_message(incoming("after new", chat="900")),
        )

    chat_gateway.call(burst())
    answers = lambda: [t for t in chat_gateway.chat.texts("900") if t.startswith("echo:")]  # noqa: E731
    wait_for(lambda: len(answers()) == 11)
    # The old conversation answers in order; the new one runs on its own lane.
    assert [a for a in answers() if a != "echo: after new"] == [f"echo: n{n}" for n in range(10)]
    fresh = chat_gateway.db.gateway.get_route("telegram:900")
    stored = [m["content"] for m in chat_gateway.db.get_conversation_messages(fresh)]
    assert stored == ["after new", "echo: after new"]
