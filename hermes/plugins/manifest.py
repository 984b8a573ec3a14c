"""Where plugins are found: the folder of plugins shipped inside hermes (``bundled/``, or
``HERMES_BUNDLED_PLUGINS``), ``$HERMES_HOME/plugins/<name>/plugin.yaml`` (or one category
level deeper, ``plugins/<category>/<name>/``) and the ``hermes_agent.plugins`` entry-point
group, as in Hermes Agent 0.19. Later sources win on a name collision."""

from __future__ import annotations

import importlib.metadata
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

log = logging.getLogger(__name__)

ENTRY_POINTS_GROUP = "hermes_agent.plugins"
# Folders of Hermes Agent's own discovery paths (memory providers, its bundled engines).
_SKIPPED = frozenset({"memory", "context_engine", "platforms", "model-providers"})


@dataclass
class PluginManifest:
    """A parsed ``plugin.yaml`` (or an entry point): 0.19's fields."""

    name: str
    version: str = ""
    description: str = ""
    author: str = ""
    provides_tools: list[str] = field(default_factory=list)
    provides_hooks: list[str] = field(default_factory=list)
    source: str = ""  # "bundled", "user" or "entrypoint"
    path: str | None = None  # the folder, or the entry point's "module:attr"
    kind: str = "standalone"
    key: str = ""  # what plugins.enabled names: the folder name, "category/name" nested

    @property
    def id(self) -> str:
        return self.key or self.name


def warn(text: str) -> None:
    """One line on stderr for the person starting hermes (the log may be a file)."""
    print(f"hermes: {text}", file=sys.stderr)
    log.info("%s", text)


def bundled_dir() -> Path:
    """The plugins shipped with hermes: ``HERMES_BUNDLED_PLUGINS`` (0.19's variable, for a
    packaged install's own folder), else ``bundled/`` beside this module. Like any
    plugin, one loads only when ``plugins.enabled`` names it."""
    override = os.environ.get("HERMES_BUNDLED_PLUGINS")
    return Path(override) if override else Path(__file__).resolve().parent / "bundled"


def discover(home: Path) -> list[PluginManifest]:
    """Every plugin found, the last of each id winning (bundled, the home's folder, then
    entry points: the user's own plugin of a bundled one's name replaces it)."""
    winners: dict[str, PluginManifest] = {}
    found = [
        *scan_folder(bundled_dir(), source="bundled"),
        *scan_folder(home / "plugins"),
        *scan_entry_points(),
    ]
    for manifest in found:
        winners[manifest.id] = manifest
    return list(winners.values())


def scan_folder(root: Path, prefix: str = "", source: str = "user") -> list[PluginManifest]:
    """The manifests under ``root``: a folder with plugin.yaml is a plugin, one without
    is a category whose folders are looked at (one level only)."""
    found: list[PluginManifest] = []
    if not root.is_dir():
        return found
    for folder in sorted(root.iterdir()):
        if not folder.is_dir() or (not prefix and folder.name in _SKIPPED):
            continue
        manifest_file = next(
            (f for f in (folder / "plugin.yaml", folder / "plugin.yml") if f.is_file()), None
        )
        if manifest_file is not None:
            if (manifest := _parse(manifest_file, folder, prefix, source)) is not None:
                found.append(manifest)
        elif not prefix:
            found.extend(scan_folder(folder, folder.name, source))
    return found


def _parse(manifest_file: Path, folder: Path, prefix: str, source: str) -> PluginManifest | None:
    try:
        data: Any = yaml.safe_load(manifest_file.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        warn(f"plugin {folder.name} was not loaded: {manifest_file} cannot be read ({exc})")
        return None
    if not isinstance(data, dict):
        warn(f"plugin {folder.name} was not loaded: {manifest_file} is not a YAML mapping")
        return None
    name = str(data.get("name") or folder.name)
    return PluginManifest(
        name=name,
        version=str(data.get("version", "")),
        description=str(data.get("description", "")),
        author=str(data.get("author", "")),
        provides_tools=list(data.get("provides_tools") or []),
        provides_hooks=list(data.get("provides_hooks") or []),
        source=source,
        path=str(folder),
        kind=str(data.get("kind") or "standalone"),
        key=f"{prefix}/{folder.name}" if prefix else name,
    )


def scan_entry_points() -> list[PluginManifest]:
    """Installed packages that offer a plugin in Hermes Agent's entry-point group."""
    try:
        points = importlib.metadata.entry_points(group=ENTRY_POINTS_GROUP)
    except Exception as exc:  # a broken installed distribution must not stop a start
        log.warning("the installed plugin entry points cannot be read: %s", exc)
        return []
    return [
        PluginManifest(name=p.name, source="entrypoint", path=p.value, key=p.name) for p in points
    ]
