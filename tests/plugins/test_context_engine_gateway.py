"""A plug-in's context engine in a gateway chat: told of a ``/model`` switch, and of the
end of the conversation a ``/new`` (or ``/reset``) leaves, as in the terminal chat. A real
gateway on a real SQLite store, a fake Telegram chat, the fake model over HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gateway.harness import wait_for, write_config
from tests.gateway.one_chat import chat_gateway, say
from tests.plugins.helpers import ENGINE_INIT, ENGINE_MANIFEST, install_plugin
from tests.plugins.test_context_engine import MODEL_TOLD, told_models


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
