"""Whether config.yaml changed since the gateway started: it keeps its start-time
configuration (the store, the platforms, the MCP servers, the model are set up once), so
a changed file needs a restart, and the gateway says so rather than go on in silence.

``ConfigWatch.check()`` compares the file with what the gateway started on (read again
only when its modification time or size changed) and answers the dotted keys that
differ; the gateway logs them once, and ``gateway status`` says a restart is needed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml

log = logging.getLogger(__name__)

UNREADABLE = "(the file cannot be read as YAML)"


class ConfigWatch:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._stamp = self._stat()
        self._started = _flat(self._read())
        self.changed: list[str] = []

    def check(self) -> list[str]:
        """The keys that differ from the start (said once in the log per new set)."""
        stamp = self._stat()
        if stamp == self._stamp:
            return self.changed
        self._stamp = stamp
        now = self._read()
        changed = [UNREADABLE] if now is None else _differences(self._started, _flat(now))
        if changed and changed != self.changed:
            log.warning(
                "%s changed since the gateway started (%s); it goes on with the configuration "
                "it started with: restart it to apply (`hermes gateway restart`)",
                self.path,
                ", ".join(changed),
            )
        elif self.changed and not changed:
            log.info("%s is back to what the gateway started with", self.path)
        self.changed = changed
        return changed

    def _stat(self) -> tuple[int, int] | None:
        try:
            found = self.path.stat()
        except OSError:
            return None
        return (found.st_mtime_ns, found.st_size)

    def _read(self) -> dict[str, Any] | None:
        try:
            loaded = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            return {}
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            return None
        return loaded if isinstance(loaded, dict) else None


def _flat(tree: dict[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in (tree or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(_flat(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
