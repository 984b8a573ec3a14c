"""A plug-in's context engine in a gateway chat: told of a ``/model`` switch, and of the
end of the conversation a ``/new`` (or ``/reset``) leaves, as in the terminal chat. A real
gateway on a real SQLite store, a fake Telegram chat, the fake model over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.gateway.harness import HEADER, GatewayThread, wait_for, write_config
from tests.gateway.one_chat import chat_gateway, conversation, say
from tests.plugins.helpers import (
    ENGINE_INIT,
    ENGINE_MANIFEST,
    LIFECYCLE,
    MODEL_TOLD,
    install_plugin,
    told_models,
)


def engine_gateway_home(home: Path, llm_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_API_KEY", "sk-test-model-key")  # the engine is told it
    write_config(home, llm_url, plugins={"enabled": ["tiny-engine"]}, context={"engine": "tiny"})


def test_a_chats_slash_model_tells_the_engine_the_new_model_and_its_window(
    hermes_home: Path, fake_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = install_plugin(hermes_home, "tiny-engine", ENGINE_MANIFEST, ENGINE_INIT + MODEL_TOLD)
    engine_gateway_home(hermes_home, fake_llm.url, monkeypatch)
    fake_llm.models.append("gpt-4")  # an 8,192-token window, where fake-model has 128,000
    gateway = chat_gateway(hermes_home)
    try:
        say(gateway, "hello")
        wait_for(lambda: "echo: hello" in gateway.chat.texts(), timeout=30)
        said = len(told_models(plugin))
        say(gateway, "/model gpt-4")
        wait_for(lambda: any("Model set to gpt-4" in t for t in gateway.chat.texts()), timeout=30)
    finally:
        gateway.stop()
    told = told_models(plugin)[said:]
    assert told == [f"model gpt-4 8192 {fake_llm.url} True chat_completions"]


def test_a_chats_new_and_reset_end_the_old_conversation_for_the_engine(
    hermes_home: Path, fake_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As the terminal chat does (0.19's lifecycle): on_session_end with the conversation's
    # messages, then on_session_reset, when the chat leaves it; never per turn.
    plugin = install_plugin(hermes_home, "tiny-engine", ENGINE_MANIFEST, ENGINE_INIT + LIFECYCLE)
    engine_gateway_home(hermes_home, fake_llm.url, monkeypatch)
    gateway = chat_gateway(hermes_home)
    try:
        for words in ("first", "second"):
            say(gateway, words)
            wait_for(lambda words=words: f"echo: {words}" in gateway.chat.texts(), timeout=30)
        first = conversation(gateway)
        say(gateway, "/new")
        wait_for(lambda: "Started a new conversation." in gateway.chat.texts(), timeout=30)
        said_at_new = lifecycle(plugin)
        say(gateway, "third")
        wait_for(lambda: "echo: third" in gateway.chat.texts(), timeout=30)
        second = conversation(gateway)
        say(gateway, "/reset")
        wait_for(lambda: gateway.chat.texts().count("Started a new conversation.") == 2, timeout=30)
    finally:
        gateway.stop()
    assert first != second
    # The kept agent's engine heard the conversation at its first turn; at /new an agent
    # of the old conversation tells its own engine of it, then of its end.
    assert said_at_new == [
        f"start {first}",
        f"start {first}",
        f"end {first} ['first', 'echo: first', 'second', 'echo: second']",
        "reset",
    ]
    assert lifecycle(plugin)[len(said_at_new) :] == [
        f"start {second}",
        f"start {second}",
        f"end {second} ['third', 'echo: third']",
        "reset",
    ]


def test_a_new_in_a_chat_without_a_message_tells_the_engine_nothing(
    hermes_home: Path, fake_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = install_plugin(hermes_home, "tiny-engine", ENGINE_MANIFEST, ENGINE_INIT + LIFECYCLE)
    engine_gateway_home(hermes_home, fake_llm.url, monkeypatch)
    gateway = chat_gateway(hermes_home)
    try:
        for _ in range(2):
            say(gateway, "/new")
        wait_for(lambda: gateway.chat.texts().count("Started a new conversation.") == 2)
    finally:
        gateway.stop()
    assert lifecycle(plugin) == []


def lifecycle(plugin: Path) -> list[str]:
    log = plugin / "calls.log"
    said = log.read_text().splitlines() if log.exists() else []
    return [line for line in said if line.split(" ", 1)[0] in ("start", "end", "reset")]


BROKEN_END = """

def _broken_end(self, session_id, messages):
    raise RuntimeError("the engine broke at the end")


TinyEngine.on_session_end = _broken_end
"""


def test_an_engine_that_fails_at_the_end_does_not_hold_new_up(
    hermes_home: Path, fake_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = install_plugin(
        hermes_home, "tiny-engine", ENGINE_MANIFEST, ENGINE_INIT + LIFECYCLE + BROKEN_END
    )
    engine_gateway_home(hermes_home, fake_llm.url, monkeypatch)
    gateway = chat_gateway(hermes_home)
    try:
        say(gateway, "first")
        wait_for(lambda: "echo: first" in gateway.chat.texts(), timeout=30)
        first = conversation(gateway)
        say(gateway, "/new")
        wait_for(lambda: "Started a new conversation." in gateway.chat.texts(), timeout=30)
        say(gateway, "second")
        wait_for(lambda: "echo: second" in gateway.chat.texts(), timeout=30)
        second = conversation(gateway)
    finally:
        gateway.stop()
    assert second != first
    assert lifecycle(plugin)[-3:] == [f"start {first}", "reset", f"start {second}"]


def test_an_api_callers_new_ends_the_old_conversation_for_the_engine_and_the_hooks(
    hermes_home: Path, fake_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The HTTP API's /new takes the same path as a chat's: the engine and the hooks hear it.
    plugin = install_plugin(hermes_home, "tiny-engine", ENGINE_MANIFEST, ENGINE_INIT + LIFECYCLE)
    engine_gateway_home(hermes_home, fake_llm.url, monkeypatch)
    heard = hermes_home / "hooks-heard.jsonl"
    hook = hermes_home / "hooks" / "session-log"
    hook.mkdir(parents=True)
    (hook / "HOOK.yaml").write_text("name: session-log\nevents: [session:end, session:reset]\n")
    (hook / "handler.py").write_text(
        "import json\n"
        f"OUT = {str(heard)!r}\n"
        "def handle(event_type, context):\n"
        "    with open(OUT, 'a') as f:\n"
        "        f.write(json.dumps([event_type, context.get('platform')]) + '\\n')\n"
    )

    def ask(gateway: GatewayThread, words: str, session: str | None) -> httpx.Response:
        return httpx.post(
            f"{gateway.url}/chat/completions",
            json={"model": "fake-model", "messages": [{"role": "user", "content": words}]},
            headers={"Authorization": f"Bearer {gateway.api_key}"}
            | ({HEADER: session} if session else {}),
            timeout=60,
        )

    with GatewayThread(hermes_home) as gateway:
        session = ask(gateway, "first", None).headers[HEADER]
        first = session  # a conversation's first segment has the conversation's id
        reply = ask(gateway, "/new", session)
        assert reply.status_code == 200, reply.text
        assert "Started a new conversation." in reply.text
        wait_for(lambda: heard.exists() and len(heard.read_text().splitlines()) == 2)
    assert [line for line in lifecycle(plugin) if not line.startswith("start")] == [
        f"end {first} ['first', 'echo: first']",
        "reset",
    ]
    assert [json.loads(line) for line in heard.read_text().splitlines()] == [
        ["session:end", "api_server"],
        ["session:reset", "api_server"],
    ]
