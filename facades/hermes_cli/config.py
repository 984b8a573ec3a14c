"""Hermes Agent 0.19's ``hermes_cli.config``: the home and config.yaml, over hermes.config.

``load_config`` is the file as its author wrote it (Hermes Agent's names, which hermes
reads as they are) over the defaults (``DEFAULT_CONFIG``: hermes's, and 0.19's sections
hermes does not have, from ``defaults_019.yaml``), as one nested dict, with ``${VAR}`` in
its strings read from the environment as 0.19 reads them. ``save_config`` writes what
differs from those defaults, once hermes has read it without complaint.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_constants import get_env_path, get_hermes_home

from hermes import config as _config
from hermes.errors import ConfigError

__all__ = [
    "DEFAULT_CONFIG",
    "ConfigIssue",
    "ensure_hermes_home",
    "get_config_path",
    "get_env_path",
    "get_env_value",
    "get_hermes_home",
    "load_config",
    "load_env",
    "read_raw_config",
    "save_config",
    "validate_config_structure",
]

# hermes's defaults as one nested dict (what load_config puts under the file).
_HERMES_DEFAULTS = _config.Config(_config.defaults(), Path("config.yaml")).as_tree()


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _defaults_019() -> dict[str, Any]:
    import yaml

    text = (Path(__file__).with_name("defaults_019.yaml")).read_text(encoding="utf-8")
    loaded = yaml.safe_load(text)
    return loaded if isinstance(loaded, dict) else {}


# hermes's defaults, and 0.19's keys hermes has not, in its sections too (``cron.provider``
# beside hermes's ``cron.tick_seconds``): tools read them; hermes does not.
DEFAULT_CONFIG: dict[str, Any] = _merge(_defaults_019(), _HERMES_DEFAULTS)
# What each config.yaml's ``${VAR}``s read as when load_config last gave it out, so a save
# after the variable changed still writes the reference, not the value read then.
_LOADED: dict[str, Any] = {}
_VARIABLE = re.compile(r"\$\{([^}]+)\}")
# The folders 0.19 makes in a home (its tools list and write into them).
_HOME_FOLDERS = ("cron", "sessions", "logs", "memories", "hooks", "skills")


def get_config_path() -> Path:
    return get_hermes_home() / "config.yaml"


def read_raw_config() -> dict[str, Any]:
    """config.yaml as written, or {} when there is none (or it is not a mapping)."""
    import yaml

    try:
        data = yaml.safe_load(get_config_path().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def load_config() -> dict[str, Any]:
    """hermes's defaults with config.yaml over them (its keys as written, ``${VAR}``
    expanded; an unset variable stays as written)."""
    merged = _merge(DEFAULT_CONFIG, _config.load_config(get_config_path()).as_tree())
    expanded = _expand_env_vars(read_raw_config())
    _LOADED[str(get_config_path())] = copy.deepcopy(expanded)
    return _merge(merged, expanded)


def save_config(config: dict[str, Any]) -> None:
    """Write ``config`` as config.yaml (0600, atomically), leaving out what equals
    ``DEFAULT_CONFIG``; a ``${VAR}`` the file had stays written so. A value hermes would
    refuse is a ``ValueError`` and the file is left as it was."""
    import yaml

    path = get_config_path()
    ensure_hermes_home()
    loaded = _LOADED.get(str(path))
    kept = _with_variables(_without_defaults(config, DEFAULT_CONFIG), read_raw_config(), loaded)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        yaml.safe_dump(kept, handle, sort_keys=False, allow_unicode=True)
    try:
        _config.load_config(tmp)
    except ConfigError as exc:
        tmp.unlink()
        raise ValueError(str(exc)) from None
    os.replace(tmp, path)


def ensure_hermes_home() -> None:
    """The home (0700) and the folders 0.19 keeps in it."""
    home = _config.ensure_home(get_hermes_home())
    for name in _HOME_FOLDERS:
        (home / name).mkdir(mode=0o700, exist_ok=True)


def load_env() -> dict[str, str]:
    """The ``KEY=value`` lines of the home's .env."""
    return _config.dotenv_values(get_hermes_home())


def get_env_value(key: str) -> str | None:
    import os

    return os.environ.get(key) or load_env().get(key)


def _expand_env_vars(value: Any) -> Any:
    """``value`` with each ``${VAR}`` in its strings (not its keys) read from the
    environment; an unset variable stays as written (0.19's name and behaviour)."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {key: _expand_env_vars(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_expand_env_vars(item) for item in value]
    return value


def _without_defaults(config: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in config.items():
        default = defaults.get(key)
        if isinstance(value, dict) and isinstance(default, dict):
            inner = _without_defaults(value, default)
            if inner:
                kept[key] = inner
        elif key not in defaults or value != default:
            kept[key] = copy.deepcopy(value)
    return kept


def _with_variables(config: Any, raw: Any, loaded: Any = None) -> Any:
    """``config`` with each value that is the file's ``${VAR}`` as read (at the last
    ``load_config``, or now) put back as written, so a save does not write a secret's value
    into the file. List items with a unique ``name`` are matched by it, else by place."""
    if isinstance(config, dict) and isinstance(raw, dict):
        was = loaded if isinstance(loaded, dict) else {}
        return {
            key: _with_variables(value, raw.get(key), was.get(key)) for key, value in config.items()
        }
    if isinstance(config, list) and isinstance(raw, list):
        named, raw_named = _by_name(config), _by_name(raw)
        if named is not None and raw_named is not None:
            loaded_named = _by_name(loaded) or {}
            return [
                _with_variables(
                    item, raw_named.get(str(item["name"])), loaded_named.get(str(item["name"]))
                )
                for item in config
            ]
        was_list = loaded if isinstance(loaded, list) else []
        return [
            _with_variables(
                value,
                raw[index] if index < len(raw) else None,
                was_list[index] if index < len(was_list) else None,
            )
            for index, value in enumerate(config)
        ]
    if (
        isinstance(raw, str)
        and _VARIABLE.search(raw)
        and config in (raw, loaded, _expand_env_vars(raw))
    ):
        return raw
    return config


def _by_name(items: Any) -> dict[str, Any] | None:
    """List items by their ``name``, when every item is a mapping with a unique one."""
    if not isinstance(items, list):
        return None
    names = [item.get("name") if isinstance(item, dict) else None for item in items]
    if None in names or len(set(names)) != len(names):
        return None
    return {str(name): item for name, item in zip(names, items, strict=True)}


# --- 0.19's structure check of its provider sections --------------------------------
# hermes reads one endpoint from ``model``; ``custom_providers`` and ``fallback_model`` are
# 0.19's, and a config.yaml carried over from it (or edited for both) is checked as 0.19
# checks it, so a tool showing these problems shows the same ones.


@dataclass
class ConfigIssue:
    """One problem in config.yaml's layout: ``severity`` is ``error`` or ``warning``."""

    severity: str
    message: str
    hint: str


# Keys of a custom_providers entry, which a slip of indentation puts at the top.
_PROVIDER_ENTRY_KEYS = frozenset({"base_url", "api_key", "rate_limit_delay", "api_mode"})


def validate_config_structure(config: dict[str, Any] | None = None) -> list[ConfigIssue]:
    """The layout mistakes 0.19 names in ``config`` (default: the home's config.yaml as
    written): ``custom_providers`` as a mapping instead of a list, entries without a name
    or URL, a ``fallback_model`` that is no mapping (or list of them) of provider and
    model, a fallback nested in the providers, provider keys at the top."""
    config = read_raw_config() if config is None else config
    providers = config.get("custom_providers")
    issues = _provider_issues(providers) + _fallback_issues(config.get("fallback_model"))
    nested = isinstance(providers, dict) and "fallback_model" in providers
    if nested and "fallback_model" not in config:
        issues.append(
            ConfigIssue(
                "error",
                "fallback_model is inside custom_providers instead of at the top level",
                "Move fallback_model to the top of config.yaml (no indentation).",
            )
        )
    if providers and not config.get("model"):
        issues.append(
            ConfigIssue(
                "warning",
                "custom_providers is set but there is no 'model' section to choose one",
                "Add `model:` with `provider: custom` and `default: <model name>`.",
            )
        )
    issues += [
        ConfigIssue(
            "warning",
            f"Top-level key '{key}' looks misplaced: it belongs under 'model:' or in a "
            "custom_providers entry",
            f"Move '{key}' into the section it belongs to.",
        )
        for key in config
        if key in _PROVIDER_ENTRY_KEYS
    ]
    return issues


def _provider_issues(providers: Any) -> list[ConfigIssue]:
    if isinstance(providers, dict):
        issues = [
            ConfigIssue(
                "error",
                "custom_providers is a dict: it must be a YAML list (each entry starts with '- ')",
                "Write it as:\n  custom_providers:\n    - name: my-provider\n"
                "      base_url: https://...",
            )
        ]
        misplaced = sorted(set(providers) & _PROVIDER_ENTRY_KEYS)
        if misplaced:
            issues.append(
                ConfigIssue(
                    "warning",
                    f"Keys {misplaced} look like custom_providers entry fields",
                    "Indent them under a '- name: ...' entry of the list.",
                )
            )
        return issues
    if not isinstance(providers, list):
        return []
    issues = []
    for index, entry in enumerate(providers):
        where = f"custom_providers[{index}]"
        if not isinstance(entry, dict):
            issues.append(
                ConfigIssue(
                    "warning",
                    f"{where} is not a dict (it is a {type(entry).__name__})",
                    "Each entry needs at least a name and a base_url.",
                )
            )
            continue
        issues += [
            ConfigIssue("warning", f"{where} is missing '{key}'", f"Add `{key}:` to the entry.")
            for key in ("name", "base_url")
            if not entry.get(key)
        ]
    return issues


def _fallback_issues(fallback: Any) -> list[ConfigIssue]:
    if fallback is None or fallback == {}:
        return []  # none, or an empty mapping: no fallback, nothing to say
    entries = list(enumerate(fallback)) if isinstance(fallback, list) else [(None, fallback)]
    issues = []
    for index, entry in entries:
        where = "fallback_model" if index is None else f"fallback_model[{index}]"
        if not isinstance(entry, dict):
            issues.append(
                ConfigIssue(
                    "error",
                    f"{where} should be a dict of 'provider' and 'model', not a "
                    f"{type(entry).__name__}",
                    "Write it as:\n  fallback_model:\n    provider: openrouter\n"
                    "    model: <model name>",
                )
            )
            continue
        issues += [
            ConfigIssue(
                "warning",
                f"{where} is missing '{key}' (that fallback is not used)",
                f"Add `{key}:` to it.",
            )
            for key in ("provider", "model")
            if not entry.get(key)
        ]
    return issues
