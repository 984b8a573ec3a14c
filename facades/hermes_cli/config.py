"""Hermes Agent 0.19's ``hermes_cli.config``: the home and config.yaml, over hermes.config.

``load_config`` is the file as its author wrote it (Hermes Agent's names, which hermes
reads as they are) over hermes's defaults, as one nested dict; nothing here writes.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hermes_constants import get_env_path, get_hermes_home

from hermes import config as _config

__all__ = [
    "get_config_path",
    "get_env_path",
    "get_env_value",
    "get_hermes_home",
    "load_config",
    "load_env",
    "read_raw_config",
]


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
    """hermes's defaults with config.yaml over them (its keys as written)."""
    merged = _config.load_config(get_config_path()).as_tree()
    return _merge(merged, read_raw_config())


def load_env() -> dict[str, str]:
    """The ``KEY=value`` lines of the home's .env."""
    return _config.dotenv_values(get_hermes_home())


def get_env_value(key: str) -> str | None:
    import os

    return os.environ.get(key) or load_env().get(key)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
