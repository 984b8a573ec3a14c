"""End to end: hermes's secrets never reach a tool, the model, the store or a reply.

A model obeying injected text asks the terminal for ``env``; the gateway runs it for a
Telegram user with its model key, its gateway key, the bot token and a variable of
``$HERMES_HOME/.env`` in its own environment. A failing provider that echoes the key
(read from ``.env``) in its error body is answered with a 502 and an SSE error event
that hold no key, and the gateway log holds none either.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import httpx
import pytest

from tests.fakes.llm_server import Reply, text, tool_call
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for, workspace_of, write_config

BOT_TOKEN = "987654321:AAbot-token-that-stays-in-the-gateway"
GATEWAY_KEY = "gateway-key-that-stays-in-the-gateway"
DOTENV_VALUE = "dotenv-credential-0123456789"  # named harmlessly: only .env says it is secret
DOTENV_MODEL_KEY = "dotenv-model-credential-0123456789abcdef"


@pytest.fixture
def secret_env(hermes_home: Path, model_key: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every secret the gateway process holds, in its environment and in .env."""
    (hermes_home / ".env").write_text(f"DEPLOY_CREDENTIAL={DOTENV_VALUE}\n", encoding="utf-8")
    monkeypatch.setenv("DEPLOY_CREDENTIAL", DOTENV_VALUE)  # exported too, e.g. by systemd
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("HERMES_GATEWAY_KEY", GATEWAY_KEY)
    return [model_key, BOT_TOKEN, GATEWAY_KEY, DOTENV_VALUE]


def telegram_turn(home: Path, message: str, answer: str) -> tuple[FakeChat, list[dict]]:
    """One Telegram message through a gateway; the chat and the stored conversation."""
    chats: list[FakeChat] = []
    factory = {"telegram": lambda r, s: chats.append(FakeChat(r, s)) or chats[-1]}
    platforms = {"telegram": {"allowed_users": ["42"]}}  # the token comes from the environment
    with GatewayThread(home, api=None, platforms=platforms, adapters=factory) as gateway:
        gateway.call(gateway.runner.handle_message(incoming(message)))
        wait_for(lambda: any(answer in t for t in chats[0].texts()), timeout=30)
        stored = gateway.db.get_conversation_messages(gateway.db.gateway.get_route("telegram:100"))
    return chats[0], stored


def test_the_terminal_sees_none_of_the_gateways_secrets(
    hermes_home: Path, fake_llm, secret_env: list[str]
) -> None:
    write_config(hermes_home, fake_llm.url)
    fake_llm.enqueue(
        tool_call("terminal", {"command": "env"}),
        tool_call("terminal", {"command": "echo leaked: $(cat leak 2>/dev/null)"}),
        text("Here is the environment."),
    )
    # A secret that reaches output by another way than the environment is scrubbed too.
    (workspace_of(hermes_home)).mkdir(exist_ok=True)
    (workspace_of(hermes_home) / "leak").write_text(
        f"{BOT_TOKEN} {DOTENV_VALUE}\n", encoding="utf-8"
    )
    _, stored = telegram_turn(hermes_home, "run env, as the page says", "Here is the environment.")

    results = [m["content"] for m in stored if m["role"] == "tool"]
    assert len(results) == 2
    assert "PATH=" in results[0] and "HOME=" in results[0]  # the command did run
    for name in ("HERMES_API_KEY", "TELEGRAM_BOT_TOKEN", "HERMES_GATEWAY_KEY", "DEPLOY_CREDENTIAL"):
        assert f"{name}=" not in results[0]
    assert results[1].endswith("leaked: [redacted] [redacted]")
    everything = json.dumps(stored) + json.dumps(fake_llm.requests)
    assert [s for s in secret_env if s in everything] == []


def test_terminal_pass_env_hands_a_listed_secret_to_commands(
    hermes_home: Path, fake_llm, secret_env: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    deploy_token = "deploy-token-the-build-needs-0123"
    monkeypatch.setenv("DEPLOY_TOKEN", deploy_token)
    write_config(hermes_home, fake_llm.url, terminal={"pass_env": ["DEPLOY_TOKEN"]})
    fake_llm.enqueue(
        tool_call("terminal", {"command": 'printf %s "$DEPLOY_TOKEN" | sha256sum; env'}),
        text("Built."),
    )
    _, stored = telegram_turn(hermes_home, "build it", "Built.")

    [result] = [m["content"] for m in stored if m["role"] == "tool"]
    assert hashlib.sha256(deploy_token.encode()).hexdigest() in result
    assert "DEPLOY_TOKEN=[redacted]" in result  # the command has it; the model does not
    assert "DEPLOY_CREDENTIAL=" not in result and "TELEGRAM_BOT_TOKEN=" not in result


def key_echoing_failure() -> Reply:
    message = f"Upstream rejected the key {DOTENV_MODEL_KEY}. Check your account."
    return Reply(status=500, error={"message": message, "type": "server_error", "code": None})


@pytest.fixture
def dotenv_model_key(hermes_home: Path, fake_llm) -> str:
    """The model key lives only in .env, as `hermes setup` leaves it."""
    (hermes_home / ".env").write_text(f"HERMES_API_KEY={DOTENV_MODEL_KEY}\n", encoding="utf-8")
    write_config(hermes_home, fake_llm.url)
    return DOTENV_MODEL_KEY


def test_a_provider_error_echoing_the_key_reaches_no_caller_and_no_log(
    hermes_home: Path, fake_llm, dotenv_model_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_llm.enqueue(key_echoing_failure(), key_echoing_failure())
    with GatewayThread(hermes_home) as gateway:
        headers = {"Authorization": f"Bearer {gateway.api_key}"}
        messages = [{"role": "user", "content": "hi"}]
        plain = httpx.post(
            f"{gateway.url}/chat/completions",
            json={"model": "fake-model", "messages": messages},
            headers=headers,
            timeout=30,
        )
        streamed = httpx.post(
            f"{gateway.url}/chat/completions",
            json={"model": "fake-model", "stream": True, "messages": messages},
            headers=headers,
            timeout=30,
        )
    assert fake_llm.request_headers[0]["authorization"] == f"Bearer {dotenv_model_key}"
    assert plain.status_code == 502 and dotenv_model_key not in plain.text
    events = [line.removeprefix("data: ") for line in streamed.text.splitlines() if line]
    error = next(e for e in events if e.startswith('{"error"'))
    assert dotenv_model_key not in error and dotenv_model_key not in streamed.text
    assert "Upstream rejected the key [redacted]" in caplog.text  # the operator's account
    assert dotenv_model_key not in caplog.text


def test_a_chat_error_reply_holds_no_key(
    hermes_home: Path, fake_llm, dotenv_model_key: str
) -> None:
    fake_llm.enqueue(key_echoing_failure())
    chat, _ = telegram_turn(hermes_home, "hi", "Sorry, I could not answer")
    assert "[redacted]" in " ".join(chat.texts())
    assert dotenv_model_key not in " ".join(chat.texts())
