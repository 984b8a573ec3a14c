"""``GatewayRunner`` on its own: one asyncio loop per test, a real SQLite store in
HERMES_HOME, real agents talking to the fake model, and a recording chat adapter
(tests/gateway/fakechat.py) in place of a platform. No HTTP API server, no
subprocess: each test runs well under a second. Checked through what the chat
receives and what the store holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.config import load_config
from hermes.gateway.access import REFUSAL
from hermes.gateway.runner import QUEUED_ACK, GatewayRunner
from hermes.state import SessionDB
from tests.gateway.harness import until
from tests.gateway.runner_chat import KEY, Chat, Model, scenario


@pytest.fixture
def db(hermes_home: Path, config_file: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=hermes_home / "state.db") as store:
        yield store


def stored(db: SessionDB) -> list[str]:
    conversation = db.gateway.get_route(KEY)
    return [m["content"] for m in db.get_conversation_messages(conversation)]


@pytest.mark.parametrize("round_", range(5))
def test_a_chats_messages_are_answered_in_order_and_the_waiting_ones_acknowledged(
    hermes_home: Path, db: SessionDB, fake_llm, round_: int
) -> None:
    Model(fake_llm)
    chat = Chat(hermes_home, db)

    async def run() -> None:
        await chat.runner.start()
        try:
            await asyncio.gather(*(chat.say(f"m{n}") for n in range(5)))
            await until(lambda: len(chat.answers()) == 5)
        finally:
            await chat.runner.stop(grace=5)

    scenario(run)
    assert chat.answers() == [f"answer to m{n}" for n in range(5)]
    assert chat.texts().count(QUEUED_ACK) == 4  # every message but the first waited
    assert stored(db) == [x for n in range(5) for x in (f"m{n}", f"answer to m{n}")]
    assert db.gateway.pending_gateway_inputs() == []


def test_a_user_off_the_allow_list_is_refused_and_nothing_is_stored(
    hermes_home: Path, db: SessionDB, fake_llm
) -> None:
    model = Model(fake_llm)
    chat = Chat(hermes_home, db)

    async def run() -> None:
        await chat.runner.start()
        try:
            await chat.say("let me in", user="666")
        finally:
            await chat.runner.stop(grace=5)

    scenario(run)
    assert chat.texts() == [REFUSAL.format(user_id="666")]
    assert model.asked == []
    assert db.gateway.get_route(KEY) is None and db.list_conversations() == []


def test_stop_new_and_help_act_at_once_even_while_a_turn_runs(
    hermes_home: Path, db: SessionDB, fake_llm
) -> None:
    model = Model(fake_llm)
    chat = Chat(hermes_home, db)

    async def run() -> dict[str, Any]:
        await chat.runner.start()
        try:
            await chat.say("/stop")
            idle = chat.texts()[-1]
            await chat.say("first")
            await until(lambda: "answer to first" in chat.texts())
            first = db.gateway.get_route(KEY)
            model.hold()
            await chat.say("slow")
            await until(lambda: model.asked[-1:] == ["slow"])
            status = chat.runner.status()
            before = len(chat.texts())
            await chat.say("/help")
            helped = "\n".join(chat.texts()[before:])  # sent in pieces of max_length
            await chat.say("/new")
            renewed = chat.texts()[-1]
            model.release()
            await until(lambda: "answer to slow" in chat.texts())
            await chat.say("after new")
            await until(lambda: "answer to after new" in chat.texts())
            return {"idle": idle, "first": first, "status": status, "help": helped,
                    "new": renewed}  # fmt: skip
        finally:
            model.release()
            await chat.runner.stop(grace=5)

    seen = scenario(run)
    assert seen["idle"] == "Nothing is running right now."
    assert seen["status"]["running_turns"] == 1 and seen["status"]["platforms"] == ["telegram"]
    assert "/new" in seen["help"]
    assert seen["new"] == "Started a new conversation."
    # The turn running at /new finished in the old conversation; what came after went on
    # in the new one.
    fresh = db.gateway.get_route(KEY)
    assert fresh != seen["first"]
    old = [m["content"] for m in db.get_conversation_messages(seen["first"])]
    assert old == ["first", "answer to first", "slow", "answer to slow"]
    assert [m["content"] for m in db.get_conversation_messages(fresh)] == [
        "after new",
        "answer to after new",
    ]


def test_input_waiting_at_stop_is_answered_by_the_next_run_in_order(
    hermes_home: Path, db: SessionDB, fake_llm
) -> None:
    model = Model(fake_llm)
    first, second = Chat(hermes_home, db), Chat(hermes_home, db)

    async def run() -> list[dict[str, Any]]:
        await first.runner.start()
        model.hold()
        try:
            await first.say("running", "waiting 1", "waiting 2")
            await until(lambda: model.asked == ["running"])
            stopping = asyncio.create_task(first.runner.stop(grace=10))
            await until(lambda: first.runner.closing)
            model.release()  # the running turn ends within the grace
            await stopping
        finally:
            model.release()
        kept = await asyncio.to_thread(db.gateway.pending_gateway_inputs)
        await second.runner.start()
        try:
            await until(lambda: len(second.answers()) == 2)
        finally:
            await second.runner.stop(grace=5)
        return kept

    kept = scenario(run)
    assert [row["payload"]["text"] for row in kept] == ["waiting 1", "waiting 2"]
    assert first.answers() == ["answer to running"]
    assert second.answers() == ["answer to waiting 1", "answer to waiting 2"]
    assert model.asked == ["running", "waiting 1", "waiting 2"]  # each asked once
    assert stored(db) == [
        "running", "answer to running",
        "waiting 1", "answer to waiting 1",
        "waiting 2", "answer to waiting 2",
    ]  # fmt: skip
    assert db.gateway.pending_gateway_inputs() == []


def test_a_runner_without_a_platform_refuses_to_start_in_one_sentence(
    hermes_home: Path, db: SessionDB
) -> None:
    runner = GatewayRunner(load_config(hermes_home / "config.yaml"), db=db, platforms={},
                           home=hermes_home)  # fmt: skip
    with pytest.raises(Exception, match="No platform is enabled") as caught:
        scenario(runner.start)
    assert "\n" not in str(caught.value)
