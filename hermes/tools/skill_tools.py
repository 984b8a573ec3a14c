"""The ``skill_view`` and ``skill_manage`` tools.

``skill_view`` loads a skill's SKILL.md and lists its files, or reads one of them; it
never leaves the skill's folder. ``skill_manage`` creates, patches, rewrites or deletes a
skill under the same approval rules as a file write (``protected.authorize_write``): a
skill in ``$HERMES_HOME/skills/`` changes every later prompt, so it is asked for on an
interactive surface and refused where nobody can approve. A background review may
change skills only when ``skills.review_may_edit`` is on; that setting is the user's
standing approval.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from hermes.tools._fs import atomic_write_text
from hermes.tools.protected import authorize_write
from hermes.tools.registry import Tool, ToolContext, ToolError
from hermes.tools.skills import (
    FILE_CHAR_LIMIT,
    INDEX,
    NAME_PATTERN,
    Skill,
    SkillFormatError,
    home_skills_dir,
    load_skills,
    skill_files,
    split_front_matter,
)


def _find(ctx: ToolContext, name: str) -> Skill:
    scan = load_skills(ctx.hermes_home, ctx.cwd, ctx.config)
    skill = scan.find(name)
    if skill is None:
        known = ", ".join(s.name for s in scan.skills) or "none"
        raise ToolError(f"no skill named '{name}'. Skills: {known}.")
    return skill


# skill_view ---------------------------------------------------------------------------

VIEW_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The skill's name, as listed in the prompt."},
        "file_path": {
            "type": "string",
            "description": "A file inside the skill (e.g. 'references/api.md'), as listed "
            "by a first skill_view call. Omit to load SKILL.md.",
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}


def skill_view(args: dict[str, Any], ctx: ToolContext) -> str:
    skill = _find(ctx, args["name"])
    if args.get("file_path"):
        return _read_inside(skill, args["file_path"])
    text = skill.index.read_text(encoding="utf-8", errors="replace")
    files = skill_files(skill)
    listing = "\n".join(f"- {name}" for name in files) if files else "(none)"
    return (
        f"Skill '{skill.name}' ({skill.folder}):\n\n{text.rstrip()}\n\n"
        f"Files in this skill (read one with skill_view(name, file_path)):\n{listing}"
    )


def _read_inside(skill: Skill, raw: str) -> str:
    folder = Path(os.path.realpath(skill.folder))
    path = Path(os.path.realpath(folder / raw))
    if folder not in path.parents:
        raise ToolError(f"'{raw}' is not inside the skill '{skill.name}'; name one of its files.")
    if not path.is_file():
        listed = ", ".join(skill_files(skill)) or "none"
        raise ToolError(f"the skill '{skill.name}' has no file '{raw}'. Its files: {listed}.")
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        raise ToolError(f"{raw} is a binary file ({len(data)} bytes); it can be run, not read.")
    text = data.decode("utf-8", errors="replace")
    if len(text) > FILE_CHAR_LIMIT:
        text = text[:FILE_CHAR_LIMIT] + f"\n... [cut at {FILE_CHAR_LIMIT} characters]"
    return text


# skill_manage -------------------------------------------------------------------------

MANAGE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["create", "patch", "edit", "delete"]},
        "name": {
            "type": "string",
            "description": "Skill name: lowercase letters, digits, '-', '_' or '.', up to 64.",
        },
        "content": {
            "type": "string",
            "description": "The whole SKILL.md (front matter with name and description, "
            "then instructions), for create and edit.",
        },
        "old_string": {"type": "string", "description": "For patch: the exact text to replace."},
        "new_string": {"type": "string", "description": "For patch: its replacement."},
        "category": {
            "type": "string",
            "description": "For create: an optional category folder (e.g. 'devops').",
        },
    },
    "required": ["action", "name"],
    "additionalProperties": False,
}


def skill_manage(args: dict[str, Any], ctx: ToolContext) -> str:
    action, name = args["action"], args["name"]
    if action == "create":
        return _create(ctx, name, _content(args), args.get("category"))
    skill = _find(ctx, name)
    if action == "delete":
        _authorize(skill.index, ctx)
        shutil.rmtree(skill.folder)
        return f"Deleted the skill '{name}' ({skill.folder})."
    text = skill.index.read_text(encoding="utf-8")
    new = _content(args) if action == "edit" else _patched(text, args)
    _check(new, name)
    _authorize(skill.index, ctx)
    atomic_write_text(skill.index, new)
    return f"Updated the skill '{name}' ({skill.index})."


def _create(ctx: ToolContext, name: str, content: str, category: str | None) -> str:
    if not NAME_PATTERN.match(name):
        raise ToolError(
            f"'{name}' is not a skill name: use lowercase letters, digits, '-', '_' or '.'."
        )
    if category is not None and not NAME_PATTERN.match(category):
        raise ToolError(f"'{category}' is not a category name: use the same letters as names.")
    if load_skills(ctx.hermes_home, ctx.cwd, ctx.config).find(name) is not None:
        raise ToolError(f"a skill named '{name}' exists; patch or edit it instead.")
    _check(content, name)
    folder = home_skills_dir(ctx.hermes_home) / (category or "") / name
    _authorize(folder / INDEX, ctx)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / INDEX, content)
    return (
        f"Created the skill '{name}' ({folder / INDEX}); it is listed from the next conversation."
    )


def _content(args: dict[str, Any]) -> str:
    content = args.get("content")
    if not content:
        raise ToolError(f"'{args['action']}' needs 'content': the whole SKILL.md.")
    return str(content)


def _patched(text: str, args: dict[str, Any]) -> str:
    old, new = args.get("old_string"), args.get("new_string")
    if not old or new is None:
        raise ToolError("'patch' needs 'old_string' (the exact text) and 'new_string'.")
    count = text.count(old)
    if count != 1:
        found = "is not in" if count == 0 else f"occurs {count} times in"
        raise ToolError(f"old_string {found} SKILL.md; quote one exact, unique passage.")
    return text.replace(old, new)


def _check(content: str, name: str) -> None:
    try:
        data, _ = split_front_matter(content)
    except SkillFormatError as exc:
        raise ToolError(f"that SKILL.md is malformed: {exc}.") from exc
    if data.get("name", name) != name:
        raise ToolError(f"the front matter's name '{data.get('name')}' is not '{name}'.")
    if not isinstance(data.get("description"), str) or not data["description"].strip():
        raise ToolError("the front matter needs a 'description' saying when to use the skill.")


def _authorize(path: Path, ctx: ToolContext) -> None:
    if ctx.surface == "review":
        if not ctx.setting("skills.review_may_edit"):
            raise ToolError("Refused: the background review may not change skills here.")
        return
    authorize_write(path, ctx)


VIEW_TOOL = Tool(
    name="skill_view",
    description=(
        "Load a skill's full instructions (SKILL.md) and the list of its files, or, with "
        "file_path, read one of those files. Skills are listed in the system prompt."
    ),
    parameters=VIEW_PARAMETERS,
    handler=skill_view,
    toolsets=("skills",),
)

MANAGE_TOOL = Tool(
    name="skill_manage",
    description=(
        "Create, patch, edit (rewrite) or delete a skill: reusable instructions for a kind "
        "of task. Create one after a non-trivial task succeeded or the user taught you a "
        "procedure; patch one when it was wrong or missed a step. SKILL.md starts with "
        "front matter '---\\nname: NAME\\ndescription: WHEN TO USE IT\\n---' and then the "
        "steps. Writes need the same approval as a write to hermes's home."
    ),
    parameters=MANAGE_PARAMETERS,
    handler=skill_manage,
    toolsets=("skills",),
)
