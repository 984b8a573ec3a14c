"""Hermes Agent 0.19's ``hermes_cli.profiles``: named homes, over hermes.profiles.

The names and shapes are 0.19's (``ProfileInfo``, ``list_profiles``, ``create_profile``,
the sticky ``active_profile``); errors are 0.19's kinds (``ValueError`` for a bad name,
``FileNotFoundError`` for a missing profile, ``FileExistsError`` for a taken one) with
hermes's sentences. 0.19's wrapper aliases and profile archives are here as 0.19 makes
them; there are no bundled skills to seed, a clone copies the settings (or with
``clone_all`` the whole home but its history) as 0.19's does, and ``delete_profile``/``rename_profile`` refuse a profile whose gateway is running
(0.19 stops it) rather than stop another process.
"""

from __future__ import annotations

import re
import shlex
import shutil
import stat
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, TypeVar

from hermes import profiles as _profiles
from hermes.gateway.state_file import read_status
from hermes_cli._soul import DEFAULT_SOUL_MD

T = TypeVar("T")

_PROFILE_ID_RE = re.compile(_profiles.NAME.pattern)

__all__ = [
    "NO_BUNDLED_SKILLS_MARKER",
    "ProfileInfo",
    "backfill_profile_envs",
    "check_alias_collision",
    "create_wrapper_script",
    "export_profile",
    "has_bundled_skills_opt_out",
    "import_profile",
    "profiles_to_serve",
    "read_profile_meta",
    "write_profile_meta",
    "remove_wrapper_script",
    "validate_alias_name",
    "create_profile",
    "delete_profile",
    "get_active_profile",
    "get_active_profile_name",
    "get_profile_dir",
    "list_profiles",
    "normalize_profile_name",
    "profile_exists",
    "rename_profile",
    "resolve_profile_env",
    "seed_profile_skills",
    "set_active_profile",
    "validate_profile_name",
]


@dataclass
class ProfileInfo:
    """0.19's summary of a profile."""

    name: str
    path: Path
    is_default: bool
    gateway_running: bool
    model: str | None = None
    provider: str | None = None
    has_env: bool = False
    skill_count: int = 0
    alias_path: Path | None = None
    alias_name: str | None = None
    distribution_name: str | None = None
    distribution_version: str | None = None
    distribution_source: str | None = None
    description: str = ""
    description_auto: bool = False


@contextmanager
def _as_019_errors(name: str) -> Iterator[None]:
    """hermes's ProfileError as the exception 0.19's callers catch."""
    try:
        yield
    except _profiles.ProfileError as exc:
        text = str(exc)
        if "already exists" in text:
            raise FileExistsError(text) from exc
        if "There is no profile" in text:
            raise FileNotFoundError(text) from exc
        raise ValueError(text) from exc


def _call(name: str, fn: Callable[[], T]) -> T:
    with _as_019_errors(name):
        return fn()


def _get_default_hermes_home() -> Path:
    return _profiles.root()


def _get_profiles_root() -> Path:
    return _profiles.root() / "profiles"


def _get_active_profile_path() -> Path:
    return _profiles.root() / _profiles.ACTIVE_FILE


def normalize_profile_name(name: str) -> str:
    return _call(name, lambda: _profiles.normalize(name))


def validate_profile_name(name: str) -> None:
    """ValueError unless ``name`` is a profile name as stored, lower case (callers
    normalize what users type first, as in 0.19)."""
    if name == "default":
        return
    if not _PROFILE_ID_RE.match(name):
        raise ValueError(
            f"{name!r} is not a profile name: use lower-case letters, digits, '-' and '_' "
            "(up to 64, starting with a letter or digit)."
        )
    _call(name, lambda: _profiles.check_name(name))


def _refuse_while_running(name: str, doing: str) -> None:
    path = get_profile_dir(normalize_profile_name(name))
    if path.is_dir() and _check_gateway_running(path):
        raise ValueError(
            f"A gateway is running on the profile {name!r}: stop it "
            f"(`hermes -p {name} gateway stop`) before it is {doing}."
        )


def delete_profile(name: str, yes: bool = False) -> Path:
    """Remove a named profile's folder; the path removed. Its gateway must be stopped."""
    _refuse_while_running(name, "deleted")
    return _call(name, lambda: _profiles.delete(name))


def rename_profile(old_name: str, new_name: str) -> Path:
    """Rename a named profile; its new folder. Its gateway must be stopped."""
    _refuse_while_running(old_name, "renamed")
    return _call(old_name, lambda: _profiles.rename(old_name, new_name))


def get_profile_dir(name: str) -> Path:
    return _call(name, lambda: _profiles.profile_dir(name))


def profile_exists(name: str) -> bool:
    return _call(name, lambda: _profiles.exists(name))


def resolve_profile_env(profile_name: str) -> str:
    return str(_call(profile_name, lambda: _profiles.home_of(profile_name)))


def get_active_profile() -> str:
    return _profiles.active()


def set_active_profile(name: str) -> None:
    _call(name, lambda: _profiles.set_active(name))


def get_active_profile_name() -> str:
    from hermes_constants import get_hermes_home

    return _profiles.current_name({"HERMES_HOME": str(get_hermes_home())})


def _read_config_model(profile_dir: Path) -> tuple[str | None, str | None]:
    """(model, provider) of a profile's config.yaml, as 0.19 reads them."""
    import yaml

    try:
        data = yaml.safe_load((profile_dir / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None, None
    model = data.get("model") if isinstance(data, dict) else None
    if isinstance(model, str):
        return model, None
    if isinstance(model, dict):
        return model.get("default") or model.get("model"), model.get("provider")
    return None, None


def _check_gateway_running(profile_dir: Path) -> bool:
    return read_status(profile_dir).running


def _count_skills(profile_dir: Path) -> int:
    skills = profile_dir / "skills"
    return sum(1 for _ in skills.rglob("SKILL.md")) if skills.is_dir() else 0


def _info(profile: _profiles.Profile, aliases: dict[str, str]) -> ProfileInfo:
    model, provider = _read_config_model(profile.path)
    alias = aliases.get(profile.name)
    alias_file = f"{alias}.bat" if sys.platform == "win32" else alias
    return ProfileInfo(
        name=profile.name,
        path=profile.path,
        is_default=profile.is_default,
        gateway_running=_check_gateway_running(profile.path),
        model=model,
        provider=provider,
        has_env=(profile.path / ".env").exists(),
        skill_count=_count_skills(profile.path),
        alias_path=_get_wrapper_dir() / alias_file if alias_file else None,
        alias_name=alias,
        **read_profile_meta(profile.path),
    )


# A profile's description, as 0.19 keeps it: ``profile.yaml`` in its folder, apart from
# config.yaml (what the profile is, not how it runs). hermes itself does not read it.
_META_FILE = "profile.yaml"


def read_profile_meta(profile_dir: Path) -> dict[str, Any]:
    """``{"description", "description_auto"}`` of the profile at ``profile_dir``; empty
    when it has none or the file cannot be read (a listing never fails on it)."""
    import yaml

    try:
        data = yaml.safe_load((Path(profile_dir) / _META_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        data = None
    data = data if isinstance(data, dict) else {}
    return {
        "description": str(data.get("description") or "").strip(),
        "description_auto": bool(data.get("description_auto", False)),
    }


def write_profile_meta(
    profile_dir: Path, *, description: str | None = None, description_auto: bool | None = None
) -> None:
    """Set the fields given in the profile's ``profile.yaml``, keeping the others;
    ``FileNotFoundError`` when there is no profile folder there."""
    import yaml

    folder = Path(profile_dir)
    if not folder.is_dir():
        raise FileNotFoundError(f"There is no profile folder at {folder}.")
    try:
        held = yaml.safe_load((folder / _META_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        held = None
    meta = held if isinstance(held, dict) else {}
    if description is not None:
        meta["description"] = description.strip()
    if description_auto is not None:
        meta["description_auto"] = bool(description_auto)
    (folder / _META_FILE).write_text(
        yaml.safe_dump(meta, sort_keys=False, default_flow_style=False), encoding="utf-8"
    )


def list_profiles() -> list[ProfileInfo]:
    """The default profile, then the named ones by name."""
    aliases = build_alias_map()
    return [_info(p, aliases) for p in _profiles.list_all() if p.path.is_dir()]


def create_profile(
    name: str,
    clone_from: str | None = None,
    clone_all: bool = False,
    clone_config: bool = False,
    no_alias: bool = False,
    no_skills: bool = False,
    description: str | None = None,
) -> Path:
    """Make a profile; ``clone_config``/``clone_from`` copy config.yaml, .env, SOUL.md,
    skills and memory notes, ``clone_all`` the whole home but its history (hermes.profiles).
    As 0.19 does, a profile gets a SOUL.md when it has none, and a copied config.yaml is
    stamped with 0.19's ``_config_version`` (not after ``clone_all``: a snapshot stays as
    it was). ``description`` goes into its ``profile.yaml``. ``no_skills`` leaves 0.19's
    marker that keeps bundled skills out."""
    if no_skills and (clone_from is not None or clone_config or clone_all):
        raise ValueError(
            "--no-skills is mutually exclusive with --clone / --clone-from / --clone-all "
            "(cloning copies the source profile's skills): drop one of them."
        )
    source = clone_from
    if source is None and (clone_config or clone_all):
        source = get_active_profile_name()
        source = None if source == "custom" else source
    path = _call(name, lambda: _profiles.create(name, clone_from=source, whole=clone_all))
    if not (path / "SOUL.md").exists():
        (path / "SOUL.md").write_text(DEFAULT_SOUL, encoding="utf-8")
    if not clone_all:
        _stamp_config_version(path / "config.yaml")
    if description and description.strip():
        write_profile_meta(path, description=description, description_auto=False)
    if no_skills:
        (path / NO_BUNDLED_SKILLS_MARKER).write_text(
            "Created with `hermes profile create --no-skills`: bundled skills are not seeded "
            "here. Delete this file to have them seeded.\n",
            encoding="utf-8",
        )
    return path


# 0.19 seeds every new profile with a persona to edit; hermes itself does not read it.
DEFAULT_SOUL = DEFAULT_SOUL_MD
_CONFIG_VERSION_LINE = re.compile(r"^_config_version:.*$", re.MULTILINE)


def _stamp_config_version(config: Path) -> None:
    """Mark a copied config.yaml with 0.19's current schema version, so 0.19's tools do
    not call the new profile outdated. hermes reads config.yaml by its own keys; only that
    one line is written, the rest stays as the source had it."""
    from hermes_cli.config import DEFAULT_CONFIG

    latest = int(DEFAULT_CONFIG["_config_version"])
    try:
        text = config.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    import yaml

    try:
        held = yaml.safe_load(text)
    except yaml.YAMLError:
        return
    current = held.get("_config_version") if isinstance(held, dict) else None
    if not isinstance(held, dict) or (isinstance(current, int) and current >= latest):
        return
    line = f"_config_version: {latest}"
    if _CONFIG_VERSION_LINE.search(text):
        text = _CONFIG_VERSION_LINE.sub(line, text, count=1)
    else:
        text = text + ("" if text.endswith("\n") or not text else "\n") + line + "\n"
    config.write_text(text, encoding="utf-8")


def seed_profile_skills(profile_dir: Path, quiet: bool = False) -> dict[str, Any] | None:
    """hermes ships no bundled skills: nothing is copied (a profile that opted out says so,
    as in 0.19)."""
    if has_bundled_skills_opt_out(profile_dir):
        return {"copied": [], "updated": [], "user_modified": [], "skipped_opt_out": True}
    return {"copied": [], "skipped": [], "profile_dir": str(profile_dir)}


# --- Wrapper aliases: ~/.local/bin/<alias> runs `hermes -p <profile>`, as 0.19 writes them.

NO_BUNDLED_SKILLS_MARKER = ".no-bundled-skills"

# Names a wrapper alias may not take: 0.19's reserved names and hermes's subcommands.
_RESERVED_ALIASES = frozenset({"hermes", "default", "test", "tmp", "root", "sudo"})
_HERMES_SUBCOMMANDS = frozenset(
    {
        "chat",
        "model",
        "gateway",
        "setup",
        "whatsapp",
        "login",
        "logout",
        "status",
        "cron",
        "doctor",
        "dump",
        "config",
        "pairing",
        "skills",
        "tools",
        "mcp",
        "sessions",
        "insights",
        "version",
        "update",
        "uninstall",
        "profile",
        "plugins",
        "honcho",
        "acp",
    }
)


def has_bundled_skills_opt_out(profile_dir: Path) -> bool:
    """True if the profile asked for no bundled skills (0.19's marker file)."""
    try:
        return (profile_dir / NO_BUNDLED_SKILLS_MARKER).exists()
    except OSError:
        return False


def _get_wrapper_dir() -> Path:
    return Path.home() / ".local" / "bin"


def validate_alias_name(name: str) -> None:
    """ValueError unless ``name`` is one safe command name (it becomes a file name)."""
    if not _PROFILE_ID_RE.match(name):
        raise ValueError(
            f"Invalid alias name {name!r}: use lower-case letters, digits, '-' and '_' "
            "(up to 64, starting with a letter or digit)."
        )


def check_alias_collision(name: str) -> str | None:
    """Why ``name`` cannot be a wrapper alias, or None if it can."""
    canon = normalize_profile_name(name)
    try:
        validate_alias_name(canon)
    except ValueError as exc:
        return str(exc)
    if canon in _RESERVED_ALIASES:
        return f"'{canon}' is a reserved name"
    if canon in _HERMES_SUBCOMMANDS:
        return f"'{canon}' conflicts with a hermes subcommand"
    existing = shutil.which(canon)
    if existing is None:
        return None
    ours = _get_wrapper_dir() / canon
    if existing == str(ours) and _is_our_wrapper(ours):
        return None  # our own wrapper: safe to write again
    return f"'{canon}' conflicts with an existing command ({existing})"


def _is_our_wrapper(path: Path) -> bool:
    try:
        return "hermes -p" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def create_wrapper_script(name: str, target: str | None = None) -> Path | None:
    """Write ``~/.local/bin/<name>`` running ``hermes -p <target or name>``; its path,
    or None (with a printed warning) if it could not be written."""
    canon = normalize_profile_name(name)
    profile = normalize_profile_name(target) if target else canon
    validate_alias_name(canon)
    windows = sys.platform == "win32"
    wrapper = _get_wrapper_dir() / (f"{canon}.bat" if windows else canon)
    try:
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        if windows:
            wrapper.write_text(f"@echo off\r\nhermes -p {profile} %*\r\n")
            return wrapper
        hermes_exe = shutil.which("hermes") or "hermes"
        wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(hermes_exe)} -p {profile} "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    except OSError as exc:
        print(f"Could not write the alias {wrapper}: {exc}")
        return None
    return wrapper


def remove_wrapper_script(name: str) -> bool:
    """Remove the alias ``name`` if it is one of our wrappers; whether one was removed."""
    canon = normalize_profile_name(name)
    try:
        validate_alias_name(canon)  # never unlink outside the wrapper folder
    except ValueError:
        return False
    for wrapper in (_get_wrapper_dir() / f"{canon}.bat", _get_wrapper_dir() / canon):
        if wrapper.is_file() and _is_our_wrapper(wrapper):
            wrapper.unlink()
            return True
    return False


# How much of a file in the wrapper folder is read to tell whether it is our wrapper
# (the folder also holds large unrelated programs).
_WRAPPER_READ_LIMIT = 8192


def build_alias_map() -> dict[str, str]:
    """{profile: alias} from the wrappers in the wrapper folder; an alias named
    otherwise than its profile wins over one named after it."""
    wrapper_dir = _get_wrapper_dir()
    if not wrapper_dir.is_dir():
        return {}
    windows = sys.platform == "win32"
    aliases: dict[str, str] = {}
    for entry in sorted(wrapper_dir.iterdir()):
        if not entry.is_file() or entry.suffix != (".bat" if windows else ""):
            continue
        try:
            with open(entry, encoding="utf-8") as wrapper:
                head = wrapper.read(_WRAPPER_READ_LIMIT)
        except (OSError, UnicodeDecodeError):  # a program, not a wrapper
            continue
        _, found, rest = head.partition("hermes -p ")
        if not found or not rest.split():
            continue
        profile = normalize_profile_name(rest.split()[0])
        alias = entry.stem if windows else entry.name
        if alias == profile:
            aliases.setdefault(profile, alias)
        else:
            aliases[profile] = alias
    return aliases


def find_alias_for_profile(profile_name: str) -> str | None:
    """The alias of the wrapper that runs ``profile_name``, or None."""
    return build_alias_map().get(normalize_profile_name(profile_name))


# --- Which homes a gateway serves, and `.env` for profiles made before they had one.


def profiles_to_serve(multiplex: bool) -> list[tuple[str, Path]]:
    """(name, home) pairs a gateway serves: the active profile, or with ``multiplex``
    the default one and every named one."""
    active = get_active_profile_name() or "default"
    if not multiplex:
        return [(active, get_profile_dir(active))]
    serve = [("default", _get_default_hermes_home())]
    profiles_root = _get_profiles_root()
    if profiles_root.is_dir():
        serve += [
            (entry.name, entry)
            for entry in sorted(profiles_root.iterdir())
            if entry.is_dir() and entry.name != "default" and _PROFILE_ID_RE.match(entry.name)
        ]
    return serve


_ENV_PLACEHOLDER = (
    "# Per-profile secrets for this Hermes profile.\n"
    "# API keys and tokens set here override the shell environment.\n"
    "# Behavioral settings belong in config.yaml, not here.\n"
)


def backfill_profile_envs(quiet: bool = False) -> list[str]:
    """Give each named profile without a ``.env`` a copy of the default one's (or a
    placeholder); the names that got one. An existing ``.env`` is never touched."""
    profiles_root = _get_profiles_root()
    if not profiles_root.is_dir():
        return []
    default_env = _get_default_hermes_home() / ".env"
    backfilled = []
    for entry in sorted(profiles_root.iterdir()):
        if not entry.is_dir() or entry.name == "default" or not _PROFILE_ID_RE.match(entry.name):
            continue
        env_path = entry / ".env"
        if env_path.exists():
            continue
        try:
            if default_env.is_file():
                shutil.copy2(default_env, env_path)
            else:
                env_path.write_text(_ENV_PLACEHOLDER, encoding="utf-8")
            env_path.chmod(0o600)
            backfilled.append(entry.name)
        except OSError as exc:
            if not quiet:
                print(f"Could not write a .env for the profile {entry.name!r}: {exc}")
    return backfilled


# --- Export and import: a profile as a .tar.gz with one top folder, never its secrets.

# What `export_profile("default")` takes from the root home: the profile's own files,
# not the store, logs, caches, credentials or other profiles.
_DEFAULT_EXPORT_INCLUDE_ROOT = frozenset(
    {
        "config.yaml",
        "SOUL.md",
        "MEMORY.md",
        "USER.md",
        "todo.json",
        "system_prompt.md",
        "AGENTS.md",
        "CLAUDE.md",
        ".cursorrules",
        "skills",
        "cron",
        "scripts",
        "sessions",
        "plugins",
        "memories",
        "knowledge",
        "preferences",
    }
)
_CREDENTIAL_FILES = frozenset({"auth.json", ".env"})


def _export_ignore(root_dir: Path, is_default: bool) -> Callable[[str, list[str]], set[str]]:
    def ignore(directory: str, contents: list[str]) -> set[str]:
        ignored = {
            entry
            for entry in contents
            if entry == "__pycache__"
            or entry.endswith((".sock", ".tmp"))
            or (is_default and entry in {"package.json", "package-lock.json"})
        }
        if Path(directory) == root_dir:
            if is_default:
                ignored.update(e for e in contents if e not in _DEFAULT_EXPORT_INCLUDE_ROOT)
            else:
                ignored.update(_CREDENTIAL_FILES & set(contents))
        return ignored

    return ignore


def export_profile(name: str, output_path: str) -> Path:
    """Write the profile to a ``.tar.gz`` whose one top folder is its name; its path."""
    canon = normalize_profile_name(name)
    validate_profile_name(canon)
    profile_dir = get_profile_dir(canon)
    if not profile_dir.is_dir():
        raise FileNotFoundError(f"There is no profile {canon!r} to export.")
    base = str(output_path).removesuffix(".tar.gz").removesuffix(".tgz")
    ignore = _export_ignore(profile_dir, is_default=canon == "default")
    with tempfile.TemporaryDirectory() as staging:
        shutil.copytree(profile_dir, Path(staging) / canon, symlinks=True, ignore=ignore)
        return Path(shutil.make_archive(base, "gztar", staging, canon))


def _archive_parts(member_name: str) -> list[str]:
    """A member's path parts, or ValueError if it would land outside the profile."""
    normalized = member_name.replace("\\", "/")
    posix = PurePosixPath(normalized)
    windows = PureWindowsPath(member_name)
    parts = [part for part in posix.parts if part not in {"", "."}]
    if posix.is_absolute() or windows.is_absolute() or windows.drive or not parts or ".." in parts:
        raise ValueError(
            f"Unsafe archive member path: {member_name} (it would land outside the profile)."
        )
    return parts


def _archive_roots(archive: tarfile.TarFile) -> set[str]:
    roots = set()
    for member in archive.getmembers():
        parts = _archive_parts(member.name)
        if len(parts) > 1 or member.isdir():
            roots.add(parts[0])
    return roots


def _extract_safely(archive: tarfile.TarFile, destination: Path) -> None:
    """Extract regular files and folders only: no links, devices or escapes."""
    for member in archive.getmembers():
        target = destination.joinpath(*_archive_parts(member.name))
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        source = archive.extractfile(member) if member.isfile() else None
        if source is None:
            raise ValueError(f"The archive holds something other than a file: {member.name}")
        target.parent.mkdir(parents=True, exist_ok=True)
        with source, open(target, "wb") as out:
            shutil.copyfileobj(source, out)
        target.chmod(member.mode & 0o777)


def import_profile(archive_path: str, name: str | None = None) -> Path:
    """Make a profile from an exported ``.tar.gz`` (named ``name`` or after its top
    folder); its folder."""
    archive_file = Path(archive_path)
    if not archive_file.exists():
        raise FileNotFoundError(f"There is no archive at {archive_file}.")
    with tarfile.open(archive_file, "r:gz") as archive:
        roots = _archive_roots(archive)
        root_name = roots.pop() if len(roots) == 1 else None
        if root_name is None:
            raise ValueError(
                "A profile archive must hold exactly one top-level directory; this one holds "
                f"{len(roots)}."
            )
        canon = normalize_profile_name(name or root_name)
        validate_profile_name(canon)
        if canon == "default":
            raise ValueError(
                "Cannot import as 'default', the root profile: give another name with "
                "`hermes profile import <archive> --name <name>`."
            )
        profile_dir = get_profile_dir(canon)
        if profile_dir.exists():
            raise FileExistsError(f"Profile '{canon}' already exists at {profile_dir}")
        profile_dir.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="hermes_profile_import_") as staging:
            _extract_safely(archive, Path(staging))
            extracted = Path(staging) / root_name
            if not extracted.is_dir():
                raise ValueError(f"The archive's top-level {root_name!r} is not a folder.")
            shutil.move(str(extracted), str(profile_dir))
    return profile_dir
