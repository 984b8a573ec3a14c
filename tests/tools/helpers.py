"""Helpers of the tools suite (its fixtures are in tests/tools/conftest.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psutil
import yaml


def write_config(home: Path, values: dict[str, Any]) -> None:
    """Write ``{"terminal.timeout": 5, ...}`` as a nested config.yaml in ``home``."""
    tree: dict[str, Any] = {}
    for key, value in values.items():
        section, leaf = key.split(".", 1)
        tree.setdefault(section, {})[leaf] = value
    (home / "config.yaml").write_text(yaml.safe_dump(tree), encoding="utf-8")


def running_with(marker: str) -> list[int]:
    """Pids of the live processes whose command line holds ``marker`` (seen from the host,
    so also inside a sandbox's PID namespace, where ``$!`` means another number)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(
                proc.info["cmdline"] or []
            ):
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def still_running_with(marker: str, within: float = 10.0) -> list[int]:
    """``running_with(marker)`` once it is empty, or after ``within`` seconds: the kernel
    tears a killed sandbox's processes down one by one, slower on a busy machine."""
    deadline = time.monotonic() + within
    while (found := running_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found
