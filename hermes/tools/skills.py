"""Skills: folders holding a ``SKILL.md`` (YAML front matter ``name`` and ``description``,
then instructions) and any scripts or references beside it — the format Hermes Agent,
Claude Code and Codex share.

Each skill has an owner, and the operator's come first, so theirs win a name clash: the
operator's ``$HERMES_HOME/skills/`` (category subfolders included, as Hermes Agent lays
them out) and ``skills.external_dirs``, then the speaker's own folder (a gateway or API
user's, next to their memory: ``$HERMES_HOME/memories/users/<platform>/u-<id>/skills/``,
where ``skill_manage`` writes for them), then the project's ``.hermes/skills/`` in the
agent's workspace. A user's folder is read only by that user's agents, so a skill one
user writes never reaches another's prompt, and neither a user nor a planted project
skill can take over the name of a skill the operator wrote. Disclosure is progressive: the system prompt lists names and
descriptions only (sorted, nothing that changes between turns or processes, so the
provider's prompt cache holds), ``skill_view`` loads a skill's text and lists its files,
and ``skill_view(name, file_path)`` reads one of them. A malformed SKILL.md is skipped and
reported in one sentence.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import yaml

from hermes.redaction import redact
from hermes.tools import workspaces
from hermes.tools.user_files import UserFiles, workspace_files

if TYPE_CHECKING:
    from hermes.config import Config

log = logging.getLogger(__name__)

INDEX = "SKILL.md"
FOLDER = "skills"
PROJECT_FOLDER = Path(".hermes") / "skills"
DESCRIPTION_LIMIT = 1024  # characters in the prompt listing, as Hermes Agent cuts them
FILE_CHAR_LIMIT = 100_000
SKIPPED_DIRS = frozenset({".git", ".github", ".hub", "node_modules", "__pycache__"})
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class SkillFormatError(ValueError):
    """A SKILL.md that cannot be read as a skill; the message is one sentence."""


OPERATOR = "operator"
PROJECT = "project"


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    category: str | None
    folder: Path
    owner: str = OPERATOR  # "operator", "project" or "user <platform>/<id>"
    # A user's or a project's skill is read beneath its root, links refused
    # (tools.user_files); None: the operator's, whose linked-in folders are followed.
    files: UserFiles | None = field(default=None, compare=False, repr=False)

    @property
    def index(self) -> Path:
        return self.folder / INDEX

    def as_listing(self) -> dict[str, Any]:
        """Hermes Agent's listing shape (``/v1/skills``, ``hermes skills list``), and
        whose skill it is."""
        return {
            "name": self.name,
            "description": self.description,
            "category": self.category,
            "owner": self.owner,
        }


@dataclass(frozen=True)
class SkillRoot:
    """A folder of skills and whose they are."""

    path: Path
    owner: str = OPERATOR
    files: UserFiles | None = None  # as in Skill: set for a user's or a project's folder


@dataclass(frozen=True)
class SkillScan:
    skills: list[Skill]
    problems: list[str]

    def find(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)


def home_skills_dir(hermes_home: Path) -> Path:
    return Path(hermes_home) / FOLDER


def user_skills_dir(hermes_home: Path, source: str, user_id: str | None) -> Path | None:
    """The folder of the skills a gateway or API user keeps (beside their memory), or
    None for the operator's surfaces: the terminal chat and scheduled jobs, whose skills
    are the operator's (a job's writes there need the approval nobody is there to give).
    Keyed like memory, by platform and user id, whatever ``memory.shared`` says: sharing
    notes is not sharing instructions."""
    if not workspaces.per_user(source):
        return None
    from hermes.tools.memory import memory_home

    return memory_home(hermes_home, source, user_id, shared=False) / FOLDER


def user_owner(source: str, user_id: str | None) -> str:
    return f"user {source}/{user_id or 'anonymous'}"


def skill_roots(
    hermes_home: Path,
    cwd: Path | None,
    config: Config | None = None,
    *,
    source: str = "cli",
    user_id: str | None = None,
) -> list[SkillRoot]:
    """Where the skills of ``source``/``user_id``'s agent are looked for: the operator's
    first (they win a name clash), then the user's own, then the project's."""
    roots = [SkillRoot(home_skills_dir(hermes_home))]
    roots += [SkillRoot(Path(str(extra)).expanduser()) for extra in _external_dirs(config)]
    own = user_skills_dir(hermes_home, source, user_id)
    if own is not None:
        roots.append(SkillRoot(own, user_owner(source, user_id), UserFiles(own)))
    if cwd is not None and not workspaces.is_job_folder(config, hermes_home, Path(cwd)):
        roots.append(project_root(hermes_home, Path(cwd), config, source, user_id))
    return roots


def project_root(
    hermes_home: Path, cwd: Path, config: Config | None, source: str, user_id: str | None
) -> SkillRoot:
    """The workspace's ``.hermes/skills/``, read as its user may have hermes read it."""
    files = workspace_files(hermes_home, cwd, config, source, user_id)
    return SkillRoot(cwd / PROJECT_FOLDER, PROJECT, files)


def all_skill_roots(
    hermes_home: Path, cwd: Path | None, config: Config | None = None
) -> list[SkillRoot]:
    """Every folder of skills on this home, for the operator's listing: the operator's,
    each gateway or API user's (``memories/users/<platform>/u-<id>/skills``), the
    project's."""
    roots = skill_roots(hermes_home, None, config)
    users = Path(hermes_home) / "memories" / "users"
    for folder in sorted(users.glob(f"*/u-*/{FOLDER}")):  # hermes's home, not a workspace
        platform, user = unquote(folder.parent.parent.name), unquote(folder.parent.name[2:])
        roots.append(SkillRoot(folder, user_owner(platform, user), UserFiles(folder)))
    if cwd is not None:
        roots.append(project_root(hermes_home, Path(cwd), config, "cli", None))
    return roots


def _external_dirs(config: Config | None) -> list[Any]:
    return list(_setting(config, "skills.external_dirs") or [])


def _setting(config: Config | None, key: str) -> Any:
    if config is None:
        return None
    try:
        return config.get(key)
    except KeyError:
        return None


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter as a mapping and the body after it; raises SkillFormatError."""
    if not text.startswith("---"):
        raise SkillFormatError("it does not start with YAML front matter between '---' lines")
    end = re.search(r"^---\s*$", text[3:], flags=re.MULTILINE)
    if end is None:
        raise SkillFormatError("its front matter has no closing '---' line")
    try:
        data = yaml.safe_load(text[3 : 3 + end.start()])
    except yaml.YAMLError as exc:
        # The context mark is where the bad construct began (the line missing its ':'),
        # the problem mark where the parser gave up (often the next line). The text
        # parsed starts on the file's first line, after its '---'.
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None)
        detail = f": {problem}" if problem else ""
        where = f" (line {mark.line + 1}{detail})" if mark is not None else ""
        raise SkillFormatError(f"its front matter is not valid YAML{where}") from exc
    if not isinstance(data, dict):
        raise SkillFormatError("its front matter is not a mapping of keys to values")
    return data, text[3 + end.end() :].lstrip("\n")


def read_skill(
    index: Path, root: Path, owner: str = OPERATOR, files: UserFiles | None = None
) -> Skill:
    """The skill ``index`` (a SKILL.md under ``root``, read beneath ``files`` when given)
    describes; raises SkillFormatError."""
    try:
        text = _read(index, files)
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillFormatError(f"it cannot be read ({exc.__class__.__name__})") from exc
    data, body = split_front_matter(text)
    name = data.get("name", index.parent.name)
    if not isinstance(name, str) or not name.strip():
        raise SkillFormatError("its 'name' is not a non-empty string")
    description = data.get("description") or _first_line(body)
    if not isinstance(description, str) or not description.strip():
        raise SkillFormatError("it has no 'description' in its front matter")
    parts = index.parent.relative_to(root).parts
    category = parts[0] if len(parts) > 1 else None
    return Skill(name.strip(), " ".join(description.split()), category, index.parent, owner, files)


def skill_text(skill: Skill, relative: str = INDEX, *, scrub: bool = True) -> str:
    """The text of one of ``skill``'s files (SKILL.md by default), hermes's secrets
    scrubbed unless not ``scrub`` (to change and write back): a user's or a project's
    read beneath its root, links refused (RefusedRead)."""
    return _read(skill.folder / relative, skill.files, scrub=scrub)


def _read(path: Path, files: UserFiles | None, *, scrub: bool = True) -> str:
    if files is not None:
        return files.text(PurePosixPath(path.relative_to(files.root)), scrub=scrub)
    text = _operator_file(path)
    return redact(text) if scrub else text


def _operator_file(path: Path) -> str:
    """A file of the operator's own skills, links followed: the operator put them there."""
    return path.read_text(encoding="utf-8", errors="replace")


def _first_line(body: str) -> str:
    return next(
        (ln.strip() for ln in body.splitlines() if ln.strip() and not ln.startswith("#")), ""
    )


def scan_skills(roots: Iterable[Path | SkillRoot], *, every: bool = False) -> SkillScan:
    """Every readable skill under ``roots`` (first of a name wins, unless ``every``),
    sorted by name, and one sentence per malformed SKILL.md skipped."""
    found: list[Skill] = []
    names: set[str] = set()
    problems: list[str] = []
    for given in roots:
        root = given if isinstance(given, SkillRoot) else SkillRoot(Path(given))
        for index in _indexes(root):
            try:
                skill = read_skill(index, root.path, root.owner, root.files)
            except SkillFormatError as exc:
                problems.append(f"Skipped the skill at {index}: {exc}; fix it or remove it.")
                continue
            if every or skill.name not in names:
                found.append(skill)
                names.add(skill.name)
    return SkillScan(sorted(found, key=lambda s: s.name), problems)


def _indexes(root: SkillRoot) -> list[Path]:
    if root.files is not None:
        return _user_indexes(root.files, root.path)
    return _operator_indexes(root.path)


def _user_indexes(files: UserFiles, folder: Path) -> list[Path]:
    found = []
    for here, dirs, names in files.walk_beneath(PurePosixPath(folder.relative_to(files.root))):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        if INDEX in names:
            found.append(files.path(here / INDEX))
            dirs[:] = []
    return found


def _operator_indexes(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    found = []
    seen: set[str] = set()  # linked-in skill folders are followed, a link loop is not
    for folder, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        if INDEX in files:
            found.append(Path(folder) / INDEX)
            dirs[:] = []  # a skill's own folders are its files, not more skills
    return found


_reported: set[str] = set()  # the malformed SKILL.md sentences this process logged


# skill_roots' parameters, repeated: the skills shown are those of that agent's roots.
def load_skills(
    hermes_home: Path,
    cwd: Path | None,
    config: Config | None = None,
    *,
    source: str = "cli",
    user_id: str | None = None,
) -> SkillScan:
    """The skills the agent of ``source``/``user_id`` is shown (``skills.disabled`` left
    out); each malformed SKILL.md is logged in one sentence."""
    scan = scan_skills(skill_roots(hermes_home, cwd, config, source=source, user_id=user_id))
    for problem in scan.problems:
        if problem not in _reported:  # once per process, not at every turn or cron tick
            _reported.add(problem)
            log.warning("%s", problem)
    disabled = set(_setting(config, "skills.disabled") or ())
    if not disabled:
        return scan
    return SkillScan([s for s in scan.skills if s.name not in disabled], scan.problems)


# How a prompt carries a skill it invokes, in Hermes Agent 0.19's words (its scheduler's
# and its webhooks'): the note, the skill's SKILL.md, then the instruction given with it.
INVOKED = (
    '[IMPORTANT: The user has invoked the "{name}" skill, indicating they want you to follow '
    "its instructions. The full skill content is loaded below.]"
)
INSTRUCTION = (
    "The user has provided the following instruction alongside the skill invocation: {prompt}"
)


def invocation(name: str, skill: Skill) -> list[str]:
    """The lines that load ``skill`` (invoked as ``name``) into a prompt."""
    return [INVOKED.format(name=name), "", skill_text(skill).strip()]


def prompt_block(skills: list[Skill]) -> str:
    """The system prompt's skills section: names and descriptions only, byte-stable."""
    if not skills:
        return ""
    lines = [
        "## Skills",
        "Skills hold instructions for particular tasks. When one matches the task, load it "
        "with skill_view(name) first and follow it; its files load with "
        "skill_view(name, file_path).",
    ]
    for skill in skills:
        description = skill.description
        if len(description) > DESCRIPTION_LIMIT:
            description = description[: DESCRIPTION_LIMIT - 3] + "..."
        lines.append(f"- {skill.name}: {description}")
    return "\n".join(lines)


def skill_files(skill: Skill) -> list[str]:
    """The skill's files other than SKILL.md, relative to its folder, sorted (a user's
    or a project's links left out)."""
    if skill.files is not None:
        return _user_skill_files(skill, skill.files)
    return _operator_skill_files(skill)


def _operator_skill_files(skill: Skill) -> list[str]:
    names = []
    for folder, dirs, files in os.walk(skill.folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in files:
            path = Path(folder) / name
            if path != skill.index:
                names.append(path.relative_to(skill.folder).as_posix())
    return sorted(names)


def _user_skill_files(skill: Skill, files: UserFiles) -> list[str]:
    top = PurePosixPath(skill.folder.relative_to(files.root))
    names = []
    for here, dirs, found in files.walk_beneath(top):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        names += [(here / name).relative_to(top).as_posix() for name in found]
    return sorted(name for name in names if name != INDEX)


class SkillInstallError(ValueError):
    """A skill folder that cannot be installed; the message is one sentence."""


def install_skill(source: Path, skills_dir: Path) -> tuple[Skill, Path]:
    """Copy the skill folder ``source`` (holding a SKILL.md) into ``skills_dir``; the
    skill and where it now lies. Raises SkillInstallError saying why not."""
    import shutil

    if not source.is_dir():
        raise SkillInstallError(f"{source} is not a folder; give the folder holding SKILL.md.")
    try:
        skill = read_skill(source / INDEX, source.parent)
    except (SkillFormatError, FileNotFoundError) as exc:
        reason = exc if isinstance(exc, SkillFormatError) else "it has no SKILL.md"
        raise SkillInstallError(f"{source} is not a skill: {reason}.") from exc
    if Path(skill.name).name != skill.name or skill.name.startswith("."):
        raise SkillInstallError(
            f"{source} is not a skill: its name '{skill.name}' cannot be a folder name."
        )
    leaving = _link_out_of(source)
    if leaving is not None:
        raise SkillInstallError(
            f"{source} is not installed: {leaving.relative_to(source)} links to "
            f"{os.readlink(leaving)}, outside the skill's folder, and once copied that link "
            "would name another file; put the file itself in the folder instead."
        )
    target = skills_dir / skill.name
    if target.exists():
        raise SkillInstallError(
            f"A skill named '{skill.name}' is installed at {target}; remove it first."
        )
    skills_dir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target, symlinks=True)
    return skill, target


def _link_out_of(folder: Path) -> Path | None:
    """The first link in ``folder`` whose target, as written, lies outside it (absolute,
    or climbing out with ``..``). Links are copied as links, so a relative one would
    point somewhere else from the skills folder (``../../.env`` is the home's .env there)."""
    for path in sorted(folder.rglob("*")):
        if not path.is_symlink():
            continue
        written = os.readlink(path)
        inside = os.path.normpath(path.parent.relative_to(folder) / written)
        if os.path.isabs(written) or inside == ".." or inside.startswith("../"):
            return path
    return None
