"""Hermes Agent 0.19's ``hermes_constants``: where its home is (a package under facades/, so a
Hermes Agent run from this checkout still imports its own).

``get_hermes_home`` is ``$HERMES_HOME`` (or ``~/.hermes``), unless a caller pinned another
home for its own context with ``set_hermes_home_override`` (hermes-webui does, per
request); ``get_default_hermes_root`` is the root that holds ``profiles/`` and
``active_profile`` (hermes.profiles). The facades in ``facades/`` read their home here.
"""

from __future__ import annotations

import contextvars
from pathlib import Path

from hermes import profiles
from hermes.config import hermes_home

_OVERRIDE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "hermes_home_override", default=None
)


def get_hermes_home() -> Path:
    """This context's home: the override if one is set, else ``$HERMES_HOME``."""
    override = _OVERRIDE.get()
    return Path(override) if override else hermes_home()


def get_hermes_home_override() -> str | None:
    return _OVERRIDE.get()


def set_hermes_home_override(home: str | Path | None) -> contextvars.Token[str | None]:
    """Pin this context's home (a thread or task of its own); reset with the token."""
    return _OVERRIDE.set(str(home) if home else None)


def reset_hermes_home_override(token: contextvars.Token[str | None] | None = None) -> None:
    if token is None:
        _OVERRIDE.set(None)
    else:
        _OVERRIDE.reset(token)


def get_default_hermes_root() -> Path:
    """The root of the profiles: ``~/.hermes``, or the home a container set."""
    return profiles.root()


def display_hermes_home() -> str:
    """The home for people to read, with ``~/`` for the user's home folder."""
    home = get_hermes_home()
    try:
        return "~/" + str(home.relative_to(Path.home()))
    except ValueError:
        return str(home)


def get_config_path() -> Path:
    return get_hermes_home() / "config.yaml"


def get_env_path() -> Path:
    return get_hermes_home() / ".env"


def get_skills_dir() -> Path:
    return get_hermes_home() / "skills"
