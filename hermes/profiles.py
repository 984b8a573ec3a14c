"""Profiles: named homes under ``<root>/profiles/NAME``, chosen as Hermes Agent 0.19 does.

A profile is a whole HERMES_HOME of its own (config.yaml, .env, the store, skills,
memories, logs). The root is ``~/.hermes``, or ``$HERMES_HOME`` when that points
elsewhere (a container's ``/opt/data``), or the grandparent of a ``HERMES_HOME`` that
is itself ``<root>/profiles/NAME``. The home of one run is chosen before anything
reads it, in this order:

1. ``--profile NAME`` / ``--profile=NAME`` / ``-p NAME`` anywhere before ``--``;
2. ``HERMES_PROFILE=NAME`` (hermes's addition; hermesd and others set it);
3. a ``HERMES_HOME`` that already is a profile's folder stays as it is;
4. the sticky ``<root>/active_profile`` file that ``hermes profile use`` writes.

``default`` names the root itself. The chosen home goes into ``HERMES_HOME`` for this
process and every child it starts, so everything else keeps reading only that.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

from hermes.errors import HermesError

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
RESERVED = frozenset({"hermes", "test", "tmp", "root", "sudo"})
ACTIVE_FILE = "active_profile"
# 0.19's folders of a new profile (its tools look for them).
PROFILE_DIRS = (
    "memories",
    "sessions",
    "skills",
    "skins",
    "logs",
    "plans",
    "workspace",
    "cron",
    "home",
)
CLONED_FILES = ("config.yaml", ".env", "SOUL.md")
CLONED_NOTES = ("memories/MEMORY.md", "memories/USER.md")  # the agent's own notes
# What a whole-home clone leaves behind, at the top of the source: its history (the
# store, sessions, backups, snapshots, checkpoints) and what a running gateway writes.
WHOLE_CLONE_SKIPS = frozenset(
    {
        "state.db",
        "state.db-wal",
        "state.db-shm",
        "sessions",
        "backups",
        "state-snapshots",
        "checkpoints",
        "gateway.pid",
        "gateway.lock",
        "gateway_state.json",
        "gateways",
        "processes.json",
    }
)
# ... and what only the root holds: other profiles, a Hermes Agent checkout, programs.
ROOT_ONLY = frozenset({"profiles", "hermes-agent", ".worktrees", "bin", "node_modules"})
# A new profile's own .env (0.19 seeds one, so its keys are never read from elsewhere).
ENV_SEED = (
    "# Per-profile secrets for this Hermes profile.\n"
    "# API keys and tokens set here override the shell environment.\n"
    "# Behavioral settings belong in config.yaml, not here.\n"
)


class ProfileError(HermesError):
    """A profile name that cannot be used, or a profile that does not exist."""


@dataclass(frozen=True)
class Profile:
    name: str
    path: Path
    is_default: bool


def native_root() -> Path:
    return Path.home() / ".hermes"


def root(environ: Mapping[str, str] | None = None) -> Path:
    """The folder holding the default home, ``active_profile`` and ``profiles/``."""
    environ = os.environ if environ is None else environ
    env_home = (environ.get("HERMES_HOME") or "").strip()
    native = native_root()
    if not env_home:
        return native
    home = Path(env_home).expanduser()
    try:
        home.resolve().relative_to(native.resolve())
        return native  # ~/.hermes itself, or one of its profiles
    except ValueError:
        pass
    return home.parent.parent if home.parent.name == "profiles" else home


def normalize(name: str) -> str:
    """The name as stored on disk: lower case (``Default`` is ``default``)."""
    text = str(name).strip()
    if not text:
        raise ProfileError("A profile name cannot be empty: give one such as `work`.")
    return text.lower()


def check_name(name: str) -> str:
    """The normalized name, or ProfileError saying what a name may be."""
    name = normalize(name)
    if name == "default":
        return name
    if not NAME.match(name):
        raise ProfileError(
            f"{name!r} is not a profile name: use lower-case letters, digits, '-' and '_' "
            "(up to 64, starting with a letter or digit)."
        )
    if name in RESERVED:
        raise ProfileError(f"The profile name {name!r} is reserved: pick another one.")
    return name


def profile_dir(name: str, environ: Mapping[str, str] | None = None) -> Path:
    name = check_name(name)
    base = root(environ)
    return base if name == "default" else base / "profiles" / name


def exists(name: str) -> bool:
    return check_name(name) == "default" or profile_dir(name).is_dir()


def home_of(name: str, environ: Mapping[str, str] | None = None) -> Path:
    """The home of an existing profile, or ProfileError saying how to make it."""
    name = check_name(name)
    path = profile_dir(name, environ)
    if name != "default" and not path.is_dir():
        raise ProfileError(
            f"There is no profile {name!r} (no folder {path}): create it with "
            f"`hermes profile create {name}`, or see `hermes profile list`."
        )
    return path


def active(environ: Mapping[str, str] | None = None) -> str:
    """The sticky profile ``hermes profile use`` chose; ``default`` when none."""
    try:
        name = (root(environ) / ACTIVE_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return "default"
    return name or "default"


def set_active(name: str) -> None:
    """Make ``name`` the sticky profile (``default`` removes the choice)."""
    name = check_name(name)
    home_of(name)
    path = root() / ACTIVE_FILE
    if name == "default":
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{ACTIVE_FILE}.{os.getpid()}.tmp")
    tmp.write_text(name + "\n", encoding="utf-8")
    os.replace(tmp, path)


def current_name(environ: Mapping[str, str] | None = None) -> str:
    """The profile the current HERMES_HOME is: a name, ``default``, or ``custom``."""
    environ = os.environ if environ is None else environ
    home = Path((environ.get("HERMES_HOME") or "").strip() or native_root()).expanduser()
    base = root(environ)
    if home.resolve() == base.resolve():
        return "default"
    if home.parent.name == "profiles" and home.parent.parent.resolve() == base.resolve():
        return home.name if NAME.match(home.name) else "custom"
    return "custom"


def list_all() -> list[Profile]:
    """The default profile, then every profile folder by name."""
    base = root()
    found = [Profile("default", base, True)]
    folder = base / "profiles"
    if folder.is_dir():
        for entry in sorted(folder.iterdir()):
            if entry.is_dir() and entry.name != "default" and NAME.match(entry.name):
                found.append(Profile(entry.name, entry, False))
    return found


def create(name: str, clone_from: str | None = None, *, whole: bool = False) -> Path:
    """Make the profile ``name`` with 0.19's folders. ``clone_from`` copies that profile's
    settings as 0.19's ``--clone`` does (config.yaml, .env, SOUL.md, its skills and its
    memory notes); with ``whole`` its whole home as 0.19's ``--clone-all`` does, but its
    history and what only a running gateway or the root holds (``WHOLE_CLONE_SKIPS``).
    Never its conversations."""
    path = _free(name)
    source = home_of(clone_from) if clone_from is not None else None
    if whole and source is not None:
        _copy_whole(source, path)
    else:
        path.mkdir(mode=0o700, parents=True)
        for sub in PROFILE_DIRS:
            (path / sub).mkdir(mode=0o700, exist_ok=True)
        if source is not None:
            _copy_settings(source, path)
    env = path / ".env"
    if not env.exists():
        fd = os.open(env, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(ENV_SEED)
    return path


def _free(name: str) -> Path:
    """The folder a new profile ``name`` gets (refused if taken, or ``default``)."""
    name = check_name(name)
    if name == "default":
        raise ProfileError("`default` is the root home itself; pick another name.")
    path = profile_dir(name)
    if path.exists():
        raise ProfileError(f"The profile {name!r} already exists at {path}.")
    return path


def _named(name: str, doing: str) -> Path:
    """The folder of the existing named profile ``name`` (``default`` cannot be ``doing``)."""
    name = check_name(name)
    if name == "default":
        raise ProfileError(f"`default` is the root home itself: it cannot be {doing}.")
    path = profile_dir(name)
    if not path.is_dir():
        raise ProfileError(f"There is no profile {name!r} (see `hermes profile list`).")
    return path


def delete(name: str) -> Path:
    """Remove the named profile's folder (its conversations too, when its store is the
    folder's state.db); the sticky choice goes back to ``default`` if it named it."""
    import shutil

    path = _named(name, "deleted")
    if active() == path.name:
        set_active("default")
    shutil.rmtree(path)
    return path


def rename(old: str, new: str) -> Path:
    """Give the named profile ``old`` the name ``new`` (its folder moves; the sticky
    choice follows)."""
    source = _named(old, "renamed")
    target = _free(new)
    was_active = active() == source.name
    source.rename(target)
    if was_active:
        set_active(target.name)
    return target


def _copy_settings(source: Path, path: Path) -> None:
    import shutil

    for file in CLONED_FILES:
        if (source / file).is_file():
            (path / file).write_bytes((source / file).read_bytes())
            if file == ".env":
                (path / file).chmod(0o600)
    if (source / "skills").is_dir():
        shutil.copytree(source / "skills", path / "skills", symlinks=True, dirs_exist_ok=True)
    for note in CLONED_NOTES:
        if (source / note).is_file():
            (path / note).write_bytes((source / note).read_bytes())


def _copy_whole(source: Path, path: Path) -> None:
    import shutil

    at_root = source.resolve() == root().resolve()
    skipped_here = WHOLE_CLONE_SKIPS | (ROOT_ONLY if at_root else frozenset())

    def skipped(folder: str, names: list[str]) -> list[str]:
        top = Path(folder).resolve() == source.resolve()
        return [
            entry
            for entry in names
            if entry == "__pycache__"
            or entry.endswith((".pyc", ".pyo", ".sock", ".tmp"))
            or (top and entry in skipped_here)
        ]

    shutil.copytree(source, path, symlinks=True, ignore=skipped)
    path.chmod(0o700)


# Options whose value may itself look like ``-p``: their values are skipped (as 0.19 does).
_VALUE_OPTIONS = frozenset(
    {
        "-z",
        "--oneshot",
        "-m",
        "--model",
        "-r",
        "--resume",
        "-q",
        "--query",
        "-s",
        "--system",
        "--base-url",
    }
)


def take_profile_flag(argv: list[str]) -> tuple[list[str], str | None]:
    """``argv`` without its ``--profile NAME`` (or ``-p NAME``), and the name given."""
    for index, arg in enumerate(argv):
        if arg == "--":
            break
        if index > 0 and argv[index - 1] in _VALUE_OPTIONS:
            continue  # the value of -z, -m, ...
        if arg.startswith("--profile="):
            return argv[:index] + argv[index + 1 :], arg.split("=", 1)[1]
        if arg in ("--profile", "-p") and index + 1 < len(argv):
            value = argv[index + 1]
            # `-p` is also other tools' flag: only a profile-shaped value is ours (0.19).
            if arg == "-p" and not (NAME.match(value) or value.lower() == "default"):
                continue
            return argv[:index] + argv[index + 2 :], value
    return argv, None


def select(argv: list[str], environ: MutableMapping[str, str]) -> list[str]:
    """Choose this run's home from ``argv`` and ``environ`` and put it into
    ``HERMES_HOME``; the arguments left for the command."""
    argv, name = take_profile_flag(argv)
    if name is None:
        name = (environ.get("HERMES_PROFILE") or "").strip() or None
    if name is None:
        env_home = (environ.get("HERMES_HOME") or "").strip()
        if env_home and Path(env_home).parent.name == "profiles":
            return argv  # already a profile's home
        name = active(environ)
        if name == "default":
            return argv
        if argv[:1] == ["profile"] and not profile_dir(name, environ).is_dir():
            return argv  # a sticky profile since removed: `hermes profile use` still works
    environ["HERMES_HOME"] = str(home_of(name, environ))
    return argv
