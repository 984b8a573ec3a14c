"""A ``GatewayRunner`` with a recording chat adapter and the fake model, for the tests
that drive one in-process (test_runner.py, test_own_commands.py)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hermes.config import load_config
from hermes.gateway.runner import GatewayRunner
from hermes.gateway.settings import platform_settings
from hermes.state import SessionDB
from tests.fakes.llm_server import last_user_text, text
from tests.gateway.fakechat import FakeChat, incoming

TOKEN = "123456:telegram-token-of-the-runner-tests"
KEY = "telegram:100"  # the session key of chat 100 (a private chat)


class Chat:
    """One gateway run: its runner and the chat adapter it started."""

    def __init__(self, home: Path, db: SessionDB) -> None:
        self.adapters: list[FakeChat] = []
        self.runner = GatewayRunner(
            load_config(home / "config.yaml"),
            db=db,
            platforms={"telegram": platform_settings("telegram", {"token": TOKEN,
                                                                  "allowed_users": [42]})},
            agent_options={"skip_context_files": True, "skip_memory": True, "cwd": home},
            home=home,
            adapters={"telegram": self._adapter},
        )  # fmt: skip

    def _adapter(self, runner: GatewayRunner, settings: Any) -> FakeChat:
        self.adapters.append(FakeChat(runner, settings))
        return self.adapters[-1]

    def texts(self) -> list[str]:
        return self.adapters[0].texts()

    def answers(self) -> list[str]:
        return [t for t in self.texts() if t.startswith("answer to ")]

    async def say(self, *words: str, user: str = "42") -> None:
        for said in words:
            await self.runner.handle_message(incoming(said, user=user))


def scenario(run: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(run(), 20))


class Model:
    """The fake model answers "answer to <text>"; ``hold`` keeps every answer back
    until ``release``."""

    def __init__(self, fake_llm) -> None:
        self.open = threading.Event()
        self.open.set()
        self.asked: list[str] = []
        fake_llm.responder = self.answer

    def answer(self, body: dict):
        self.asked.append(last_user_text(body))
        self.open.wait(15)
        return text(f"answer to {last_user_text(body)}")

    def hold(self) -> None:
        self.open.clear()

    def release(self) -> None:
        self.open.set()
