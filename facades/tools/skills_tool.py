"""Hermes Agent 0.19's ``tools.skills_tool``: the skills listing and ``skill_view`` as JSON.

Over hermes.tools.skills: the same folders (``SKILLS_DIR`` when a caller points it
elsewhere, as 0.19 allows), and ``skills.disabled`` left out. ``skill_view`` answers
0.19's JSON shape (``success``, ``name``, ``description``, ``content``,
``linked_files``...) and, as 0.19, refuses a name two skills share and a disabled skill.
"""

from __future__ import annotations

import json
import os
import re
from enum import StrEnum
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import agent.skill_utils as _skill_utils
from agent.skill_utils import (
    EXCLUDED_SKILL_DIRS,
    get_disabled_skill_names,
    is_skill_support_path,
    parse_frontmatter,
    skill_matches_environment,
    skill_matches_platform,
)
from hermes_constants import get_hermes_home

from hermes import config as _config
from hermes.tools import skills as _skills
from tools._registry import registry  # 0.19's tool registry, over hermes's tools

__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "SKILLS_DIR",
    "SKILLS_LIST_SCHEMA",
    "SKILL_VIEW_SCHEMA",
    "SkillReadinessStatus",
    "check_skills_requirements",
    "load_env",
    "registry",
    "set_secret_capture_callback",
    "skill_matches_environment",
    "skill_matches_platform",
    "skill_view",
    "skills_list",
]

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = _skills.DESCRIPTION_LIMIT
HERMES_HOME = get_hermes_home()
SKILLS_DIR = HERMES_HOME / "skills"  # at import, as 0.19's; callers per request use the home
_SKILLS_DIR_AT_IMPORT = SKILLS_DIR
_EXCLUDED_SKILL_DIRS = EXCLUDED_SKILL_DIRS
_parse_frontmatter = parse_frontmatter


_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _parse_tags(tags_value: Any) -> list[str]:
    """Tags given as a YAML list, ``"[a, b]"`` or ``"a, b"``."""
    if not tags_value:
        return []
    if isinstance(tags_value, list):
        return [str(t).strip() for t in tags_value if t]
    text = str(tags_value).strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return [t.strip().strip("\"'") for t in text.split(",") if t.strip()]


def _sort_skills(skills: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(skills, key=lambda s: (s.get("category") or "", s["name"]))


def _skills_dir() -> Path:
    """The home's skills folder now, or ``SKILLS_DIR`` when a caller has pointed it
    elsewhere (0.19 honours the rebound constant the same way)."""
    configured = Path(SKILLS_DIR)
    if configured != _SKILLS_DIR_AT_IMPORT:
        return configured
    return get_hermes_home() / "skills"


def _roots() -> list[Path]:
    # Through the module, so a caller patching ``agent.skill_utils`` is heard, as on 0.19.
    return [_skills_dir(), *_skill_utils.get_external_skills_dirs()]


def _scan(*, every: bool = False) -> _skills.SkillScan:
    """The skills under the roots, those inside a virtualenv or cache folder left out
    (a package's bundled SKILL.md is not the operator's skill)."""
    roots = _roots()
    scan = _skills.scan_skills(roots, every=every)
    return _skills.SkillScan(
        [s for s in scan.skills if not _excluded(s.index, roots)], scan.problems
    )


def _excluded(index: Path, roots: list[Path]) -> bool:
    root = next((r for r in roots if index.is_relative_to(r)), None)
    parts = index.relative_to(root).parts if root is not None else index.parts
    return any(part in EXCLUDED_SKILL_DIRS for part in parts)


def _get_category_from_path(skill_path: Path) -> str | None:
    """The category of the SKILL.md at ``skill_path``: its first folder under a skills
    folder (``mlops/axolotl/SKILL.md`` is ``mlops``), None when it has none."""
    for root in _roots():
        if skill_path.is_relative_to(root):
            parts = skill_path.relative_to(root).parts
            if len(parts) >= 3:
                return parts[0]
    return None


def _find_all_skills(*, skip_disabled: bool = False) -> list[dict[str, Any]]:
    """0.19's listing entries (``name``, ``description``, ``category``) of the skills for
    this platform, disabled ones left out unless ``skip_disabled``."""
    disabled = set() if skip_disabled else get_disabled_skill_names()
    found = []
    for skill in _scan().skills:
        if skill.name in disabled or not _for_this_platform(skill):
            continue
        description = skill.description
        if len(description) > MAX_DESCRIPTION_LENGTH:
            description = description[: MAX_DESCRIPTION_LENGTH - 3] + "..."
        found.append({"name": skill.name, "description": description, "category": skill.category})
    return found


def _for_this_platform(skill: _skills.Skill) -> bool:
    try:
        front, _ = parse_frontmatter(skill.index.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
    return skill_matches_platform(front)


def _relative_path(skill: _skills.Skill) -> str:
    """The SKILL.md's path under the home's skills folder (``dev/tdd/SKILL.md``), as 0.19's."""
    home_skills = _skills_dir()
    if skill.index.is_relative_to(home_skills):
        return skill.index.relative_to(home_skills).as_posix()
    return skill.index.relative_to(skill.folder.parent).as_posix()


def skills_list(category: str | None = None, task_id: str | None = None) -> str:
    """The enabled skills as 0.19's JSON answer (the skills folder made when missing)."""
    folder = _skills_dir()
    if not folder.exists():
        folder.mkdir(parents=True, exist_ok=True)
        return json.dumps(
            {
                "success": True,
                "skills": [],
                "categories": [],
                "message": f"No skills found. Skills directory created at {folder}.",
            }
        )
    disabled = get_disabled_skill_names()
    found = [
        s.as_listing() for s in _scan().skills if s.name not in disabled and _for_this_platform(s)
    ]
    if category:
        found = [s for s in found if s.get("category") == category]
    found = _sort_skills(found)
    return json.dumps(
        {
            "success": True,
            "skills": found,
            "categories": sorted({s["category"] for s in found if s.get("category")}),
            "count": len(found),
        }
    )


def skill_view(name: str, file_path: str | None = None, task_id: str | None = None) -> str:
    """One skill (or one of its files) as 0.19's JSON answer; ``success: false`` with an
    ``error`` sentence when there is no such skill or file, when the name is ambiguous
    (0.19 refuses to guess) or when the skill is disabled."""
    refused = _lookup_error(name)
    if refused:
        return json.dumps({"success": False, "error": refused})
    matches = _matches(name)
    if len(matches) > 1:
        return json.dumps(
            {
                "success": False,
                "error": f"Ambiguous skill name '{name}': {len(matches)} skills match across "
                "your local skills dir and external_dirs. Refusing to guess — load one "
                "explicitly by its categorized path.",
                "matches": [str(m) for m in matches],
                "hint": "Pass the full relative path instead of the bare name (e.g., "
                "'category/skill-name'), or rename one of the colliding skills so each name "
                "is unique.",
            }
        )
    if not matches:
        return _not_found(name)
    index = matches[0]
    try:
        text = index.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return json.dumps({"success": False, "error": f"Failed to read skill '{name}': {exc}"})
    front, body = parse_frontmatter(text)
    folder = index.parent if index.name == _skills.INDEX else None
    skill_name = str(front.get("name") or (folder.name if folder else index.stem))
    if _is_skill_disabled(skill_name):
        return json.dumps(
            {
                "success": False,
                "error": f"Skill '{skill_name}' is disabled. Enable it with `hermes skills` "
                "or inspect the files directly on disk.",
            }
        )
    if file_path:
        return _view_file(name, folder or index.parent, file_path)
    return json.dumps(_view(skill_name, index, folder, text, front, body))


def _lookup_error(name: str) -> str | None:
    """Why ``name`` may not be looked up: it is joined onto the skills folders, so an
    absolute path or a ``..`` would reach outside them."""
    candidate = name.strip()
    if (
        PurePosixPath(candidate).is_absolute()
        or PureWindowsPath(candidate).is_absolute()
        or PureWindowsPath(candidate).drive
    ):
        return "Skill name must be a relative path within the skills directory."
    if ".." in Path(candidate).parts:
        return "Skill name cannot contain '..' path traversal components."
    return None


def _matches(name: str) -> list[Path]:
    """The SKILL.md files (or legacy flat ``<name>.md``) ``name`` may mean: a skill of
    that name or folder, ``category/name`` (a SKILL.md there even without front matter,
    as 0.19 reads one), or ``<name>.md`` at a skills folder's top; once each."""
    wanted = name.strip().strip("/")
    found: dict[Path, Path] = {}  # resolved -> as found
    for skill in _scan(every=True).skills:
        relative = _relative_path(skill).removesuffix("/" + _skills.INDEX)
        if wanted in (skill.name, skill.folder.name, relative):
            found.setdefault(skill.index.resolve(), skill.index)
    for root in _roots():
        direct = root / wanted / _skills.INDEX
        flat = root / f"{wanted}.md"
        for path in (direct, flat):
            if path.is_file() and not is_skill_support_path(path):
                found.setdefault(path.resolve(), path)
    return list(found.values())


def _not_found(name: str) -> str:
    """A skill's folder whose SKILL.md cannot be read says so; else there is none."""
    for root in _roots():
        for index in root.rglob(f"{name}/{_skills.INDEX}") if root.is_dir() else ():
            try:
                index.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                return json.dumps(
                    {"success": False, "error": f"Failed to read skill '{name}': {exc}"}
                )
    return json.dumps(
        {
            "success": False,
            "error": f"Skill '{name}' not found. Use skills_list to see the skills.",
            "available_skills": [s["name"] for s in _sort_skills(_find_all_skills())][:20],
            "hint": "Use skills_list to see all available skills",
        }
    )


def _view_file(name: str, folder: Path, file_path: str) -> str:
    """One file of the skill in ``folder``; never one outside it (0.19's words)."""
    hint = "Use a relative path within the skill directory"
    if ".." in Path(file_path).parts:
        return json.dumps(
            {"success": False, "error": "Path traversal ('..') is not allowed.", "hint": hint}
        )
    target = (folder / file_path).resolve()
    if not target.is_relative_to(folder.resolve()):
        return json.dumps(
            {
                "success": False,
                "error": f"Path escapes allowed directory: {file_path} is outside the skill.",
                "hint": hint,
            }
        )
    if not target.is_file():
        return json.dumps(
            {"success": False, "error": f"File '{file_path}' not found in skill '{name}'."}
        )
    return json.dumps(
        {
            "success": True,
            "name": name,
            "file": file_path,
            "content": target.read_text(encoding="utf-8", errors="replace"),
            "file_type": target.suffix,
        }
    )


def _view(
    name: str, index: Path, folder: Path | None, text: str, front: dict[str, Any], body: str
) -> dict[str, Any]:
    """``skill_view``'s answer for the skill at ``index`` (in ``folder``, or a flat file)."""
    files = _linked_files(folder) if folder else []
    linked: dict[str, list[str]] = {}
    for rel in files:
        parts = Path(rel).parts
        linked.setdefault(parts[0] if len(parts) > 1 else "other", []).append(rel)
    metadata = front.get("metadata")
    ours = (metadata.get("hermes") or {}) if isinstance(metadata, dict) else {}
    required = _get_required_environment_variables(front)
    env = load_env()
    missing = [
        v for v in required if not v.get("optional") and not _is_env_var_persisted(v["name"], env)
    ]
    still_missing, skipped = _capture(name, missing)
    if missing:
        env = load_env()
    unset = [
        v["name"]
        for v in required
        if not v.get("optional")
        and (v["name"] in still_missing or not _is_env_var_persisted(v["name"], env))
    ]
    description = front.get("description") or _first_line(body)
    result: dict[str, Any] = {
        "success": True,
        "name": name,
        "description": description,
        "tags": _parse_tags(ours.get("tags") or front.get("tags")),
        "related_skills": _parse_tags(ours.get("related_skills") or front.get("related_skills")),
        "content": text,
        "path": _index_path(index),
        "skill_dir": str(folder) if folder else None,
        "linked_files": linked or None,
        "usage_hint": "Load one of these files with skill_view(name, file_path)."
        if files
        else None,
        "required_environment_variables": required,
        "required_commands": [],
        "missing_required_environment_variables": unset,
        "missing_credential_files": [],
        "missing_required_commands": [],
        "setup_needed": bool(unset),
        "setup_skipped": skipped,
        "readiness_status": "setup_needed" if unset else "available",
    }
    setup_help = next((v["help"] for v in required if v.get("help")), None)
    if setup_help:
        result["setup_help"] = setup_help
    if unset:
        result["setup_note"] = (
            "This skill needs setup before use: set "
            + ", ".join(f"${n}" for n in unset)
            + " in the environment or the home's .env."
        )
    if front.get("compatibility"):
        result["compatibility"] = front["compatibility"]
    if isinstance(metadata, dict):
        result["metadata"] = metadata
    return result


def _linked_files(folder: Path) -> list[str]:
    skill = _skills.Skill("", "", None, folder)
    return _skills.skill_files(skill)


def _index_path(index: Path) -> str:
    """The SKILL.md's path under the skills folder it is in (``dev/tdd/SKILL.md``)."""
    root = next((r for r in _roots() if index.is_relative_to(r)), index.parent.parent)
    return index.relative_to(root).as_posix()


def _first_line(body: str) -> str:
    return next((ln.strip() for ln in body.splitlines() if ln.strip() and ln[0] != "#"), "")


# Set by a surface that can ask its user for a secret (0.19's terminal chat): called
# as ``callback(name, prompt, metadata)`` for each setting a loaded skill lacks.
_secret_capture_callback: Any = None


def set_secret_capture_callback(callback: Any) -> None:
    """Have ``skill_view`` ask ``callback`` for each setting a skill needs and lacks."""
    global _secret_capture_callback
    _secret_capture_callback = callback


def _capture(skill_name: str, missing: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """Ask the capture callback for each missing setting: the names still missing and
    whether the user skipped one."""
    if not missing or _secret_capture_callback is None:
        return [v["name"] for v in missing], False
    still_missing = []
    for variable in missing:
        metadata = {"skill_name": skill_name}
        metadata.update({k: variable[k] for k in ("help", "required_for") if variable.get(k)})
        try:
            answer = _secret_capture_callback(variable["name"], variable["prompt"], metadata)
        except Exception:  # a surface's failing prompt leaves the setting missing, as 0.19
            answer = None
        if not (isinstance(answer, dict) and answer.get("success") and not answer.get("skipped")):
            still_missing.append(variable["name"])
    return still_missing, bool(still_missing)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value else []


def _get_required_environment_variables(
    frontmatter: dict[str, Any], legacy_env_vars: list[str] | None = None
) -> list[dict[str, Any]]:
    """0.19's ``required_environment_variables`` of a skill: its own list, its setup's
    ``collect_secrets`` and its ``prerequisites.env_vars`` (or ``legacy_env_vars``), once
    each by name, names that are not variable names left out."""
    given = frontmatter.get("setup")
    setup: dict[str, Any] = given if isinstance(given, dict) else {}
    setup_help = setup.get("help") if isinstance(setup.get("help"), str) else None
    entries: list[dict[str, Any]] = [
        item if isinstance(item, dict) else {"name": item}
        for item in _as_list(frontmatter.get("required_environment_variables"))
        if isinstance(item, dict | str)
    ]
    entries += [
        {
            "name": item.get("env_var"),
            "prompt": item.get("prompt"),
            "help": item.get("provider_url") or item.get("url"),
        }
        for item in _as_list(setup.get("collect_secrets"))
        if isinstance(item, dict)
    ]
    if legacy_env_vars is None:
        prerequisites = frontmatter.get("prerequisites")
        legacy = prerequisites.get("env_vars") if isinstance(prerequisites, dict) else None
        legacy_env_vars = [str(v) for v in _as_list(legacy) if str(v).strip()]
    entries += [{"name": name} for name in legacy_env_vars]
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        name = str(entry.get("name") or entry.get("env_var") or "").strip()
        if not _VARIABLE_NAME.match(name) or name in found:
            continue
        variable: dict[str, Any] = {
            "name": name,
            "prompt": str(entry.get("prompt") or f"Enter value for {name}").strip(),
        }
        help_text = entry.get("help") or entry.get("provider_url") or entry.get("url") or setup_help
        if isinstance(help_text, str) and help_text.strip():
            variable["help"] = help_text.strip()
        required_for = entry.get("required_for")
        if isinstance(required_for, str) and required_for.strip():
            variable["required_for"] = required_for.strip()
        if entry.get("optional"):
            variable["optional"] = True
        found[name] = variable
    return list(found.values())


def _is_env_var_persisted(name: str, env_snapshot: dict[str, str] | None = None) -> bool:
    """Whether ``name`` has a value: the home's ``.env`` first (an empty line there is
    unset), then the environment."""
    env = load_env() if env_snapshot is None else env_snapshot
    return bool(env.get(name)) if name in env else bool(os.environ.get(name))


def _is_skill_disabled(name: str, platform: str | None = None) -> bool:
    """Whether ``skills.disabled`` (or the platform's list) turns the skill off."""
    return name in get_disabled_skill_names(platform or os.environ.get("HERMES_PLATFORM"))


class SkillReadinessStatus(StrEnum):
    """``skill_view``'s ``readiness_status``: ready, or a setting still to be given."""

    AVAILABLE = "available"
    SETUP_NEEDED = "setup_needed"
    UNSUPPORTED = "unsupported"


def load_env() -> dict[str, str]:
    """The ``KEY=value`` lines of the home's ``.env`` (the profile's secrets)."""
    return _config.dotenv_values(get_hermes_home())


def check_skills_requirements() -> bool:
    """The skills tools need nothing installed: always True."""
    return True


# 0.19's tool schemas of the two calls above, for callers that offer them to a model.
SKILLS_LIST_SCHEMA: dict[str, Any] = {
    "name": "skills_list",
    "description": "List the skills there are (name and description); load one with "
    "skill_view(name).",
    "parameters": {
        "type": "object",
        "properties": {
            "category": {"type": "string", "description": "Only the skills of this category."}
        },
        "required": [],
    },
}
SKILL_VIEW_SCHEMA: dict[str, Any] = {
    "name": "skill_view",
    "description": "Load a skill's instructions (SKILL.md) and the list of its files, or, "
    "with file_path, one of those files (references, templates, scripts).",
    "parameters": {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "description": "The skill's name, or category/name (see skills_list).",
            },
            "file_path": {
                "type": "string",
                "description": "Optional: a file of the skill, such as references/api.md; "
                "without it, SKILL.md.",
            },
        },
        "required": ["name"],
    },
}
