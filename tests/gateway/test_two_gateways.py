"""Two gateways on one store (one HERMES_HOME/state.db): a chat's route is whatever the
store says, so ``/new`` through one gateway moves the chat in the other at once."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.gateway.runner import QUEUED_ACK
from hermes.tools.processes.events import CompletionEvent
from tests.fakes.llm_server import text
from tests.gateway.harness import GatewayThread, wait_for, write_config
from tests.gateway.one_chat import KEY, chat_gateway, conversation, say, stored


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


def test_input_queued_in_one_gateway_is_answered_once_after_it_stops(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    # A short takeover time: B starts after it has passed, so only A's heartbeat keeps
    # A's queued input A's own.
    write_config(hermes_home, fake_llm.url, gateway={"queue_takeover_after": 1})
    fake_llm.enqueue(text("first answer", delay=4))
    a = chat_gateway(hermes_home)
    try:
        say(a, "one")
        say(a, "two")  # waits behind "one": queued in the store, owned by A
        wait_for(lambda: len(fake_llm.requests) == 1)
        [queued] = wait_for(lambda: a.db.gateway.pending_gateway_inputs())
        assert queued["owner"] == a.runner.holder
        time.sleep(1.5)
        b = chat_gateway(hermes_home)  # started while A is busy
    finally:
        a.stop(grace=10)  # "one" is answered, "two" is released for the next start
    try:
        assert a.chat.texts() == [QUEUED_ACK, "first answer"]
        # B, still running, takes the released input over at its next heartbeat.
        wait_for(lambda: b.chat.texts() == ["echo: two"])
        assert b.db.gateway.pending_gateway_inputs() == []
        time.sleep(0.6)  # a few more heartbeats: nothing is answered twice
        assert b.chat.texts() == ["echo: two"]
        assert len(fake_llm.requests) == 2
        assert stored(b, conversation(b)) == ["one", "first answer", "two", "echo: two"]
    finally:
        b.stop()


def test_a_running_gateway_takes_over_the_input_of_a_crashed_one(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    from hermes.gateway.envelopes import Origin
    from hermes.gateway.lanes import MESSAGE, WorkItem
    from hermes.gateway.queued_turn import QueuedTurn
    from tests.state.procs import dead_pid

    write_config(hermes_home, fake_llm.url, gateway={"queue_takeover_after": 1})
    b = chat_gateway(hermes_home)
    try:
        say(b, "hello")
        wait_for(lambda: b.chat.texts() == ["echo: hello"])
        # A gateway that crashed (its process is gone) left input it had queued.
        crashed = f"{socket.gethostname()}:pid={dead_pid()}:agent=crashed"
        origin = Origin(platform="telegram", chat_id="100", user_id="42")
        item = WorkItem(
            kind=MESSAGE,
            key=KEY,
            conversation_id=conversation(b),
            asked=QueuedTurn(text="left behind"),
            origin=origin,
        )
        b.db.gateway.enqueue_gateway_input(KEY, item.payload(), owner=crashed)

        wait_for(lambda: b.chat.texts() == ["echo: hello", "echo: left behind"])
        assert b.db.gateway.pending_gateway_inputs() == []
        time.sleep(0.6)
        assert b.chat.texts() == ["echo: hello", "echo: left behind"]
        assert stored(b, conversation(b)) == [
            "hello",
            "echo: hello",
            "left behind",
            "echo: left behind",
        ]
    finally:
        b.stop()


def ask_at_once(asks: list[tuple[GatewayThread, str]], session: str) -> dict[str, Any]:
    """Send each (gateway, words) as one HTTP request, all at the same moment."""
    import httpx

    start = threading.Barrier(len(asks))
    answers: dict[str, Any] = {}

    def ask(gateway: GatewayThread, words: str) -> None:
        body = {"model": "fake-model", "messages": [{"role": "user", "content": words}]}
        start.wait(10)
        answers[words] = httpx.post(
            f"{gateway.url}/chat/completions",
            json=body,
            headers={
                "X-Hermes-Session-Id": session,
                "Authorization": f"Bearer {gateway.api_key}",
            },
            timeout=30,
        )

    talks = [threading.Thread(target=ask, args=pair) for pair in asks]
    for talk in talks:
        talk.start()
    for talk in talks:
        talk.join(60)
    return answers


def test_one_new_session_id_sent_to_two_gateways_at_once_is_one_conversation(
    hermes_home: Path, config_file: Path
) -> None:
    first, second = GatewayThread(hermes_home).start(), GatewayThread(hermes_home).start()
    try:
        for round_number in range(5):
            session = f"shared-{round_number}"
            asks = [(first, f"via first {round_number}"), (second, f"via second {round_number}")]
            answers = ask_at_once(asks, session)

            assert [a.status_code for a in answers.values()] == [200, 200]
            assert {a.headers["X-Hermes-Session-Id"] for a in answers.values()} == {session}
            texts = [m["content"] for m in first.db.get_conversation_messages(session)]
            for words in answers:
                assert texts.count(words) == 1
                assert texts.count(f"echo: {words}") == 1
            assert len(texts) == 4
    finally:
        second.stop()
        first.stop()


def test_a_completion_event_reaches_only_the_gateway_whose_turn_started_the_process(
    pair, fake_llm
) -> None:
    from tests.fakes.llm_server import tool_call

    a, b = pair
    fake_llm.enqueue(
        tool_call(
            "terminal",
            {"command": "sleep 0.3; echo built", "background": True, "notify_on_complete": True},
        ),
        text("Started it."),
        text("It finished."),
    )
    say(b, "build in the background")
    wait_for(lambda: "It finished." in a.chat.texts() + b.chat.texts())
    time.sleep(0.5)  # give a second delivery every chance to show up
    notices = [c for c in stored(b, conversation(b)) if (c or "").startswith("[Background")]
    assert len(notices) == 1 and "built" in notices[0]
    assert b.chat.texts() == ["Started it.", "It finished."]
    assert a.chat.texts() == []
    assert len(fake_llm.requests) == 3
