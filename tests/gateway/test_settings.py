"""Platform settings: secrets from config or environment, never shown; missing extras."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hermes.config import load_config
from hermes.errors import ConfigError
from hermes.gateway import adapters
from hermes.gateway.errors import MissingExtraError
from hermes.gateway.settings import api_server_settings, parse_listen, platforms_from_config
from tests.gateway.harness import GatewayThread, write_config


def test_secrets_come_from_the_environment_and_stay_out_of_reprs(
    hermes_home: Path, monkeypatch
) -> None:
    write_config(
        hermes_home,
        "http://127.0.0.1:9/v1",
        gateway={
            "platforms": {"telegram": {"allowed_users": [1, "2"]}, "slack": {"enabled": False}}
        },
    )
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "777:env-telegram-token")
    monkeypatch.setenv("HERMES_GATEWAY_KEY", "env-gateway-key-123")
    config = load_config()
    platforms = platforms_from_config(config)
    assert list(platforms) == ["telegram"]
    telegram = platforms["telegram"]
    assert telegram.secret("token") == "777:env-telegram-token"
    assert telegram.allows("1") and telegram.allows("2") and not telegram.allows("3")
    assert "env-telegram-token" not in repr(telegram)
    api = api_server_settings(config, None, "0.0.0.0:9000")
    assert (api.host, api.port, api.key) == ("0.0.0.0", 9000, "env-gateway-key-123")
    assert "env-gateway-key" not in repr(api)


def test_unknown_platforms_and_bad_listen_addresses_are_config_errors(hermes_home: Path) -> None:
    write_config(hermes_home, "http://127.0.0.1:9/v1", gateway={"platforms": {"irc": {}}})
    with pytest.raises(ConfigError, match="'irc', which is not a platform"):
        platforms_from_config(load_config())
    with pytest.raises(ConfigError, match="HOST:PORT"):
        parse_listen("localhost")
    assert parse_listen("[::1]:8642") == ("::1", 8642)


def test_a_missing_extra_is_one_clear_sentence(
    hermes_home: Path, config_file: Path, monkeypatch
) -> None:
    monkeypatch.setitem(sys.modules, "telegram", None)  # as if the extra were not installed
    with pytest.raises(
        MissingExtraError, match=r"install it with: pip install 'hermes-agent-runtime\[telegram\]'"
    ):
        adapters.require("telegram")
    gateway = GatewayThread(
        hermes_home, api=None, platforms={"telegram": {"token": "1:abcdefgh", "allowed_users": [1]}}
    )
    try:
        with pytest.raises(
            MissingExtraError, match=r"telegram: the 'telegram' library is not installed"
        ):
            gateway.start()
    finally:
        gateway.stop()
