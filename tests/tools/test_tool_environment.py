"""Commands the terminal runs, foreground or background, never get hermes's secrets.

Each command writes its own environment to a file, read here directly: what the
process itself saw, not the scrubbed tool result.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.tools import ToolContext

SECRETS = {
    "HERMES_API_KEY": "model-key-for-the-agent-only",
    "HERMES_GATEWAY_KEY": "gateway-key-for-the-gateway-only",
    "HERMES_STATE_URL": "postgresql://hermes:store-password@db/hermes",
    "TELEGRAM_BOT_TOKEN": "123456789:bot-token-for-the-gateway-only-abc",
    "SLACK_APP_TOKEN": "xapp-for-the-gateway-only",
    "OPENROUTER_API_KEY": "router-key-for-the-agent-only",
    "DEPLOY_CREDENTIAL": "named-harmlessly-but-in-dotenv",
}


@pytest.fixture
def secret_environment(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("BUILD_FLAVOUR", "release")  # an ordinary variable
    (home / ".env").write_text("DEPLOY_CREDENTIAL=named-harmlessly-but-in-dotenv\n")


def seen_environment(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


@pytest.mark.usefixtures("secret_environment")
@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
def test_a_command_runs_without_hermes_secrets(
    call: Callable[..., str], workdir: Path, background: bool
) -> None:
    result = call("terminal", command="env > seen.env", background=background)
    if background:
        process = re.search(r"Started background process (proc_\w+)", result)
        assert process, result
        call("process", action="wait", id=process.group(1), timeout=20)
    seen = seen_environment(workdir / "seen.env")
    assert [name for name in SECRETS if name in seen] == []
    assert seen["BUILD_FLAVOUR"] == "release" and seen["PATH"] and seen["HOME"]


@pytest.mark.usefixtures("secret_environment")
def test_pass_env_hands_a_listed_variable_to_commands(
    call: Callable[..., str], make_ctx: Callable[..., ToolContext], workdir: Path
) -> None:
    ctx = make_ctx({"terminal.pass_env": ["TELEGRAM_BOT_TOKEN"]})
    result = call("terminal", ctx, command="env > seen.env; echo $TELEGRAM_BOT_TOKEN")
    seen = seen_environment(workdir / "seen.env")
    assert seen["TELEGRAM_BOT_TOKEN"] == SECRETS["TELEGRAM_BOT_TOKEN"]
    assert "HERMES_API_KEY" not in seen
    assert SECRETS["TELEGRAM_BOT_TOKEN"] not in result  # the command has it, the model not


def test_pass_env_must_name_variables(make_ctx: Callable[..., ToolContext]) -> None:
    from hermes.errors import ConfigError

    with pytest.raises(ConfigError, match=r"terminal.pass_env.*environment variable names"):
        make_ctx({"terminal.pass_env": ["NOT A NAME"]})
