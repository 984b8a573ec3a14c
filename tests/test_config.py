"""Configuration: defaults, file, environment, and errors that name key and line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hermes.config import (
    ConfigError,
    ensure_home,
    load_config,
    parse_cli_value,
    save_value,
    validate_value,
)


def write(home: Path, text: str) -> Path:
    path = home / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_a_file(hermes_home: Path) -> None:
    config = load_config()
    assert config.get("compression.threshold") == 0.45
    assert config.get("model.base_url").startswith("https://")
    assert config.get("compression")["enabled"] is True


def test_file_values_override_defaults_and_environment_overrides_both(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(hermes_home, "model:\n  default: from-file\n  context_length: 4096\n")
    assert load_config().get("model.default") == "from-file"
    assert load_config().get("model.context_length") == 4096
    monkeypatch.setenv("HERMES_MODEL", "from-env")
    assert load_config().get("model.default") == "from-env"


def test_a_wrong_type_names_the_key_and_its_line(hermes_home: Path) -> None:
    write(hermes_home, "model:\n  default: x\ncompression:\n  enabled: true\n  threshold: lots\n")
    with pytest.raises(ConfigError) as info:
        load_config()
    assert "compression.threshold" in str(info.value) and "line 5" in str(info.value)


def test_broken_yaml_names_the_line(hermes_home: Path) -> None:
    write(hermes_home, "model:\n  default: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_config()


def test_an_unknown_key_is_ignored_with_a_warning_that_suggests_the_right_one(
    hermes_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(hermes_home, "compresion:\n  threshold: 0.4\n")
    config = load_config()
    assert config.get("compression.threshold") == 0.45
    assert config.ignored == {"compresion.threshold": 0.4}
    warning = capsys.readouterr().err
    assert "compresion.threshold (line 2; did you mean compression.threshold?)" in warning


def test_the_warning_does_not_call_a_provider_entry_ignored_where_hermes_reads_it(
    hermes_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Hermes Agent config's provider entries: hermes reads their endpoint, headers and
    TLS settings for model.base_url (endpoint_transport), so the warning names only the
    rest, and tells the URL a `model.provider` naming an entry wants in model.base_url."""
    write(hermes_home, (
        "model:\n  default: m1\n  provider: work\n"
        "providers:\n  work:\n    base_url: https://llm.example.com/v1\n    api_key: sk-x\n"
        "    extra_headers:\n      X-Token: abc\n    ssl_verify: false\n"
        "custom_providers:\n  - name: other\n    base_url: https://other.example.com/v1\n"
    ))  # fmt: skip
    config = load_config()
    assert "providers.work.extra_headers.X-Token" in config.ignored  # endpoint_transport's
    warning = capsys.readouterr().err
    assert "has 3 keys hermes does not use, ignored: providers.work.api_key (line 7)" in warning
    assert "extra_headers" not in warning.split("custom_providers")[0]
    assert "ssl_verify" not in warning and "providers.work.base_url" not in warning
    assert (
        "model.provider (line 3; hermes picks no endpoint by a provider's name: "
        "set model.base_url to https://llm.example.com/v1)"
    ) in warning
    assert "custom_providers (line 11; hermes reads only the extra_headers" in warning


def test_a_threshold_outside_zero_to_one_is_refused(hermes_home: Path) -> None:
    write(hermes_home, "compression:\n  threshold: 5\n")
    with pytest.raises(ConfigError, match="between 0 and 1"):
        load_config()


def test_a_list_at_the_top_is_refused(hermes_home: Path) -> None:
    write(hermes_home, "- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config()


def test_types_are_checked_like_a_person_reads_them() -> None:
    assert validate_value("compression.threshold", 1) == 1.0
    with pytest.raises(ConfigError):
        validate_value("agent.max_iterations", True)  # a bool is not a number
    assert validate_value("model.context_length", None) is None
    assert parse_cli_value("model.default", "123") == "123"
    assert parse_cli_value("agent.max_iterations", "12") == 12
    with pytest.raises(ConfigError, match="whole number"):
        parse_cli_value("agent.max_iterations", "many")


def test_save_value_keeps_other_keys_and_is_private(hermes_home: Path) -> None:
    write(hermes_home, "model:\n  default: keep-me\n")
    path = save_value("compression.threshold", 0.3)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    config = load_config()
    assert config.get("compression.threshold") == 0.3
    assert config.get("model.default") == "keep-me"


def test_hermes_home_is_created_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "new-home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    ensure_home()
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
