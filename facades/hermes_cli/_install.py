"""Hermes Agent 0.19's install-method helpers (``hermes_cli.config``), answered for the
hermes that is running.

0.19 asks these before it updates itself, and its tools (a status page, a web UI's
"update" hint) show what they say. hermes does not update itself; what each answers is
hermes's own account of this install (hermes/install.py, which `/update` says too):
where its code is (``get_project_root``), how it was put there (a checkout installed
editable: ``git``; a package from pip, uv, pipx or ``uv tool``: ``pip``), and the command
that updates it. 0.19's managed mode (``HERMES_MANAGED``, a ``.managed`` file in the
home, for NixOS or Homebrew packages) and container mode (a ``.container-mode`` file)
are read as 0.19 reads them: 0.19's config handlers here refuse to write a managed
install's config as 0.19's do; hermes's own CLI does not read them.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from hermes_constants import get_hermes_home, is_container

from hermes.install import DISTRIBUTION, this_install

# 0.19's page of supported install methods, which its deprecation notice links to.
PLATFORM_SUPPORT_DOCS_URL = (
    "https://hermes-agent.nousresearch.com/docs/getting-started/platform-support"
)
_MANAGED_TRUE_VALUES = ("true", "1", "yes")
_MANAGED_SYSTEM_NAMES = {
    "brew": "Homebrew",
    "homebrew": "Homebrew",
    "nix": "NixOS",
    "nixos": "NixOS",
}
_NIX_UPDATE = (
    "Update your Nix flake input and rebuild (e.g. nix flake update, nixos-rebuild, or "
    "home-manager switch)"
)
# 0.19 warns that these installs get no more updates from it; hermes's pip install is
# its ordinary one, so hermes warns of none.
_UNSUPPORTED_INSTALL_METHODS: frozenset[str] = frozenset()


def get_project_root() -> Path:
    """The folder that holds hermes's code: the checkout of an editable install, else
    the environment it is installed in."""
    return Path(this_install().where)


def get_managed_system() -> str | None:
    """The package manager that owns this install, as 0.19 reads it: ``HERMES_MANAGED``
    (``true``, ``nix``, ``brew``... or a name), else a ``.managed`` file in the home
    (NixOS); None when there is none."""
    raw = os.getenv("HERMES_MANAGED", "").strip()
    if raw:
        if raw.lower() in _MANAGED_TRUE_VALUES:
            return "NixOS"
        return _MANAGED_SYSTEM_NAMES.get(raw.lower(), raw)
    return "NixOS" if (get_hermes_home() / ".managed").exists() else None


def is_managed() -> bool:
    """Whether a package manager owns this install (``get_managed_system``)."""
    return get_managed_system() is not None


def get_managed_update_command() -> str | None:
    """How the package manager that owns this install updates it, or None."""
    return {"Homebrew": f"brew upgrade {DISTRIBUTION}", "NixOS": _NIX_UPDATE}.get(
        get_managed_system() or ""
    )


def detect_install_method(project_root: Path | None = None) -> str:
    """How hermes was installed: the ``.install_method`` stamp beside its code (else in
    the home: a ``docker`` one only inside a container), else the managing package
    manager (``nixos``, ``homebrew``), else ``git`` for a checkout installed editable
    (``make install``), else ``pip`` (pip, uv, pipx and ``uv tool`` installs alike).
    Given a ``project_root``, a checkout is one with a ``.git`` there."""
    root = project_root or get_project_root()
    for stamp in (root / ".install_method", get_hermes_home() / ".install_method"):
        try:
            method = stamp.read_text(encoding="utf-8").strip().lower()
        except OSError:
            continue
        if method and not (method == "docker" and stamp.parent != root and not is_container()):
            return method
    managed = get_managed_system()
    if managed:
        return managed.lower().replace(" ", "-")
    if project_root is None:
        return "git" if this_install().kind == "editable" else "pip"
    git = root / ".git"
    try:
        if git.is_dir() or git.read_text(encoding="utf-8").startswith("gitdir:"):
            return "git"  # a checkout, or a git worktree
    except OSError:
        pass
    return "pip"


def stamp_install_method(method: str, project_root: Path | None = None) -> None:
    """Write ``method`` as the ``.install_method`` stamp beside hermes's code (nothing
    when that folder is read-only)."""
    root = project_root or get_project_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / ".install_method").write_text(method + "\n", encoding="utf-8")
    except OSError:
        pass


def is_uv_tool_install() -> bool:
    """Whether the running hermes is a ``uv tool install`` (its interpreter lives under
    ``uv/tools/<distribution>/``): such an install is updated with ``uv tool upgrade``."""
    marker = f"/uv/tools/{DISTRIBUTION}/"
    return any(
        marker in os.path.normpath(path).replace(os.sep, "/").lower() + "/"
        for path in (sys.prefix, sys.executable or "")
    )


def recommended_update_command_for_method(method: str) -> str:
    """The command that updates a hermes installed by ``method``."""
    if method == "nixos":
        return _NIX_UPDATE
    if method == "homebrew":
        return f"brew upgrade {DISTRIBUTION}"
    install = this_install()
    if method == detect_install_method():
        return install.update  # hermes's own account of this install
    if method == "git":
        return f"git -C <checkout> pull && {sys.executable} -m pip install -e <checkout>"
    if shutil.which("uv"):
        return f"uv pip install --upgrade {DISTRIBUTION}"
    return f"{sys.executable} -m pip install --upgrade {DISTRIBUTION}"


def recommended_update_command() -> str:
    """The command that updates the running hermes."""
    return get_managed_update_command() or recommended_update_command_for_method(
        detect_install_method(get_project_root())
    )


def is_unsupported_install_method(method: str) -> bool:
    """Whether 0.19's notice that an install method gets no more updates applies:
    never to hermes (pip, uv and git installs are all how hermes is installed)."""
    return method in _UNSUPPORTED_INSTALL_METHODS


def unsupported_install_method_label(method: str) -> str:
    """0.19's name for an install method in its notice."""
    return "pip" if method == "pip" else "Homebrew"


def format_unsupported_install_warning(method: str) -> str:
    """0.19's notice that an install method is no longer supported (hermes shows it
    nowhere: ``is_unsupported_install_method`` is false for all of its installs)."""
    return (
        f"{unsupported_install_method_label(method)} installs are no longer an officially "
        f"supported platform and will not receive further updates. See "
        f"{PLATFORM_SUPPORT_DOCS_URL} for supported install methods."
    )


def format_docker_update_message() -> str:
    """How to update hermes running in a container: rebuild or pull its image."""
    return (
        "✗ hermes does not update itself inside a container.\n\n"
        "Rebuild or pull the image it runs from, then restart the container. Your config "
        "and conversations live in $HERMES_HOME (mount it as a volume) and are kept.\n"
        f"Outside a container: {recommended_update_command_for_method('pip')}"
    )


def format_managed_message(action: str = "modify this Hermes installation") -> str:
    """0.19's refusal for a managed install: what it cannot do, and where to do it."""
    system = get_managed_system() or "a package manager"
    raw = os.getenv("HERMES_MANAGED", "").strip().lower()
    if system == "NixOS":
        hint = "true" if raw in _MANAGED_TRUE_VALUES else raw or "true"
        return (
            f"Cannot {action}: this Hermes installation is managed by NixOS "
            f"(HERMES_MANAGED={hint}).\nEdit services.hermes-agent.settings in your "
            "configuration.nix and run:\n  sudo nixos-rebuild switch"
        )
    if system == "Homebrew":
        return (
            f"Cannot {action}: this Hermes installation is managed by Homebrew "
            f"(HERMES_MANAGED={raw or 'homebrew'}).\nUse:\n  brew upgrade {DISTRIBUTION}"
        )
    return (
        f"Cannot {action}: this Hermes installation is managed by {system}.\n"
        "Use your package manager to upgrade or reinstall Hermes."
    )


def managed_error(action: str = "modify configuration") -> None:
    """Say ``format_managed_message(action)`` on stderr."""
    print(format_managed_message(action), file=sys.stderr)


def get_container_exec_info() -> dict[str, Any] | None:
    """0.19's container mode: the ``KEY=value`` lines of the home's ``.container-mode``
    (``backend``, ``container_name``, ``exec_user``, ``hermes_bin``, with 0.19's
    defaults), or None without that file, inside a container, or with
    ``HERMES_DEV=1``."""
    if os.environ.get("HERMES_DEV") == "1" or is_container():
        return None
    try:
        lines = (get_hermes_home() / ".container-mode").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return None
    info = {
        key.strip(): value.strip()
        for key, equals, value in (line.strip().partition("=") for line in lines)
        if equals and not key.startswith("#")
    }
    return {
        "backend": info.get("backend", "docker"),
        "container_name": info.get("container_name", "hermes-agent"),
        "exec_user": info.get("exec_user", "hermes"),
        "hermes_bin": info.get("hermes_bin", "/data/current-package/bin/hermes"),
    }
