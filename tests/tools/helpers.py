"""Helpers of the tools suite (its fixtures are in tests/tools/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def write_config(home: Path, values: dict[str, Any]) -> None:
    """Write ``{"terminal.timeout": 5, ...}`` as a nested config.yaml in ``home``."""
    tree: dict[str, Any] = {}
    for key, value in values.items():
        section, leaf = key.split(".", 1)
        tree.setdefault(section, {})[leaf] = value
    (home / "config.yaml").write_text(yaml.safe_dump(tree), encoding="utf-8")
