"""Slack through slack-bolt in Socket Mode, against a local fake of Slack's APIs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import slack_bolt  # noqa: F401 - the extra is part of the dev install

from hermes.gateway.access import REFUSAL  # noqa: E402
from hermes.gateway.adapters.slack import SlackAdapter  # noqa: E402
from hermes.gateway.envelopes import Origin  # noqa: E402
from hermes.gateway.errors import NotConnected, PlatformStartError  # noqa: E402
from tests.fakes.llm_server import text  # noqa: E402
from tests.gateway.fake_platforms import FakeSlack  # noqa: E402
from tests.gateway.harness import GatewayThread, wait_for  # noqa: E402

BOT_TOKEN = "xoxb-fake-slack-bot-token-0001"
APP_TOKEN = "xapp-fake-slack-app-token-0002"


@pytest.fixture
def slack():
    with FakeSlack(BOT_TOKEN, APP_TOKEN) as server:
        yield server


def platforms(server: FakeSlack, bot_token: str = BOT_TOKEN) -> dict:
    return {
        "slack": {
            "bot_token": bot_token,
            "app_token": APP_TOKEN,
            "allowed_users": ["U42"],
            "base_url": server.base_url,
        }
    }


@pytest.mark.usefixtures("config_file")
def test_a_conversation_over_slack(hermes_home: Path, fake_llm, slack, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    long = " ".join(f"word{n}" for n in range(1000))  # ~6900 characters
    fake_llm.enqueue(text("hello from hermes", delay=0.2), text(long))
    with GatewayThread(hermes_home, api=None, platforms=platforms(slack)) as gateway:
        wait_for(lambda: slack.connected)
        asked = slack.user_sends("hi there")
        wait_for(lambda: slack.called("chat.postMessage"))
        first = slack.called("chat.postMessage")[0]
        assert (first["channel"], first["text"]) == ("D1", "hello from hermes")
        assert slack.called("reactions.add")[0]["timestamp"] == asked
        wait_for(lambda: slack.called("reactions.remove"))

        mention = slack.user_sends(
            "<@UBOT> write a lot", channel="C9", channel_type="channel", kind="app_mention"
        )
        wait_for(lambda: len(slack.called("chat.postMessage")) == 3)
        pieces = slack.called("chat.postMessage")[1:]
        assert all(p["thread_ts"] == mention and len(p["text"]) <= 4000 for p in pieces)
        assert " ".join(p["text"] for p in pieces) == long
        assert gateway.db.gateway.get_route(f"slack:C9:t{mention}") is not None
        assert fake_llm.requests[-1]["messages"][-1]["content"] == "write a lot"

        slack.user_sends("let me in", user="U666")
        wait_for(lambda: len(slack.called("chat.postMessage")) == 4)
        assert slack.called("chat.postMessage")[-1]["text"] == REFUSAL.format(user_id="U666")
        assert len(slack.acks) == 3
    assert BOT_TOKEN not in caplog.text and APP_TOKEN not in caplog.text


@pytest.mark.usefixtures("config_file")
def test_a_rejected_token_is_a_clear_error(hermes_home: Path, slack) -> None:
    gateway = GatewayThread(
        hermes_home, api=None, platforms=platforms(slack, "xoxb-wrong-token-123")
    )
    try:
        with pytest.raises(
            PlatformStartError, match=r"Slack rejected the bot token \(invalid_auth\)"
        ):
            gateway.start()
    finally:
        gateway.stop()


def test_a_reply_before_the_adapter_started_says_it_is_not_connected() -> None:
    import asyncio

    adapter = SlackAdapter(host=None, settings=None)
    with pytest.raises(NotConnected, match="slack is not connected"):
        asyncio.run(adapter.send(Origin("slack", "C1"), "too early"))
