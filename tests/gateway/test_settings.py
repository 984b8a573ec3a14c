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


def test_api_keys_name_one_key_per_principal(hermes_home: Path) -> None:
    (hermes_home / "keys").mkdir()
    (hermes_home / "keys" / "ci.key").write_text("ci-key-from-its-file-0123\n", encoding="utf-8")
    write_config(
        hermes_home,
        "http://127.0.0.1:9/v1",
        gateway={
            "api_key": "operator-key-0123456789",
            "api_keys": {"webui": "webui-key-0123456789", "ci": {"key_file": "keys/ci.key"}},
        },
    )
    api = api_server_settings(load_config(), None)
    assert dict(api.principals) == {
        "webui": "webui-key-0123456789",
        "ci": "ci-key-from-its-file-0123",
    }
    assert "webui-key" not in repr(api) and "ci-key" not in repr(api)


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"bad name!": "a-key-of-enough-length-01"}, "a principal's name must be"),
        ({"webui": "short"}, "at least 16 characters"),
        ({"webui": {"key_file": "missing.key"}}, "cannot read"),
        ({"webui": {"file": "x"}}, "must be the key itself or {key_file: PATH}"),
        ({"a": "same-key-0123456789ab", "b": "same-key-0123456789ab"}, "the same key as another"),
        ({"webui": "operator-key-0123456789"}, "repeats the operator's gateway.api_key"),
    ],
)
def test_a_bad_api_keys_entry_is_one_sentence(hermes_home: Path, entry: dict, words: str) -> None:
    write_config(
        hermes_home,
        "http://127.0.0.1:9/v1",
        gateway={"api_key": "operator-key-0123456789", "api_keys": entry},
    )
    with pytest.raises(ConfigError) as raised:
        api_server_settings(load_config(), None)
    message = str(raised.value)
    assert words in message and message.count(". ") <= 1 and "Traceback" not in message


def test_config_show_masks_the_principals_keys(hermes_home: Path) -> None:
    from hermes.redaction import mask_fields

    shown = mask_fields(
        "gateway.api_keys", {"webui": "webui-key-0123456789", "ci": {"key_file": "ci.key"}}
    )
    assert shown == {"webui": "[redacted]", "ci": {"key_file": "ci.key"}}
