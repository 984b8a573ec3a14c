"""What the chat-command attack batteries share (``test_*_command_attacks.py``).

An operator's machine with something to steal, OUTSIDE /tmp (under /var/tmp: the
sandbox gives commands a private /tmp, so a home under it would be hidden by accident):
``$HOME/.ssh/id_rsa``, a ``$HERMES_HOME/.env`` key, a 0.19 ``auth.json`` token, a model
key in ``config.yaml`` and a secret-named variable in the gateway's environment. A real
gateway on it (``GatewayThread``: the real runner, store and HTTP API) serves two API
principals (alice's and bob's keys, and the operator's) and a fake Telegram where users
42 and 7 write in private chats and in one group chat (``group_per_user``: each member's
conversation of their own).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes.gateway.settings import ApiServerSettings
from tests.gateway.fake_platforms import FakeTelegram
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for, write_config
from tests.gateway.processes import Gateway, free_port

SSH_CANARY = "ssh-private-key-canary-6d1f0a"
DOTENV_CANARY = "dotenv-deploy-canary-0b7e55c1"
AUTH_CANARY = "auth-json-refresh-canary-93ac4e"
CONFIG_CANARY = "config-model-key-canary-51d2e8"
ENV_CANARY = "env-var-secret-canary-c0ffee11"
CANARIES = (SSH_CANARY, DOTENV_CANARY, AUTH_CANARY, CONFIG_CANARY, ENV_CANARY)

OPERATOR_KEY = "operator-key-0123456789abcdef"
KEYS = {"alice": "alice-key-0123456789abcdef", "bob": "bob-key-0123456789abcdef"}
TOKEN = "424242:AAE-fake-telegram-token-do-not-log"
GROUP = "-1001"  # the group chat users 42 and 7 are both in


@dataclass
class Machine:
    """The operator's machine: ``home`` ($HOME), ``hermes`` ($HERMES_HOME) in it."""

    home: Path
    hermes: Path

    def snapshot(self) -> dict[str, bytes]:
        """Every file of the hermes home an attack might change (its config, .env,
        skills, plugins), by relative path; the store, the logs and the cron ticker left out."""
        kept: dict[str, bytes] = {}
        for path in sorted(self.hermes.rglob("*")):
            relative = path.relative_to(self.hermes).as_posix()
            if path.is_file() and not relative.startswith(("state.db", "logs/", "cron/ticker_")):
                kept[relative] = path.read_bytes()
        return kept


def planted_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    """The machine, for a test file's ``machine`` fixture (HOME and HERMES_HOME point
    at it while the test runs)."""
    root = Path(tempfile.mkdtemp(prefix="hermes-command-attacks-", dir="/var/tmp"))
    home, hermes = root / "home", root / "home" / ".hermes"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    (home / ".ssh" / "id_rsa").write_text(
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SSH_CANARY}\n", encoding="utf-8"
    )
    hermes.mkdir()
    (hermes / ".env").write_text(f"DEPLOY_KEY={DOTENV_CANARY}\n", encoding="utf-8")
    auth = {"providers": {"nous": {"access_token": AUTH_CANARY, "refresh_token": AUTH_CANARY}}}
    (hermes / "auth.json").write_text(json.dumps(auth), encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(hermes))
    monkeypatch.setenv("BILLING_SECRET", ENV_CANARY)  # exported, e.g. by systemd
    try:
        yield Machine(home, hermes)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Chats:
    """A running gateway and how each party talks to it."""

    gateway: GatewayThread
    telegram: FakeChat
    api: str
    conversations: dict[str, str] = field(default_factory=dict)  # who -> API session id

    def says(
        self, user: str, words: str, *, group: bool = False, answers: int = 1, timeout: float = 60
    ) -> list[str]:
        """User ``user`` writes ``words`` in their private chat (or the group); the
        ``answers`` next messages the bot sends to that chat."""
        chat = GROUP if group else user
        before = len(self.telegram.texts(chat))
        message = incoming(words, user=user, chat=chat, group=group)
        self.gateway.call(self.gateway.runner.handle_message(message))
        wait_for(lambda: len(self.telegram.texts(chat)) >= before + answers, timeout=timeout)
        return self.telegram.texts(chat)[before : before + answers]

    def sends(self, user: str, words: str, *, group: bool = False) -> None:
        """``says`` without waiting for an answer."""
        chat = GROUP if group else user
        message = incoming(words, user=user, chat=chat, group=group)
        self.gateway.call(self.gateway.runner.handle_message(message))

    def route(self, user: str, *, group: bool = False) -> str | None:
        """The conversation a private chat (or the user's part of the group) routes to."""
        key = f"telegram:{GROUP}:u{user}" if group else f"telegram:{user}"
        return self.gateway.db.gateway.get_route(key)

    def stored(self, conversation: str | None) -> str:
        """Every message of ``conversation`` as one text."""
        if conversation is None:
            return ""
        messages = self.gateway.db.get_conversation_messages(conversation)
        return json.dumps(messages, ensure_ascii=False)

    def call(
        self, who: str | None, words: str, session: str | None = None, timeout: float = 60
    ) -> httpx.Response:
        """One chat completion by ``who``'s key (None: the operator's)."""
        key = OPERATOR_KEY if who is None else KEYS[who]
        headers = {"Authorization": f"Bearer {key}"}
        if session:
            headers["X-Hermes-Session-Id"] = session
        body = {"model": "fake-model", "messages": [{"role": "user", "content": words}]}
        return httpx.post(
            f"{self.api}/chat/completions", json=body, headers=headers, timeout=timeout
        )


def answer_of(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


def configure(
    machine: Machine,
    llm_url: str,
    telegram: Mapping[str, Any] | None = None,
    **sections: Mapping[str, Any],
) -> dict[str, Any]:
    """config.yaml (the model key in it, each member of a group chat a conversation of
    their own, Telegram for users 42 and 7 with ``telegram`` added, ``sections`` added);
    the Telegram settings, which an in-process gateway is handed."""
    platform = {"token": TOKEN, "allowed_users": ["42", "7"], **(telegram or {})}
    gateway = {"group_per_user": True, **sections.pop("gateway", {})}
    gateway["platforms"] = {"telegram": platform}
    write_config(
        machine.hermes,
        llm_url,
        model={
            "default": "fake-model",
            "base_url": llm_url,
            "max_retries": 0,
            "api_key": CONFIG_CANARY,
        },
        gateway=gateway,
        **sections,
    )
    return platform


@contextlib.contextmanager
def running(machine: Machine, telegram: Mapping[str, Any]) -> Iterator[Chats]:
    """A gateway on ``machine``: the HTTP API with the operator's, alice's and bob's keys,
    and Telegram (``telegram``: its settings, ``allow_admin_from`` among them)."""
    chats: list[FakeChat] = []
    factory = {"telegram": lambda r, s: chats.append(FakeChat(r, s)) or chats[-1]}
    api = ApiServerSettings(port=0, key=OPERATOR_KEY, principals=dict(KEYS))
    with GatewayThread(
        machine.hermes, api=api, platforms={"telegram": dict(telegram)}, adapters=factory
    ) as gateway:
        yield Chats(gateway, chats[0], gateway.url)


class Telegram:
    """The fake Telegram of a gateway process, and what the bot sent to each chat."""

    def __init__(self, fake: FakeTelegram) -> None:
        self.fake = fake

    def sent(self, chat: str) -> list[str]:
        return [str(p["text"]) for p in self.fake.accepted if str(p["chat_id"]) == chat]

    def says(self, user: str, words: str, *, group: bool = False, timeout: float = 60) -> str:
        chat = GROUP if group else user
        before = len(self.sent(chat))
        self.fake.user_sends(
            words,
            user_id=int(user),
            chat_id=int(chat),
            chat_type="supergroup" if group else "private",
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.sent(chat)) > before:
                return self.sent(chat)[before]
            time.sleep(0.1)
        raise AssertionError(f"no answer in chat {chat} within {timeout:.0f}s")

    def report(self, chat: str, prompt: str, timeout: float = 60) -> str:
        """The report, once sent to ``chat``, of the background task asked ``prompt``."""

        def found() -> list[str]:
            return [
                t
                for t in self.sent(chat)
                if re.match(r"Background task #\d+ \(\S+\) (is done|failed): ", t)
                and f'"{prompt[:30]}' in t.splitlines()[0]
            ]

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if found():
                return found()[0]
            time.sleep(0.1)
        raise AssertionError(f"no report of the task '{prompt}' in chat {chat}")


@contextlib.contextmanager
def gateway_process(
    machine: Machine, llm_url: str, **sections: Mapping[str, Any]
) -> Iterator[tuple[Telegram, str, Gateway]]:
    """A real gateway process on ``machine`` (its HOME the machine's): the fake Telegram,
    the HTTP API's address (the operator's, alice's and bob's keys) and the process."""
    port = free_port()
    with FakeTelegram(TOKEN) as fake:
        gateway = {"api_key": OPERATOR_KEY, "api_keys": dict(KEYS), **sections.pop("gateway", {})}
        configure(
            machine,
            llm_url,
            {"base_url": fake.base_url, "poll_timeout": 1},
            gateway=gateway,
            **sections,
        )
        process = Gateway(
            machine.hermes,
            "--api-server",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            env={"HOME": str(machine.home)},
        )
        try:
            process.wait_ready(port)
            yield Telegram(fake), f"http://127.0.0.1:{port}", process
        finally:
            process.terminate()
