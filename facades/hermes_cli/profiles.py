"""Hermes Agent 0.19's ``hermes_cli.profiles``: named homes, over hermes.profiles.

The names and shapes are 0.19's (``ProfileInfo``, ``list_profiles``, ``create_profile``,
the sticky ``active_profile``); errors are 0.19's kinds (``ValueError`` for a bad name,
``FileNotFoundError`` for a missing profile, ``FileExistsError`` for a taken one) with
hermes's sentences. There are no wrapper aliases and no bundled skills to seed;
``delete_profile``/``rename_profile`` refuse a profile whose gateway is running (0.19
stops it) rather than stop another process.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hermes import profiles as _profiles
from hermes.gateway.state_file import read_status

T = TypeVar("T")

_PROFILE_ID_RE = re.compile(_profiles.NAME.pattern)

__all__ = [
    "ProfileInfo",
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


def _info(profile: _profiles.Profile) -> ProfileInfo:
    model, provider = _read_config_model(profile.path)
    return ProfileInfo(
        name=profile.name,
        path=profile.path,
        is_default=profile.is_default,
        gateway_running=_check_gateway_running(profile.path),
        model=model,
        provider=provider,
        has_env=(profile.path / ".env").exists(),
        skill_count=_count_skills(profile.path),
    )


def list_profiles() -> list[ProfileInfo]:
    """The default profile, then the named ones by name."""
    return [_info(p) for p in _profiles.list_all() if p.path.is_dir()]


def create_profile(
    name: str,
    clone_from: str | None = None,
    clone_all: bool = False,
    clone_config: bool = False,
    no_alias: bool = False,
    no_skills: bool = False,
    description: str | None = None,
) -> Path:
    """Make a profile; ``clone_config``/``clone_from`` copy config.yaml, .env and SOUL.md
    (``clone_all`` does the same: a profile never takes another's conversations)."""
    source = clone_from
    if source is None and (clone_config or clone_all):
        source = get_active_profile_name()
        source = None if source == "custom" else source
    return _call(name, lambda: _profiles.create(name, clone_from=source))


def seed_profile_skills(profile_dir: Path, quiet: bool = False) -> dict[str, Any] | None:
    """hermes ships no bundled skills: nothing is copied."""
    return {"copied": [], "skipped": [], "profile_dir": str(profile_dir)}
