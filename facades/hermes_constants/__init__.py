"""Hermes Agent 0.19's ``hermes_constants``: where its home is (a package under facades/, so a
Hermes Agent run from this checkout still imports its own).

``get_hermes_home`` is ``$HERMES_HOME`` (or ``~/.hermes``), unless a caller pinned another
home for its own context with ``set_hermes_home_override`` (hermes-webui does, per
request); ``get_default_hermes_root`` is the root that holds ``profiles/`` and
``active_profile`` (hermes.profiles). The facades in ``facades/`` read their home here.
"""

from __future__ import annotations

import contextvars
import os
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


def get_process_hermes_home() -> Path:
    """The process's home (``$HERMES_HOME``), whatever a context pinned."""
    return hermes_home()


def get_hermes_dir(new_subpath: str, old_name: str) -> Path:
    """``<home>/<old_name>`` while that older folder holds something, else
    ``<home>/<new_subpath>`` (0.19's layout moves, e.g. ``image_cache`` to
    ``cache/images``)."""
    home = get_hermes_home()
    old = home / old_name
    try:
        if old.is_dir() and any(old.iterdir()):
            return old
    except OSError:
        pass
    return home / new_subpath


def is_termux() -> bool:
    """Running in Termux (Android)."""
    return bool(os.getenv("TERMUX_VERSION") or "com.termux/files/usr" in os.getenv("PREFIX", ""))


def is_wsl() -> bool:
    """Running in the Windows Subsystem for Linux."""
    try:
        return "microsoft" in Path("/proc/version").read_text(encoding="utf-8").lower()
    except OSError:
        return False


def is_container() -> bool:
    """Running in a container (Docker, Podman, or a Kubernetes pod)."""
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists():
        return True
    if os.getenv("KUBERNETES_SERVICE_HOST"):
        return True
    try:
        cgroup = Path("/proc/1/cgroup").read_text(encoding="utf-8")
    except OSError:
        return False
    return any(mark in cgroup for mark in ("docker", "podman", "lxc", "kubepods", "containerd"))


# 0.19's constants its callers import from here.
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
OPENROUTER_MODELS_URL = f"{OPENROUTER_BASE_URL}/models"
FINISH_REASON_LENGTH = "length"
VALID_REASONING_EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max", "ultra")
