"""``GatewayRunner(make_model=...)``: every agent the gateway builds gets its model from
the factory (here ``hermes.testing.ScriptedModel``), not from the configured endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.config import load_config
from hermes.gateway.runner import GatewayRunner
from hermes.gateway.settings import platform_settings
from hermes.state import SessionDB
from hermes.testing import ModelRequest, ScriptedModel
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import until

TOKEN = "123456:telegram-token-of-the-model-factory"


@pytest.fixture
def db(hermes_home: Path, config_file: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=hermes_home / "state.db") as store:
        yield store


def test_a_gateways_agents_answer_from_the_model_factory(
    hermes_home: Path, db: SessionDB, fake_llm
) -> None:
    made: list[ScriptedModel] = []

    def answer(request: ModelRequest) -> str:
        return f"scripted answer to {request.last_user_text}"

    def make_model() -> ScriptedModel:
        made.append(ScriptedModel(function=answer))
        return made[-1]

    chats: list[FakeChat] = []
    runner = GatewayRunner(
        load_config(hermes_home / "config.yaml"),
        db=db,
        platforms={
            "telegram": platform_settings("telegram", {"token": TOKEN, "allowed_users": [42]})
        },
        agent_options={"skip_context_files": True, "skip_memory": True, "cwd": hermes_home},
        home=hermes_home,
        adapters={"telegram": lambda r, s: chats.append(FakeChat(r, s)) or chats[-1]},
        make_model=make_model,
    )

    async def run() -> None:
        await runner.start()
        try:
            await runner.handle_message(incoming("hello there"))
            await until(lambda: "scripted answer to hello there" in chats[0].texts())
        finally:
            await runner.stop(grace=5)

    asyncio.run(asyncio.wait_for(run(), 20))
    assert any(r.last_user_text == "hello there" for m in made for r in m.requests)
    assert fake_llm.requests == []  # the configured endpoint was never asked
