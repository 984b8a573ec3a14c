"""What the principal and per-user workspace tests share: an obedient model, a real
gateway process with two API principals and two Telegram users, and HTTP calls to it.

The model obeys the text it reads, as a model led by a planted instruction would: a
line ``RUN: <command>`` in the newest user message makes it call the terminal,
``READ: <path>`` read_file; after the tool it answers ``RESULT<<output>>``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.llm_server import Reply, last_user_text, text, tool_call
from tests.gateway.fake_platforms import FakeTelegram
from tests.gateway.harness import write_config
from tests.gateway.processes import Gateway, free_port

OPERATOR_KEY = "operator-key-0123456789abcdef"
KEYS = {"alice": "alice-key-0123456789abcdef", "bob": "bob-key-0123456789abcdef"}
TELEGRAM_TOKEN = "424242:AAE-fake-telegram-token-do-not-log"


def obedient(body: dict[str, Any]) -> Reply | None:
    """Follow the planted instruction of the newest user message (see the docstring)."""
    last = (body.get("messages") or [{}])[-1]
    if last.get("role") == "tool":
        return text(f"RESULT<<{last.get('content')}>>")
    for line in last_user_text(body).splitlines():
        if line.startswith("RUN: "):
            return tool_call("terminal", {"command": line.removeprefix("RUN: ")})
        if line.startswith("READ: "):
            return tool_call("read_file", {"path": line.removeprefix("READ: ")})
    return None


def configure(
    home: Path,
    llm_url: str,
    telegram: FakeTelegram,
    tools: dict[str, Any] | None = None,
    **terminal: Any,
) -> None:
    """config.yaml: the operator's key, alice's and bob's, Telegram users 42 and 7
    (``tools`` and ``terminal`` settings added)."""
    gateway = {
        "api_key": OPERATOR_KEY,
        "api_keys": dict(KEYS),
        "platforms": {
            "telegram": {
                "token": TELEGRAM_TOKEN,
                "allowed_users": [42, 7],
                "base_url": telegram.base_url,
                "poll_timeout": 1,
            }
        },
    }
    write_config(home, llm_url, gateway=gateway, terminal=terminal, tools=tools or {})


class Running:
    """A started gateway process and how to talk to it as each key's owner."""

    def __init__(self, gateway: Gateway, port: int, telegram: FakeTelegram) -> None:
        self.gateway = gateway
        self.base = f"http://127.0.0.1:{port}"
        self.telegram = telegram

    def call(
        self, who: str | None, method: str, path: str, **kwargs: Any
    ) -> tuple[int, Any, httpx.Headers]:
        """(status, JSON body or None, headers) of a request with ``who``'s key (None:
        the operator's)."""
        key = OPERATOR_KEY if who is None else KEYS[who]
        headers = {"Authorization": f"Bearer {key}", **kwargs.pop("headers", {})}
        response = httpx.request(method, self.base + path, headers=headers, timeout=60, **kwargs)
        try:
            body = response.json()
        except ValueError:
            body = None
        return response.status_code, body, response.headers

    def chat(self, who: str | None, words: str, session: str | None = None) -> tuple[str, str]:
        """One chat completion; (the answer, the conversation's id)."""
        headers = {"X-Hermes-Session-Id": session} if session else {}
        body = {"model": "fake-model", "messages": [{"role": "user", "content": words}]}
        status, answer, reply = self.call(
            who, "POST", "/v1/chat/completions", json=body, headers=headers
        )
        assert status == 200, answer
        return answer["choices"][0]["message"]["content"], reply["X-Hermes-Session-Id"]

    def telegram_says(self, user: int, words: str, timeout: float = 60) -> str:
        """User ``user`` writes ``words`` in their private chat; the bot's answer."""
        before = len(self._replies(user))
        self.telegram.user_sends(words, user_id=user, chat_id=user)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            replies = self._replies(user)
            if len(replies) > before:
                return replies[before]
            time.sleep(0.1)
        raise AssertionError(f"no answer to user {user} within {timeout:.0f}s")

    def _replies(self, user: int) -> list[str]:
        return [str(p["text"]) for p in self.telegram.accepted if int(p["chat_id"]) == user]


def start(run_gateway: Any, telegram: FakeTelegram, **options: Any) -> Running:
    """A gateway process serving the HTTP API and Telegram (one worker: both in it)."""
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1", **options)
    gateway.wait_ready(port)
    return Running(gateway, port, telegram)
