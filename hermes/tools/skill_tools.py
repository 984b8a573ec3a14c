"""The ``skill_view`` and ``skill_manage`` tools.

``skill_view`` loads a skill's SKILL.md and lists its files, or reads one of them; it
never leaves the skill's folder. ``skill_manage`` creates, patches, rewrites or deletes
the speaker's own skills, like memory: on a gateway or the API a user's skills live in
their own folder (``skills.user_skills_dir``) and change without approval, since they
reach no one else's prompt. The operator's skills (``$HERMES_HOME/skills/``,
``skills.external_dirs``) change every user's prompt, so only the operator changes
them: the terminal chat asks (``protected.authorize_write``), anywhere else refuses and
says how. A project skill is a workspace file, under the file-write rules. A background
review may change the speaker's own skills (on the terminal chat: the operator's)
unless ``skills.review_may_edit`` is off, and never anyone else's.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from hermes.tools._fs import atomic_write_text
from hermes.tools.guards.protected import authorize_write
from hermes.tools.registry import Tool, ToolContext, ToolError, object_parameters
from hermes.tools.skills import (
    FILE_CHAR_LIMIT,
    INDEX,
    NAME_PATTERN,
    OPERATOR,
    Skill,
    SkillFormatError,
    SkillScan,
    home_skills_dir,
    load_skills,
    skill_files,
    skill_text,
    split_front_matter,
    user_skills_dir,
)
from hermes.tools.user_files import RefusedRead


def _visible(ctx: ToolContext) -> SkillScan:
    """The skills the speaker's agent is shown."""
    return load_skills(ctx.hermes_home, ctx.cwd, ctx.config, source=ctx.source, user_id=ctx.user_id)


def _own_dir(ctx: ToolContext) -> Path:
    """Where the speaker's new skills go: their own folder, or on the terminal chat
    (whose user is the operator) ``$HERMES_HOME/skills``."""
    own = user_skills_dir(ctx.hermes_home, ctx.source, ctx.user_id)
    return own if own is not None else home_skills_dir(ctx.hermes_home)


def _find(ctx: ToolContext, name: str) -> Skill:
    scan = _visible(ctx)
    skill = scan.find(name)
    if skill is None:
        known = ", ".join(s.name for s in scan.skills) or "none"
        raise ToolError(f"no skill named '{name}'. Skills: {known}.")
    return skill


# skill_view ---------------------------------------------------------------------------

VIEW_PARAMETERS = object_parameters(
    {
        "name": {"type": "string", "description": "The skill's name, as listed in the prompt."},
        "file_path": {
            "type": "string",
            "description": "A file inside the skill (e.g. 'references/api.md'), as listed "
            "by a first skill_view call. Omit to load SKILL.md.",
        },
    },
    required=["name"],
)


def skill_view(args: dict[str, Any], ctx: ToolContext) -> str:
    skill = _find(ctx, args["name"])
    if args.get("file_path"):
        return _read_inside(skill, args["file_path"])
    text = _text(skill)
    files = skill_files(skill)
    listing = "\n".join(f"- {name}" for name in files) if files else "(none)"
    return (
        f"Skill '{skill.name}' ({skill.folder}):\n\n{text.rstrip()}\n\n"
        f"Files in this skill (read one with skill_view(name, file_path)):\n{listing}"
    )


def _text(skill: Skill, relative: str = INDEX, *, scrub: bool = True) -> str:
    """A file of ``skill``, a refusal (a planted link, a hidden path) said as the error."""
    try:
        return skill_text(skill, relative, scrub=scrub)
    except RefusedRead as exc:
        raise ToolError(str(exc)) from None


def _read_inside(skill: Skill, raw: str) -> str:
    if skill.files is not None:
        return _read_user_file(skill, raw)
    return _read_operator_file(skill, raw)


def _read_operator_file(skill: Skill, raw: str) -> str:
    """A file of the operator's skill, its links followed (the operator's own)."""
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
    return _cut(data.decode("utf-8", errors="replace"))


def _read_user_file(skill: Skill, raw: str) -> str:
    """A file of a user's or a project's skill, read beneath its root (no links)."""
    if raw not in skill_files(skill):
        listed = ", ".join(skill_files(skill)) or "none"
        raise ToolError(f"the skill '{skill.name}' has no file '{raw}'. Its files: {listed}.")
    text = _text(skill, raw)
    if "\0" in text[:8192]:
        raise ToolError(f"{raw} is a binary file; it can be run, not read.")
    return _cut(text)


def _cut(text: str) -> str:
    if len(text) > FILE_CHAR_LIMIT:
        text = text[:FILE_CHAR_LIMIT] + f"\n... [cut at {FILE_CHAR_LIMIT} characters]"
    return text


# skill_manage -------------------------------------------------------------------------

MANAGE_PARAMETERS = object_parameters(
    {
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
    required=["action", "name"],
)


def skill_manage(args: dict[str, Any], ctx: ToolContext) -> str:
    action, name = args["action"], args["name"]
    if action == "create":
        return _create(ctx, name, _content(args), args.get("category"))
    skill = _find(ctx, name)
    _check_owner(skill, ctx)  # before anything else is said about its text
    if action == "delete":
        _authorize(skill.index, ctx)
        shutil.rmtree(skill.folder)
        return f"Deleted the skill '{name}' ({skill.folder})."
    text = _text(skill, scrub=False)  # written back: a secret in it stays as it was
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
    existing = _visible(ctx).find(name)
    if existing is not None:
        if existing.owner == OPERATOR and _is_user(ctx):
            raise ToolError(f"the operator has a skill named '{name}'; choose another name.")
        raise ToolError(f"a skill named '{name}' exists; patch or edit it instead.")
    _check(content, name)
    folder = _own_dir(ctx) / (category or "") / name
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


def _inside(path: Path, root: Path) -> bool:
    real, top = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    return real == top or top in real.parents


def _is_user(ctx: ToolContext) -> bool:
    """A gateway or API user speaks (not the terminal chat's operator)."""
    return user_skills_dir(ctx.hermes_home, ctx.source, ctx.user_id) is not None


def _check_owner(skill: Skill, ctx: ToolContext) -> None:
    """Refuse a change the speaker may never make, whoever approves: the review's
    outside the user's own skills, a gateway or API user's to the operator's (which
    change every user's prompt)."""
    if ctx.surface == "review":
        if not _inside(skill.folder, _own_dir(ctx)):
            raise ToolError("Refused: the background review changes only the user's own skills.")
    elif skill.owner == OPERATOR and _is_user(ctx):
        raise ToolError(
            f"Refused: {skill.name} is one of the operator's skills, which only the operator "
            "changes (in `hermes chat` or by editing its SKILL.md); create a skill of your "
            "own under another name instead."
        )


def _authorize(path: Path, ctx: ToolContext) -> None:
    """Allow a write to the speaker's own skills; anything else is a file write."""
    if ctx.surface == "review":
        if not ctx.setting("skills.review_may_edit"):
            raise ToolError("Refused: the background review may not change skills here.")
        return  # the user's standing approval, for their own skills (_check_owner)
    own = user_skills_dir(ctx.hermes_home, ctx.source, ctx.user_id)
    if own is not None and _inside(path, own):
        return  # the user's own folder: their skills reach only their own prompt
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
        "steps. Your skills are your own; the operator's skills need the operator."
    ),
    parameters=MANAGE_PARAMETERS,
    handler=skill_manage,
    toolsets=("skills",),
)
