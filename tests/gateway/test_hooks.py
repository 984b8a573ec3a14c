"""Gateway hooks written as Hermes Agent's docs show them ($HERMES_HOME/hooks/<name>/ with
HOOK.yaml and handler.py) fire on its event names, and a slow one never holds a turn up."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import openai
import pytest

from tests.gateway.harness import GatewayThread, wait_for, write_config
from tests.gateway.processes import free_port

LOGGER = """
import json
from pathlib import Path

LOG = Path(__file__).with_name("activity.log")


async def handle(event_type: str, context: dict):
    with LOG.open("a") as f:
        f.write(json.dumps({"event": event_type, **context}) + "\\n")
"""

# Waits until the test lets it go: a turn that waited for it would never be answered.
SLOW = """
import time
from pathlib import Path

RELEASE = Path(__file__).with_name("release")


def handle(event_type, context):
    while not RELEASE.exists():
        time.sleep(0.05)
    Path(__file__).with_name("done").write_text(event_type)
"""

BROKEN = "def handle(event_type, context):\n    raise RuntimeError('hook bug')\n"


def add_hook(home: Path, name: str, events: list[str], handler: str) -> Path:
    folder = home / "hooks" / name
    folder.mkdir(parents=True)
    listed = "".join(f"  - {e}\n" for e in events)
    (folder / "HOOK.yaml").write_text(f"name: {name}\ndescription: test\nevents:\n{listed}")
    (folder / "handler.py").write_text(textwrap.dedent(handler))
    return folder


@pytest.fixture
def hooked_gateway(hermes_home: Path, fake_llm, model_key: str):
    # A hook timeout far longer than the client waits: the turn must not wait at all.
    write_config(hermes_home, fake_llm.url, gateway={"hook_timeout": 120})
    logger = add_hook(hermes_home, "logger", ["agent:start", "agent:end", "session:start",
                                              "command:*", "gateway:startup"], LOGGER)  # fmt: skip
    slow = add_hook(hermes_home, "slow", ["agent:start"], SLOW)
    add_hook(hermes_home, "broken", ["agent:end"], BROKEN)
    with GatewayThread(hermes_home) as running:
        yield running, logger, slow
        (slow / "release").write_text("")  # let the slow hook's thread end


def test_hooks_fire_in_order_and_a_slow_one_does_not_hold_the_turn(
    hooked_gateway, caplog: pytest.LogCaptureFixture
) -> None:
    gateway, logger, slow = hooked_gateway
    with openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0,
                       timeout=20) as client:  # fmt: skip
        answer = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hello hooks"}]
        )
    assert answer.choices[0].message.content == "echo: hello hooks"
    assert not (slow / "done").exists()  # answered while the slow hook still waits

    def events() -> list[dict]:
        import json

        path = logger / "activity.log"
        lines = path.read_text().splitlines() if path.exists() else []
        found = [json.loads(line) for line in lines]
        return found if any(e["event"] == "agent:end" for e in found) else []

    found = wait_for(events, timeout=20)
    assert [e["event"] for e in found] == [
        "gateway:startup", "session:start", "agent:start", "agent:end"
    ]  # fmt: skip
    start, end = found[2], found[3]
    assert start["platform"] == "api_server" and start["message"] == "hello hooks"
    assert end["response"] == "echo: hello hooks" and end["session_id"]
    failed = wait_for(
        lambda: [r for r in caplog.records if "hook broken failed on agent:end" in r.getMessage()],
        timeout=20,
    )
    assert len(failed) == 1 and "hook bug" in failed[0].getMessage()


def test_a_chat_fires_agent_step_and_session_end_and_reset_with_0_19s_keys(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    from hermes.testing.llm_server import text, tool_call
    from tests.gateway.one_chat import KEY, chat_gateway, say

    write_config(hermes_home, fake_llm.url)
    logger = add_hook(hermes_home, "logger", ["agent:step", "session:end", "session:reset"], LOGGER)
    fake_llm.enqueue(tool_call("search_files", {"pattern": "nothing-here"}, id="call_1"))
    fake_llm.enqueue(text("searched"))
    gateway = chat_gateway(hermes_home)
    try:
        say(gateway, "look for it")
        wait_for(lambda: "searched" in gateway.chat.texts(), timeout=30)
        say(gateway, "/new")
        wait_for(lambda: "Started a new conversation." in gateway.chat.texts(), timeout=30)

        def events() -> list[dict]:
            import json

            path = logger / "activity.log"
            found = (
                [json.loads(line) for line in path.read_text().splitlines()]
                if path.exists()
                else []
            )
            return found if any(e["event"] == "session:reset" for e in found) else []

        found = wait_for(events, timeout=20)
    finally:
        gateway.stop()
    assert [e["event"] for e in found] == [
        "agent:step", "agent:step", "session:end", "session:reset"
    ]  # fmt: skip
    first, second = found[0], found[1]
    assert (first["iteration"], first["tool_names"], first["tools"]) == (1, [], [])
    assert second["iteration"] == 2 and second["tool_names"] == ["search_files"]
    [tool] = second["tools"]
    assert tool["arguments"] == '{"pattern": "nothing-here"}' and tool["result"]
    assert second["platform"] == "telegram" and second["user_id"] == "42"
    assert second["session_id"]
    for ended in found[2:]:
        assert (ended["platform"], ended["user_id"], ended["session_key"]) == (
            "telegram",
            "42",
            KEY,
        )


DISPATCH_GATE = """
def register(ctx):
    def gate(event, gateway, session_store, **_):
        if event.text.startswith("spam"):
            return {"action": "skip", "reason": "spam"}
        if event.text.startswith("shout "):
            return {"action": "rewrite", "text": event.text[len("shout "):].upper()}
        return {"action": "allow"}
    ctx.register_hook("pre_gateway_dispatch", gate)
"""


def test_pre_gateway_dispatch_skips_and_rewrites_a_chat_message(
    hermes_home: Path, fake_llm
) -> None:
    """0.19's ``pre_gateway_dispatch``: a plugin drops a message (no reply, no turn) or
    rewrites its text before the gateway handles it."""
    from tests.gateway.one_chat import KEY, chat_gateway, say
    from tests.plugins.helpers import install_plugin

    write_config(hermes_home, fake_llm.url, plugins={"enabled": ["gate"]})
    install_plugin(hermes_home, "gate", "name: gate\n", DISPATCH_GATE)
    gateway = chat_gateway(hermes_home)
    try:
        say(gateway, "spam spam spam")
        say(gateway, "shout hello there")
        wait_for(lambda: any("HELLO THERE" in t for t in gateway.chat.texts()), timeout=30)
        say(gateway, "plain words")
        wait_for(lambda: any("plain words" in t for t in gateway.chat.texts()), timeout=30)
        conversation = gateway.db.get_session(gateway.db.gateway.get_route(KEY))
        stored = [
            m["content"]
            for m in gateway.db.get_conversation_messages(conversation["conversation_id"])
            if m["role"] == "user"
        ]
    finally:
        gateway.stop()
    assert stored == ["HELLO THERE", "plain words"]
    assert not any("spam" in t for t in gateway.chat.texts())
    assert [m["messages"][-1]["content"] for m in fake_llm.requests] == [
        "HELLO THERE",
        "plain words",
    ]


@pytest.mark.slow  # a gateway of two worker processes
def test_gateway_startup_fires_once_per_gateway_not_per_worker(
    hermes_home: Path, fake_llm, model_key: str, run_gateway
) -> None:
    write_config(hermes_home, fake_llm.url)
    logger = add_hook(hermes_home, "logger", ["gateway:startup"], LOGGER)
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "2")
    gateway.wait_ready(port)
    state = hermes_home / "gateway_state.json"  # "running" once every worker serves
    wait_for(lambda: state.exists() and '"gateway_state":"running"' in state.read_text())
    log = logger / "activity.log"
    wait_for(lambda: log.exists() and log.read_text().strip())
    assert gateway.terminate() == 0
    assert [json.loads(line)["event"] for line in log.read_text().splitlines()] == [
        "gateway:startup"
    ]


SLASH_PLUGIN = """
import asyncio


def register(ctx):
    ctx.register_command("echo-back", lambda raw_args: f"echoed: {raw_args}", description="Echo")

    async def later(raw_args):
        await asyncio.sleep(0)
        return "later done"
    ctx.register_command("/Later", later)
    ctx.register_command("help", lambda raw_args: "not the built-in")
"""


def test_a_plugins_slash_command_answers_in_a_chat(hermes_home: Path, fake_llm) -> None:
    """0.19's ``ctx.register_command``: ``/name args`` in a chat runs ``handler(raw_args)``
    (a coroutine too) and its text is the answer; a built-in of the same name wins; no
    turn is run and nothing reaches the model."""
    from tests.gateway.one_chat import chat_gateway, say
    from tests.plugins.helpers import install_plugin

    write_config(hermes_home, fake_llm.url, plugins={"enabled": ["slash"]})
    install_plugin(hermes_home, "slash", "name: slash\n", SLASH_PLUGIN)
    gateway = chat_gateway(hermes_home)
    try:
        say(gateway, "/echo-back one two")
        wait_for(lambda: "echoed: one two" in gateway.chat.texts(), timeout=30)
        say(gateway, "/later")
        wait_for(lambda: "later done" in gateway.chat.texts(), timeout=30)
        say(gateway, "/help")
        wait_for(lambda: any(t.startswith("Commands:") for t in gateway.chat.texts()), timeout=30)
    finally:
        gateway.stop()
    assert "not the built-in" not in gateway.chat.texts()
    assert fake_llm.requests == []
