"""Telegram through python-telegram-bot, against a local fake of the Bot API."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import telegram as _telegram_extra  # noqa: F401 - the extra is part of the dev install

from hermes.gateway.access import REFUSAL  # noqa: E402
from hermes.gateway.envelopes import Origin  # noqa: E402
from hermes.gateway.errors import NotConnected, PlatformStartError  # noqa: E402
from tests.fakes.llm_server import text  # noqa: E402
from tests.gateway.fake_platforms import FakeTelegram  # noqa: E402
from tests.gateway.harness import GatewayThread, wait_for  # noqa: E402

TOKEN = "424242:AAE-fake-telegram-token-do-not-log"


@pytest.fixture
def telegram():
    with FakeTelegram(TOKEN) as server:
        yield server


def platforms(server: FakeTelegram, token: str = TOKEN) -> dict:
    return {
        "telegram": {
            "token": token,
            "allowed_users": [42],
            "base_url": server.base_url,
            "poll_timeout": 1,
        }
    }


@pytest.mark.usefixtures("config_file")
def test_a_conversation_over_telegram(hermes_home: Path, fake_llm, telegram, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    long = " ".join(f"word{n}" for n in range(1200))  # ~9000 characters
    fake_llm.enqueue(text("hello Ada"), text(long, delay=0.2))
    with GatewayThread(hermes_home, api=None, platforms=platforms(telegram)) as gateway:
        telegram.user_sends("hi there")
        wait_for(lambda: telegram.called("sendMessage"))
        telegram.user_sends("tell me everything")
        wait_for(lambda: len(telegram.called("sendMessage")) == 4)  # the answer in 3 pieces
        telegram.user_sends("who are you?", user_id=7, chat_id=7)
        wait_for(lambda: len(telegram.called("sendMessage")) == 5)
        sent = [m["text"] for m in telegram.called("sendMessage")]
        assert sent[0] == "hello Ada"
        assert all(len(p) <= 4096 for p in sent[1:4])
        assert " ".join(sent[1:4]) == long
        assert sent[-1] == REFUSAL.format(user_id=7)
        assert telegram.called("sendChatAction")[0]["action"] == "typing"
        session = gateway.db.gateway.get_route("telegram:42")
        assert [m["content"] for m in gateway.db.get_conversation_messages(session)][:2] == [
            "hi there",
            "hello Ada",
        ]
        assert gateway.db.gateway.get_route("telegram:7") is None
    assert "getUpdates" in caplog.text or "telegram: polling as @hermes_test_bot" in caplog.text
    assert TOKEN not in caplog.text


@pytest.mark.usefixtures("config_file")
def test_a_rejected_token_is_a_clear_error(hermes_home: Path, telegram, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "111:wrong-token-abcdef"
    gateway = GatewayThread(hermes_home, api=None, platforms=platforms(telegram, wrong))
    try:
        with pytest.raises(PlatformStartError, match="Telegram rejected the bot token") as failure:
            gateway.start()
    finally:
        gateway.stop()
    assert wrong not in str(failure.value)
    assert wrong not in caplog.text


@pytest.mark.usefixtures("config_file")
def test_a_reply_after_the_adapter_closed_says_it_is_not_connected(
    hermes_home: Path, telegram
) -> None:
    with GatewayThread(hermes_home, api=None, platforms=platforms(telegram)) as gateway:
        adapter = gateway.runner.adapters["telegram"]
        gateway.call(adapter.stop_receiving())  # as the runner stops it
        gateway.call(adapter.close())
        with pytest.raises(NotConnected, match="telegram is not connected"):
            gateway.call(adapter.send(Origin("telegram", "42"), "too late"))
    assert not telegram.called("sendMessage")
