"""Hermes Agent 0.19's ``agent.skill_utils``: finding and reading skills, over hermes.tools.skills.

The folders are hermes's (``$HERMES_HOME/skills`` and ``skills.external_dirs``); the
names, shapes and the walk (sorted ``SKILL.md`` paths, support folders not descended
into) are 0.19's, so a skills panel lists what ``hermes skills list`` lists.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from hermes_constants import get_hermes_home, is_container, is_termux

from hermes.tools import skills as _skills

__all__ = [
    "EXCLUDED_SKILL_DIRS",
    "SKILL_CONFIG_PREFIX",
    "SKILL_SUPPORT_DIRS",
    "discover_all_skill_config_vars",
    "extract_skill_config_vars",
    "extract_skill_description",
    "normalize_skill_lookup_name",
    "skill_matches_environment",
    "skill_matches_platform_list",
    "get_all_skills_dirs",
    "get_disabled_skill_names",
    "extract_skill_conditions",
    "get_external_skills_dirs",
    "is_excluded_skill_path",
    "is_external_skill_path",
    "is_skill_support_path",
    "is_valid_namespace",
    "iter_skill_index_files",
    "parse_config_string_list",
    "parse_frontmatter",
    "parse_qualified_name",
    "resolve_skill_config_values",
    "skill_matches_platform",
    "yaml_load",
]

PLATFORM_MAP = {"macos": "darwin", "linux": "linux", "windows": "win32"}
EXCLUDED_SKILL_DIRS = frozenset(
    _skills.SKIPPED_DIRS
    | {
        ".archive",
        ".venv",
        "venv",
        "site-packages",
        ".tox",
        ".nox",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
    }
)
# A skill's own references/templates/assets/scripts are its files, not more skills.
SKILL_SUPPORT_DIRS = frozenset(("references", "templates", "assets", "scripts"))
_NAMESPACE_RE = re.compile(r"^[a-zA-Z0-9_-]+$")


def yaml_load(content: str) -> Any:
    """YAML text as Python values (safe loading, the C loader when there is one)."""
    return yaml.load(content, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def parse_frontmatter(content: str) -> tuple[dict[str, Any], str]:
    """The YAML front matter and the body; ({}, content) when there is none. As in 0.19, a
    leading BOM is skipped, and front matter that is not valid YAML (one bad line) is
    read as its ``key: value`` lines."""
    content = content.removeprefix("\ufeff")
    try:
        return _skills.split_front_matter(content)
    except _skills.SkillFormatError:
        pass
    fence = re.search(r"\n---\s*\n", content[3:]) if content.startswith("---") else None
    if fence is None:
        return {}, content
    head, body = content[3 : fence.start() + 3], content[fence.end() + 3 :]
    pairs = (line.split(":", 1) for line in head.strip().split("\n") if ":" in line)
    return {key.strip(): value.strip() for key, value in pairs}, body


def skill_matches_platform(frontmatter: dict[str, Any]) -> bool:
    """False only for a skill whose ``platforms`` leave this OS out."""
    return skill_matches_platform_list(frontmatter.get("platforms"))


def skill_matches_platform_list(platforms: Any) -> bool:
    """Whether this OS is among ``platforms`` (none: every OS; Termux counts as Linux)."""
    if not platforms:
        return True
    termux = is_termux()
    for platform in platforms if isinstance(platforms, list) else [platforms]:
        name = str(platform).lower().strip()
        wanted = PLATFORM_MAP.get(name, name)
        if sys.platform.startswith(wanted) or (termux and wanted in ("linux", "termux", "android")):
            return True
    return False


# The environments a skill may say it is for; a tag not among them never hides one.
_ENVIRONMENTS = frozenset({"kanban", "docker", "s6"})


def _in_environment(name: str) -> bool:
    if name == "kanban":  # a Kanban worker: its dispatcher names the task or board
        return bool(os.environ.get("HERMES_KANBAN_TASK") or os.environ.get("HERMES_KANBAN_BOARD"))
    if name == "docker":
        return is_container()
    return os.path.isdir("/run/s6") or os.path.isdir("/package/admin/s6-overlay")  # s6


def skill_matches_environment(frontmatter: dict[str, Any]) -> bool:
    """Whether a skill that names ``environments`` (``kanban``, ``docker``, ``s6``) is for
    this one, so listings offer it: any of them active, or a tag this does not know. A
    skill asked for by name loads wherever it is."""
    tags = frontmatter.get("environments")
    if not tags:
        return True
    for tag in tags if isinstance(tags, list) else [tags]:
        name = str(tag).lower().strip()
        if name and (name not in _ENVIRONMENTS or _in_environment(name)):
            return True
    return False


def normalize_skill_lookup_name(identifier: str) -> str:
    """A skill named by an absolute path under a skills folder of this home (as slash
    commands and jobs may store it) as the relative name ``skill_view`` takes; any other
    name as it is (a path elsewhere stays absolute, and ``skill_view`` refuses it)."""
    raw = (identifier or "").strip()
    path = Path(raw).expanduser()
    if not raw or not path.is_absolute():
        return raw.lstrip("/")
    roots = get_all_skills_dirs()
    for root in roots:  # the path as written first: a linked skill stays under its root
        try:
            return str(path.relative_to(root))
        except ValueError:
            continue
    try:
        return str(path.resolve().relative_to(roots[0].resolve()))
    except ValueError:
        return raw


SKILL_CONFIG_PREFIX = "skills.config"  # where skills' settings live in config.yaml


def extract_skill_config_vars(frontmatter: dict[str, Any]) -> list[dict[str, Any]]:
    """The settings a skill declares under ``metadata.hermes.config`` (``key``,
    ``description``, ``default``, ``prompt``); an entry without key or description, or
    a repeated key, is left out."""
    metadata = frontmatter.get("metadata")
    hermes = metadata.get("hermes") if isinstance(metadata, dict) else None
    declared = hermes.get("config") if isinstance(hermes, dict) else None
    if isinstance(declared, dict):
        declared = [declared]
    found: dict[str, dict[str, Any]] = {}
    for item in declared if isinstance(declared, list) else ():
        if not isinstance(item, dict):
            continue
        key = str(item.get("key", "")).strip()
        description = str(item.get("description", "")).strip()
        if not key or not description or key in found:
            continue
        entry: dict[str, Any] = {"key": key, "description": description}
        if item.get("default") is not None:
            entry["default"] = item["default"]
        prompt = item.get("prompt")
        entry["prompt"] = (
            prompt.strip() if isinstance(prompt, str) and prompt.strip() else description
        )
        found[key] = entry
    return list(found.values())


def discover_all_skill_config_vars() -> list[dict[str, Any]]:
    """Every setting the enabled skills for this OS declare, each key once, with the
    ``skill`` that declared it."""
    disabled = get_disabled_skill_names()
    found: dict[str, dict[str, Any]] = {}
    for folder in get_all_skills_dirs():
        if not folder.is_dir():
            continue
        for skill_file in iter_skill_index_files(folder, "SKILL.md"):
            try:
                frontmatter, _ = parse_frontmatter(skill_file.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
            name = str(frontmatter.get("name") or skill_file.parent.name)
            if name in disabled or not skill_matches_platform(frontmatter):
                continue
            for var in extract_skill_config_vars(frontmatter):
                found.setdefault(var["key"], {**var, "skill": name})
    return list(found.values())


def extract_skill_description(frontmatter: dict[str, Any]) -> str:
    """The skill's description for a one-line listing: at most 60 characters."""
    text = str(frontmatter.get("description") or "").strip().strip("'\"")
    return text if len(text) <= 60 else text[:57] + "..."


def is_excluded_skill_path(path: str | Path) -> bool:
    """A ``SKILL.md`` a scan skips: under an excluded folder, or a skill's support files."""
    return any(part in EXCLUDED_SKILL_DIRS for part in Path(path).parts) or (
        is_skill_support_path(path)
    )


def is_skill_support_path(path: str | Path) -> bool:
    """Under a ``references``/``templates``/``assets``/``scripts`` folder that sits right in
    a skill (beside its ``SKILL.md``): the skill's files, not a skill of their own."""
    parts = Path(path).parts
    return any(
        part in SKILL_SUPPORT_DIRS and index > 0 and (Path(*parts[:index]) / "SKILL.md").exists()
        for index, part in enumerate(parts[:-1])
    )


def is_external_skill_path(path: str | Path) -> bool:
    """Under one of ``skills.external_dirs`` (skills the user keeps elsewhere)."""
    candidate = _resolved(path)
    return any(candidate.is_relative_to(_resolved(root)) for root in get_external_skills_dirs())


def _resolved(path: str | Path) -> Path:
    try:
        return Path(path).expanduser().resolve()
    except (OSError, RuntimeError):
        return Path(path).expanduser().absolute()


def extract_skill_conditions(frontmatter: dict[str, Any]) -> dict[str, list[Any]]:
    """When a skill is offered: ``metadata.hermes``'s ``requires_*``/``fallback_for_*``
    lists (empty when absent or malformed)."""
    metadata = frontmatter.get("metadata")
    hermes = metadata.get("hermes") if isinstance(metadata, dict) else None
    hermes = hermes if isinstance(hermes, dict) else {}
    keys = ("fallback_for_toolsets", "requires_toolsets", "fallback_for_tools", "requires_tools")
    return {key: hermes.get(key, []) for key in keys}


def resolve_skill_config_values(config_vars: list[dict[str, Any]]) -> dict[str, Any]:
    """Each declared skill setting's value from ``skills.config.<key>`` in config.yaml, or
    its default when unset or blank; ``~`` and ``${VAR}`` expanded in text values."""
    section = _skills_config().get("config")
    resolved: dict[str, Any] = {}
    for var in config_vars:
        value: Any = section
        for part in str(var["key"]).split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is None or (isinstance(value, str) and not value.strip()):
            value = var.get("default", "")
        if isinstance(value, str) and ("~" in value or "${" in value):
            value = os.path.expanduser(os.path.expandvars(value))
        resolved[var["key"]] = value
    return resolved


def iter_skill_index_files(skills_dir: Path, filename: str) -> Iterator[Path]:
    """The ``filename`` files under ``skills_dir``, sorted, as 0.19 walks them."""
    matches: list[str] = []
    for root, dirs, files in os.walk(str(skills_dir), followlinks=True):
        has_index = "SKILL.md" in files
        dirs[:] = [
            d
            for d in dirs
            if d not in EXCLUDED_SKILL_DIRS and not (has_index and d in SKILL_SUPPORT_DIRS)
        ]
        if filename in files:
            matches.append(os.path.join(root, filename))
    for path in sorted(matches):
        yield Path(path)


def parse_config_string_list(value: Any) -> list[str]:
    """A config value given as a list or a comma-separated string, as a list of names."""
    if value is None:
        return []
    items = value if isinstance(value, list | tuple | set) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def _skills_config() -> dict[str, Any]:
    """config.yaml's ``skills`` section as written ({} without one). Read here, not
    through ``hermes_cli.config``, whose ``get_missing_skill_config_vars`` reads this
    module: the two facades would lean on each other."""
    import yaml
    from hermes_constants import get_config_path

    try:
        raw = yaml.safe_load(get_config_path().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    section = raw.get("skills") if isinstance(raw, dict) else None
    return section if isinstance(section, dict) else {}


def get_external_skills_dirs() -> list[Path]:
    """``skills.external_dirs`` that exist, ``~`` and variables expanded."""
    found = []
    for entry in parse_config_string_list(_skills_config().get("external_dirs")):
        path = Path(os.path.expandvars(entry)).expanduser()
        if path.is_dir() and path.resolve() != (get_hermes_home() / "skills").resolve():
            found.append(path)
    return found


def get_all_skills_dirs() -> list[Path]:
    return [get_hermes_home() / "skills", *get_external_skills_dirs()]


def get_disabled_skill_names(platform: str | None = None) -> set[str]:
    """``skills.disabled``, with ``skills.platform_disabled[platform]`` when one is given."""
    section = _skills_config()
    disabled = set(parse_config_string_list(section.get("disabled")))
    per_platform = section.get("platform_disabled")
    if platform and isinstance(per_platform, dict):
        disabled |= set(parse_config_string_list(per_platform.get(platform)))
    return disabled


def parse_qualified_name(name: str) -> tuple[str | None, str]:
    """``'namespace:skill'`` as (namespace, skill); (None, name) without a colon."""
    if ":" not in name:
        return None, name
    namespace, bare = name.split(":", 1)
    return namespace, bare


def is_valid_namespace(candidate: str | None) -> bool:
    return bool(candidate) and bool(_NAMESPACE_RE.match(candidate or ""))
