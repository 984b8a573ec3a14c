"""Hermes Agent 0.19's ``tools.skills_tool``: the skills listing and ``skill_view`` as JSON.

Over hermes.tools.skills: the same folders, the first skill of a name wins, and
``skills.disabled`` is left out of ``skills_list``. ``skill_view`` answers 0.19's JSON
shape (``success``, ``name``, ``description``, ``content``, ``linked_files``...).
"""

from __future__ import annotations

import json
import os
import re
from enum import StrEnum
from pathlib import Path
from typing import Any

from agent.skill_utils import (
    EXCLUDED_SKILL_DIRS,
    get_disabled_skill_names,
    get_external_skills_dirs,
    parse_frontmatter,
    skill_matches_environment,
    skill_matches_platform,
)
from hermes_constants import get_hermes_home

from hermes import config as _config
from hermes.tools import skills as _skills

__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "SKILLS_DIR",
    "SKILLS_LIST_SCHEMA",
    "SKILL_VIEW_SCHEMA",
    "SkillReadinessStatus",
    "check_skills_requirements",
    "load_env",
    "skill_matches_environment",
    "skill_matches_platform",
    "skill_view",
    "skills_list",
]

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = _skills.DESCRIPTION_LIMIT
HERMES_HOME = get_hermes_home()
SKILLS_DIR = HERMES_HOME / "skills"  # at import, as 0.19's; callers per request use the home
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


def _scan() -> _skills.SkillScan:
    home = get_hermes_home()
    return _skills.scan_skills([home / "skills", *get_external_skills_dirs()])


def _for_this_platform(skill: _skills.Skill) -> bool:
    try:
        front, _ = parse_frontmatter(skill.index.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
    return skill_matches_platform(front)


def _relative_path(skill: _skills.Skill) -> str:
    """The SKILL.md's path under the home's skills folder (``dev/tdd/SKILL.md``), as 0.19's."""
    home_skills = get_hermes_home() / "skills"
    if skill.index.is_relative_to(home_skills):
        return skill.index.relative_to(home_skills).as_posix()
    return skill.index.relative_to(skill.folder.parent).as_posix()


def skills_list(category: str | None = None, task_id: str | None = None) -> str:
    """The enabled skills as 0.19's JSON answer."""
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
    ``error`` sentence when there is no such skill or file."""
    scan = _scan()
    skill = _find(scan, name)
    if skill is None:
        names = sorted(s.name for s in scan.skills)
        return json.dumps(
            {
                "success": False,
                "error": f"Skill '{name}' not found. Use skills_list to see the skills.",
                "available_skills": names[:20],
                "hint": "Use skills_list to see all available skills",
            }
        )
    if file_path:
        target = (skill.folder / file_path).resolve()
        if not target.is_relative_to(skill.folder.resolve()) or not target.is_file():
            return json.dumps(
                {"success": False, "error": f"File '{file_path}' not found in skill '{name}'."}
            )
        content = target.read_text(encoding="utf-8", errors="replace")
        return json.dumps(
            {
                "success": True,
                "name": name,
                "file": file_path,
                "content": content,
                "file_type": target.suffix,
            }
        )
    text = skill.index.read_text(encoding="utf-8")
    front, _ = parse_frontmatter(text)
    files = _skills.skill_files(skill)
    linked: dict[str, list[str]] = {}
    for rel in files:
        linked.setdefault(Path(rel).parts[0] if len(Path(rel).parts) > 1 else "other", []).append(
            rel
        )
    metadata = front.get("metadata")
    ours = (metadata.get("hermes") or {}) if isinstance(metadata, dict) else {}
    required = _required_variables(front)
    missing = [v["name"] for v in required if not v.get("optional") and not _is_set(v["name"])]
    result: dict[str, Any] = {
        "success": True,
        "name": skill.name,
        "description": skill.description,
        "tags": _parse_tags(ours.get("tags") or front.get("tags")),
        "related_skills": _parse_tags(ours.get("related_skills") or front.get("related_skills")),
        "content": text,
        "path": _relative_path(skill),
        "skill_dir": str(skill.folder),
        "linked_files": linked or None,
        "usage_hint": "Load one of these files with skill_view(name, file_path)."
        if files
        else None,
        "required_environment_variables": required,
        "required_commands": [],
        "missing_required_environment_variables": missing,
        "missing_credential_files": [],
        "missing_required_commands": [],
        "setup_needed": bool(missing),
        "setup_skipped": False,
        "readiness_status": "setup_needed" if missing else "available",
    }
    setup_help = next((v["help"] for v in required if v.get("help")), None)
    if setup_help:
        result["setup_help"] = setup_help
    if missing:
        result["setup_note"] = (
            "This skill needs setup before use: set "
            + ", ".join(f"${n}" for n in missing)
            + " in the environment or the home's .env."
        )
    if front.get("compatibility"):
        result["compatibility"] = front["compatibility"]
    if isinstance(metadata, dict):
        result["metadata"] = metadata
    return json.dumps(result)


def _find(scan: _skills.SkillScan, name: str) -> _skills.Skill | None:
    """The skill ``name`` names, or ``category/name`` (its folder under a skills folder)."""
    found = scan.find(name)
    if found is not None or "/" not in name:
        return found
    wanted = name.strip("/")
    return next(
        (s for s in scan.skills if _relative_path(s).removesuffix("/SKILL.md") == wanted), None
    )


def _required_variables(front: dict[str, Any]) -> list[dict[str, Any]]:
    """0.19's ``required_environment_variables`` of a skill: its own list, its setup's
    ``collect_secrets`` and its ``prerequisites.env_vars``, once each by name."""
    given = front.get("setup")
    setup: dict[str, Any] = given if isinstance(given, dict) else {}
    setup_help = setup.get("help") if isinstance(setup.get("help"), str) else None
    prerequisites = front.get("prerequisites")
    raw: list[Any] = []
    for group in (
        front.get("required_environment_variables"),
        setup.get("collect_secrets"),
        prerequisites.get("env_vars") if isinstance(prerequisites, dict) else None,
    ):
        raw.extend(group if isinstance(group, list) else [group] if group else [])
    found: dict[str, dict[str, Any]] = {}
    for item in raw:
        entry = item if isinstance(item, dict) else {"name": item}
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
        if entry.get("optional"):
            variable["optional"] = True
        found[name] = variable
    return list(found.values())


def _is_set(name: str) -> bool:
    return bool(os.environ.get(name) or _config.dotenv_values(get_hermes_home()).get(name))


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
