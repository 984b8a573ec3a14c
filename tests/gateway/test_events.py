"""Completion events of background processes: a new turn on their conversation's lane,
never interrupting one, following the tip, delivered once, dropped after a reset."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from hermes.tools import drain_events
from hermes.tools.processes import background
from hermes.tools.processes.events import CompletionEvent
from hermes.tools.processes.store import ProcessStore
from tests.fakes.llm_server import text
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for


@pytest.fixture
def chat_gateway(hermes_home: Path, config_file: Path):
    chats: list[FakeChat] = []
    platforms = {"discord": {"token": "discord-token-xyz", "allowed_users": ["42"]}}
    factory = {"discord": lambda r, s: chats.append(FakeChat(r, s, name="discord")) or chats[-1]}
    with GatewayThread(hermes_home, api=None, platforms=platforms, adapters=factory) as gateway:
        gateway.chat = chats[0]
        yield gateway


def chat(gateway: GatewayThread, text_: str) -> None:
    gateway.call(gateway.runner.handle_message(incoming(text_, platform="discord")))


def completion(conversation_id: str, process_id: str = "proc_test1") -> CompletionEvent:
    return CompletionEvent(
        process_id=process_id,
        conversation_id=conversation_id,
        command="make build",
        exit_code=0,
        output_tail="build ok",
        finished_at=time.time(),
    )


def from_watcher_thread(gateway: GatewayThread, event: CompletionEvent) -> None:
    """Deliver the event the way a background process's watcher thread does."""
    thread = threading.Thread(target=gateway.runner._completion_arrived, args=(event,))
    thread.start()
    thread.join()


def conversation_of(gateway: GatewayThread, key: str = "discord:100") -> str:
    return gateway.db.get_session(gateway.db.gateway.get_route(key))["conversation_id"]


def test_an_event_is_a_new_turn_in_its_conversation(chat_gateway, fake_llm) -> None:
    chat(chat_gateway, "start the build")
    wait_for(lambda: chat_gateway.chat.texts() == ["echo: start the build"])
    conversation = conversation_of(chat_gateway)
    fake_llm.enqueue(text("The build passed."))
    from_watcher_thread(chat_gateway, completion(conversation))
    wait_for(lambda: "The build passed." in chat_gateway.chat.texts())
    stored = [m["content"] for m in chat_gateway.db.get_conversation_messages(conversation)]
    assert stored[2].startswith(
        "[Background process proc_test1 finished with exit code 0: make build]"
    )
    assert stored[3] == "The build passed."
    assert len(stored) == 4


def test_an_event_waits_for_the_running_turn(chat_gateway, fake_llm) -> None:
    chat(chat_gateway, "hello")
    wait_for(lambda: chat_gateway.chat.texts())
    conversation = conversation_of(chat_gateway)
    fake_llm.enqueue(text("a slow answer", delay=0.5), text("about the event"))
    chat(chat_gateway, "slow question")
    wait_for(lambda: len(fake_llm.requests) == 2)
    from_watcher_thread(chat_gateway, completion(conversation))
    wait_for(lambda: "about the event" in chat_gateway.chat.texts())
    assert chat_gateway.chat.texts()[1:] == ["a slow answer", "about the event"]
    stored = [m["content"] for m in chat_gateway.db.get_conversation_messages(conversation)]
    assert stored[2:4] == ["slow question", "a slow answer"]  # not interrupted
    assert stored[4].startswith("[Background process")


def test_an_event_follows_the_tip(chat_gateway, fake_llm) -> None:
    chat(chat_gateway, "hello")
    wait_for(lambda: chat_gateway.chat.texts())
    db = chat_gateway.db
    root = conversation_of(chat_gateway)
    assert db.try_acquire_compression_lock(root, "elsewhere")
    child = db.publish_compression_child(
        root, holder="elsewhere", messages=[{"role": "user", "content": "[CONTEXT COMPACTION] hi"}]
    )
    db.release_compression_lock(root, "elsewhere")
    fake_llm.enqueue(text("noted"))
    from_watcher_thread(chat_gateway, completion(root))
    wait_for(lambda: "noted" in chat_gateway.chat.texts())
    assert [m["content"] for m in db.get_messages(child)][-1] == "noted"
    assert (
        db._conn.execute("SELECT session_id FROM gateway_routes").fetchone()["session_id"] == child
    )
    assert db.invariant_violations() == []


def test_an_event_of_a_reset_conversation_is_dropped_with_a_log_line(
    chat_gateway, fake_llm, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="hermes.gateway")
    chat(chat_gateway, "hello")
    wait_for(lambda: chat_gateway.chat.texts())
    old = conversation_of(chat_gateway)
    chat(chat_gateway, "/new")
    requests = len(fake_llm.requests)
    from_watcher_thread(chat_gateway, completion(old, "proc_old"))
    wait_for(lambda: "dropping the completion event of process proc_old" in caplog.text)
    time.sleep(0.2)
    assert len(fake_llm.requests) == requests
    assert chat_gateway.chat.texts() == ["echo: hello", "Started a new conversation."]
    assert all(
        "Background process" not in (m["content"] or "")
        for m in chat_gateway.db.get_conversation_messages(old)
    )


def test_events_of_other_surfaces_go_back_to_the_spool(chat_gateway, fake_llm, hermes_home) -> None:
    cli_session = chat_gateway.db.create_session(source="cli")
    from_watcher_thread(chat_gateway, completion(cli_session, "proc_cli"))
    spooled = wait_for(lambda: drain_events(hermes_home))
    assert [e.process_id for e in spooled] == ["proc_cli"]
    assert fake_llm.requests == []


def test_a_real_background_process_notifies_its_conversation_once(chat_gateway, fake_llm) -> None:
    fake_llm.enqueue(
        _tool_call(
            "terminal",
            {
                "command": "sleep 0.3; echo done-building",
                "background": True,
                "notify_on_complete": True,
            },
        ),
        text("Started it."),
        text("It finished."),
    )
    chat(chat_gateway, "build in the background")
    wait_for(lambda: "It finished." in chat_gateway.chat.texts(), timeout=20)
    conversation = conversation_of(chat_gateway)
    stored = [m["content"] or "" for m in chat_gateway.db.get_conversation_messages(conversation)]
    notices = [c for c in stored if c.startswith("[Background process")]
    assert len(notices) == 1 and "done-building" in notices[0]
    time.sleep(0.3)
    assert chat_gateway.chat.texts() == ["Started it.", "It finished."]


def test_a_watch_pattern_match_is_a_turn_in_its_conversation(
    chat_gateway, fake_llm, hermes_home
) -> None:
    """A server started with watch_patterns: its READY line is a turn on the chat, the
    way a completion is; the process keeps running and says nothing more."""
    fake_llm.enqueue(
        _tool_call(
            "terminal",
            {
                "command": "echo booting; echo 'server READY'; sleep 60.0811",
                "background": True,
                "watch_patterns": ["READY"],
            },
        ),
        text("Started it."),
        text("The server is up."),
    )
    chat(chat_gateway, "start the server")
    try:
        wait_for(lambda: "The server is up." in chat_gateway.chat.texts(), timeout=20)
    finally:
        for record in ProcessStore(hermes_home).all():
            background.kill(hermes_home, record.id, grace=0.5)
    conversation = conversation_of(chat_gateway)
    stored = [m["content"] or "" for m in chat_gateway.db.get_conversation_messages(conversation)]
    [notice] = [c for c in stored if c.startswith("[Background process")]
    assert 'matched watch pattern "READY"' in notice and "server READY" in notice
    assert chat_gateway.chat.texts() == ["Started it.", "The server is up."]


def _tool_call(name, arguments):
    from tests.fakes.llm_server import tool_call

    return tool_call(name, arguments)
