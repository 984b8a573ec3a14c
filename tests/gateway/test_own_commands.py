"""The gateway's own commands in a messaging chat (``hermes/gateway/own_commands.py``):
``/background`` answers beside the chat and sends its answer when done, ``/agents``
shows what the chat has running, ``/commands`` pages through every command. A real
runner on a real store, real agents asking the fake model, a recording chat adapter."""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.gateway.runner import QUEUED_ACK
from hermes.state import SessionDB
from tests.gateway.fakechat import incoming
from tests.gateway.harness import until, wait_for, write_config
from tests.gateway.processes import free_port
from tests.gateway.runner_chat import KEY, Chat, Model, scenario

TOKEN = "424242:AAE-fake-telegram-token-do-not-log"  # as the Telegram tests' own


@pytest.fixture
def db(hermes_home: Path, config_file: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=hermes_home / "state.db") as store:
        yield store


def test_background_answers_apart_and_reports_to_the_chat(
    hermes_home: Path, db: SessionDB, fake_llm
) -> None:
    model = Model(fake_llm)
    chat = Chat(hermes_home, db)

    async def run() -> dict[str, Any]:
        await chat.runner.start()
        try:
            await chat.say("hello")
            await until(lambda: "answer to hello" in chat.texts())
            model.hold()  # the chat's next turn waits, and so does the task
            await chat.say("slow one")
            await until(lambda: model.asked[-1:] == ["slow one"])
            await chat.say("/bg what is new?")  # at once, though a turn runs
            started = chat.texts()[-1]
            await until(lambda: "what is new?" in model.asked)
            await chat.say("/agents")
            listed = chat.texts()[-1]
            model.release()
            await until(lambda: any("answer to what is new?" in t for t in chat.texts()))
            await until(lambda: "answer to slow one" in chat.texts())
            await chat.say("/agents")
            return {"started": started, "listed": listed, "after": chat.texts()[-1]}
        finally:
            model.release()
            await chat.runner.stop(grace=5)

    seen = scenario(run)
    assert seen["started"].startswith("Background task #1 started")
    assert QUEUED_ACK not in chat.texts()  # it waited in no lane
    assert "This chat's agent: answering a message" in seen["listed"]
    assert "Background tasks running: 1" in seen["listed"] and "what is new?" in seen["listed"]
    assert "Background tasks running: 0" in seen["after"]
    [report] = [t for t in chat.texts() if "answer to what is new?" in t]
    assert "Background task #1" in report and "is done" in report
    # Its own conversation, the chat's platform and user; the chat's conversation is its own.
    chat_conversation = db.gateway.get_route(KEY)
    rows = {r["conversation_id"]: r for r in db.list_conversations()}
    [apart] = [c for c in rows if c != chat_conversation]
    assert rows[apart]["source"] == "telegram"
    assert db.get_session(apart)["user_id"] == "42"
    assert [m["content"] for m in db.get_conversation_messages(apart)] == [
        "what is new?", "answer to what is new?"
    ]  # fmt: skip
    assert [m["content"] for m in db.get_conversation_messages(chat_conversation)] == [
        "hello", "answer to hello", "slow one", "answer to slow one"
    ]  # fmt: skip


def test_background_without_a_prompt_says_how_to_use_it(
    hermes_home: Path, db: SessionDB, fake_llm
) -> None:
    model = Model(fake_llm)
    chat = Chat(hermes_home, db)

    async def run() -> None:
        await chat.runner.start()
        try:
            await chat.say("/background", "/btw  ")
        finally:
            await chat.runner.stop(grace=5)

    scenario(run)
    assert [t[:27] for t in chat.texts()] == ["Usage: /background PROMPT ("] * 2
    assert model.asked == [] and db.list_conversations() == []


PLUGIN = """
def register(ctx):
    for n in range(6):
        ctx.register_command(f"chore-{n}", lambda raw_args: "done", description=f"Chore {n}")
"""


def test_commands_pages_through_every_command(hermes_home: Path, db: SessionDB, fake_llm) -> None:
    from tests.plugins.helpers import install_plugin

    write_config(hermes_home, fake_llm.url, plugins={"enabled": ["chores"]})
    install_plugin(hermes_home, "chores", "name: chores\n", PLUGIN)
    Model(fake_llm)
    chat = Chat(hermes_home, db)

    async def run() -> list[str]:
        await chat.runner.start()
        answers = []
        try:
            for line in ("/commands", "/commands 2", "/commands 99", "/commands two"):
                before = len(chat.texts())
                await chat.say(line)
                answers.append("\n".join(chat.texts()[before:]))  # sent in pieces
            return answers
        finally:
            await chat.runner.stop(grace=5)

    first, second, last, wrong = scenario(run)
    pages = re.search(r"page 1 of (\d+)", first)
    assert first.startswith("Commands (") and pages and int(pages.group(1)) >= 2
    assert "/new — " in first and "/commands 2 for the next" in first
    assert "page 2 of " in second and "/background <prompt> — " in first + second
    # /commands 99 shows the last page: the plugins' commands close the list
    assert f"page {pages.group(1)} of {pages.group(1)}" in last and "There is no page 99" in last
    assert "Plugin commands:" in second + last and "/chore-5 — Chore 5" in last
    assert wrong.startswith("Usage: /commands [page]")


def test_restart_is_for_the_admins_and_restarts_the_gateway(
    hermes_home: Path, fake_llm, model_key: str, run_gateway
) -> None:
    """/restart from Telegram: a user who is not an admin is refused and nothing stops; an
    admin's stops the gateway as SIGTERM does and starts it again as it was, and the chat
    is answered by the new one."""
    from tests.gateway.fake_platforms import FakeTelegram

    state = hermes_home / "gateway_state.json"

    def pid() -> int:
        return int(json.loads(state.read_text())["pid"])

    with FakeTelegram(TOKEN) as telegram:
        telegram_options = {"token": TOKEN, "allowed_users": [42, 7], "allow_admin_from": [42],
                            "base_url": telegram.base_url, "poll_timeout": 1}  # fmt: skip
        write_config(
            hermes_home, fake_llm.url, gateway={"platforms": {"telegram": telegram_options}}
        )
        port = free_port()
        first = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1")
        first.wait_ready(port)
        wait_for(
            lambda: state.exists() and json.loads(state.read_text())["gateway_state"] == "running"
        )
        telegram.user_sends("/restart", user_id=7, chat_id=7)
        wait_for(lambda: len(telegram.called("sendMessage")) == 1, timeout=30)
        assert first.proc.poll() is None  # still serving
        telegram.user_sends("/restart")
        wait_for(lambda: len(telegram.called("sendMessage")) == 2, timeout=30)
        assert first.proc.wait(60) == 0  # stopped as on SIGTERM
        wait_for(lambda: pid() != first.proc.pid and _serving(state), timeout=90)
        new = pid()
        try:
            telegram.user_sends("are you back?")
            wait_for(lambda: len(telegram.called("sendMessage")) == 3, timeout=30)
        finally:
            os.kill(new, signal.SIGTERM)
            wait_for(
                lambda: json.loads(state.read_text())["gateway_state"] == "stopped", timeout=60
            )
        said = [m["text"] for m in telegram.called("sendMessage")]
    assert said[0].startswith("Only the gateway's admins may restart it")
    assert "gateway.platforms.telegram.allow_admin_from" in said[0]
    assert said[1].startswith("Restarting the gateway")
    assert said[2] == "echo: are you back?"


def _serving(state: Path) -> bool:
    return json.loads(state.read_text())["gateway_state"] == "running"


def test_topic_continues_one_of_the_senders_conversations_in_a_telegram_topic(
    hermes_home: Path, db: SessionDB, fake_llm
) -> None:
    Model(fake_llm)
    chat = Chat(hermes_home, db)
    someone_elses = db.create_session(source="telegram", user_id="7")
    db.append_message(someone_elses, "user", "secret plans")
    in_topic = "telegram:100:t5"

    async def said(text: str, **where: Any) -> str:
        before = len(chat.texts())
        await chat.runner.handle_message(incoming(text, **where))
        await until(lambda: len(chat.texts()) > before)
        return "\n".join(chat.texts()[before:])

    async def run() -> dict[str, str]:
        await chat.runner.start()
        try:
            await said("plan the trip")
            seen = {"fresh": await said("/topic", thread="5")}
            seen["other"] = await said(f"/topic {someone_elses}", thread="5")
            conversation = db.gateway.get_route(KEY)
            seen["moved"] = await said(f"/topic {conversation}", thread="5")
            seen["answer"] = await said("what next?", thread="5")
            seen["status"] = await said("/topic", thread="5")
            seen["root"] = await said(f"/topic {conversation}")
            seen["off"] = await said("/topic off", thread="5")
            seen["group"] = await said("/topic", group=True, chat="-300")
            return seen
        finally:
            await chat.runner.stop(grace=5)

    seen = scenario(run)
    conversation = db.gateway.get_route(KEY)
    assert seen["fresh"].startswith("This topic has no conversation yet")
    assert seen["other"].startswith(f"You have no conversation '{someone_elses}' on telegram")
    assert seen["moved"] == f"This topic now continues the conversation {conversation}."
    assert seen["answer"] == "answer to what next?"
    assert seen["status"] == f"This topic is the conversation {conversation}."
    assert seen["root"].startswith("Open a topic first")
    assert "nothing to turn off" in seen["off"]
    assert seen["group"].startswith("/topic works in a private chat")
    # The topic continued the chat's conversation; the other user's is untouched.
    assert db.gateway.get_route(in_topic) == conversation
    assert [m["content"] for m in db.get_conversation_messages(conversation)] == [
        "plan the trip", "answer to plan the trip", "what next?", "answer to what next?"
    ]  # fmt: skip
    assert [m["content"] for m in db.get_conversation_messages(someone_elses)] == ["secret plans"]


def test_sethome_makes_this_chat_where_home_deliveries_go(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    """A job delivered to 'telegram' alone waits, saying why, until an admin's /sethome
    names the chat; then its answer arrives there. Someone else's /sethome changes nothing."""
    from hermes.config import dotenv_values
    from hermes.cron import CronStore, parse
    from tests.gateway.fake_platforms import FakeTelegram
    from tests.gateway.harness import GatewayThread

    write_config(hermes_home, fake_llm.url, cron={"tick_seconds": 0.1})
    with FakeTelegram(TOKEN) as telegram:
        platforms = {"telegram": {"token": TOKEN, "allowed_users": [42, 7],
                                  "allow_admin_from": [42], "base_url": telegram.base_url,
                                  "poll_timeout": 1}}  # fmt: skip
        with GatewayThread(hermes_home, api=None, platforms=platforms) as gateway:
            cron = CronStore(gateway.db.backend)
            job = cron.create_job(name="digest", schedule=parse("every 1d"),
                                  prompt="the morning digest", deliver="telegram")  # fmt: skip
            cron.run_now(job["id"])
            wait_for(lambda: "no home channel" in (cron.runs(job["id"])[0]["delivery_error"] or ""),
                     timeout=30, interval=0.1)  # fmt: skip
            telegram.user_sends("/sethome", user_id=7, chat_id=7)
            wait_for(lambda: len(telegram.called("sendMessage")) == 1, timeout=30)
            assert "TELEGRAM_HOME_CHANNEL" not in dotenv_values(hermes_home)
            telegram.user_sends("/set-home", user_id=42, chat_id=42)
            wait_for(
                lambda: cron.runs(job["id"])[0]["delivery"] == "sent", timeout=60, interval=0.1
            )
    sent = [(int(m["chat_id"]), m["text"]) for m in telegram.called("sendMessage")]
    assert sent[0][0] == 7 and sent[0][1].startswith("Only the gateway's admins may choose")
    assert sent[1] == (42, "This chat is now the home channel of telegram: scheduled jobs "
                           "delivered to 'telegram' answer here.")  # fmt: skip
    assert sent[2] == (42, "echo: the morning digest")
    assert dotenv_values(hermes_home)["TELEGRAM_HOME_CHANNEL"] == "42"


def test_a_background_task_running_at_shutdown_is_stopped_and_its_chat_told(
    hermes_home: Path, db: SessionDB, fake_llm
) -> None:
    model = Model(fake_llm)
    chat = Chat(hermes_home, db)

    async def run() -> None:
        await chat.runner.start()
        model.hold()
        try:
            await chat.say("/background a long study")
            await until(lambda: model.asked == ["a long study"])
        finally:
            await chat.runner.stop(grace=5)  # the model still holds its answer
            model.release()

    scenario(run)
    started, report = chat.texts()
    assert started.startswith("Background task #1 started")
    assert report.startswith("Background task #1") and "failed" in report
    assert "stopped before it answered" in report


def test_whoami_profile_and_start_in_a_telegram_chat(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    """/whoami tells a user from an admin (``allow_admin_from``), /profile names the profile
    without the operator's folder, Telegram's /start ping answers with the commands; none
    of them asks the model."""
    from tests.gateway.fake_platforms import FakeTelegram
    from tests.gateway.harness import GatewayThread

    write_config(hermes_home, fake_llm.url)
    with FakeTelegram(TOKEN) as telegram:
        platforms = {"telegram": {"token": TOKEN, "allowed_users": [42, 7],
                                  "allow_admin_from": [42], "base_url": telegram.base_url,
                                  "poll_timeout": 1}}  # fmt: skip
        with GatewayThread(hermes_home, api=None, platforms=platforms):
            lines = ((7, "/whoami"), (42, "/whoami"), (7, "/profile"), (7, "/start"))
            for sent, (user, line) in enumerate(lines, start=1):
                telegram.user_sends(line, user_id=user, chat_id=user)
                wait_for(lambda n=sent: len(telegram.called("sendMessage")) >= n, timeout=30)
    user, admin, profile, start = (m["text"] for m in telegram.called("sendMessage"))
    assert user.startswith("You are user 7 on telegram: a user") and "allow_admin_from" in user
    assert admin.startswith("You are user 42 on telegram: an admin")
    assert profile == "Profile: default." and str(hermes_home) not in profile
    assert start.startswith("Commands:") and "/whoami" in start
    assert fake_llm.requests == []
