"""Hermes Agent 0.19's ``tools.skills_tool``: the skills listing and ``skill_view`` as JSON.

Over hermes.tools.skills: the same folders, the first skill of a name wins, and
``skills.disabled`` is left out of ``skills_list``. ``skill_view`` answers 0.19's JSON
shape (``success``, ``name``, ``description``, ``content``, ``linked_files``...).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.skill_utils import (
    EXCLUDED_SKILL_DIRS,
    get_disabled_skill_names,
    get_external_skills_dirs,
    parse_frontmatter,
    skill_matches_platform,
)
from hermes_constants import get_hermes_home

from hermes.tools import skills as _skills

__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "SKILLS_DIR",
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
    skill = _scan().find(name)
    if skill is None:
        return json.dumps(
            {
                "success": False,
                "error": f"Skill '{name}' not found. Use skills_list to see the skills.",
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
    return json.dumps(
        {
            "success": True,
            "name": skill.name,
            "description": skill.description,
            "tags": _parse_tags(front.get("tags")),
            "related_skills": _parse_tags(front.get("related_skills")),
            "content": text,
            "path": _relative_path(skill),
            "skill_dir": str(skill.folder),
            "linked_files": linked or None,
            "usage_hint": "Load one of these files with skill_view(name, file_path)."
            if files
            else None,
            "required_environment_variables": [],
            "setup_needed": False,
        }
    )
