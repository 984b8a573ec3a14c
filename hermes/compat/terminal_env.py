"""Hermes Agent 0.19's bridge of config.yaml's ``terminal`` section into ``TERMINAL_*``
environment variables, and its warning about MESSAGING_CWD/TERMINAL_CWD in ``.env``.

0.19's terminal tool reads its settings from the environment (it also runs in child
processes), so 0.19 copies ``terminal.*`` into ``TERMINAL_*`` before it starts one.
Hermes's own terminal tool reads ``terminal.*`` from config.yaml in its own process and
no hermes code reads these variables: the bridge serves 0.19's tools that launch 0.19's
terminal, or read the variables themselves (``hermes_cli.config`` gives it).

``terminal.cwd`` set to one of ``CWD_PLACEHOLDERS`` means "no fixed folder" in 0.19: the
bridge leaves ``TERMINAL_CWD`` alone for it, and the warning takes it for unset. Hermes
has no ``terminal.cwd`` (a gateway user's commands run in their own workspace,
hermes/tools/workspaces.py), so a placeholder means nothing more here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, MutableMapping
from typing import Any

CWD_PLACEHOLDERS = frozenset({".", "auto", "cwd"})

# 0.19's ``terminal.<key>`` -> the variable its terminal tool reads.
TERMINAL_CONFIG_ENV_MAP = {
    "backend": "TERMINAL_ENV",
    "modal_mode": "TERMINAL_MODAL_MODE",
    "cwd": "TERMINAL_CWD",
    "timeout": "TERMINAL_TIMEOUT",
    "lifetime_seconds": "TERMINAL_LIFETIME_SECONDS",
    "docker_image": "TERMINAL_DOCKER_IMAGE",
    "docker_forward_env": "TERMINAL_DOCKER_FORWARD_ENV",
    "singularity_image": "TERMINAL_SINGULARITY_IMAGE",
    "modal_image": "TERMINAL_MODAL_IMAGE",
    "daytona_image": "TERMINAL_DAYTONA_IMAGE",
    "ssh_host": "TERMINAL_SSH_HOST",
    "ssh_user": "TERMINAL_SSH_USER",
    "ssh_port": "TERMINAL_SSH_PORT",
    "ssh_key": "TERMINAL_SSH_KEY",
    "container_cpu": "TERMINAL_CONTAINER_CPU",
    "container_memory": "TERMINAL_CONTAINER_MEMORY",
    "container_disk": "TERMINAL_CONTAINER_DISK",
    "container_persistent": "TERMINAL_CONTAINER_PERSISTENT",
    "docker_volumes": "TERMINAL_DOCKER_VOLUMES",
    "docker_env": "TERMINAL_DOCKER_ENV",
    "docker_mount_cwd_to_workspace": "TERMINAL_DOCKER_MOUNT_CWD_TO_WORKSPACE",
    "docker_network": "TERMINAL_DOCKER_NETWORK",
    "docker_extra_args": "TERMINAL_DOCKER_EXTRA_ARGS",
    "docker_run_as_host_user": "TERMINAL_DOCKER_RUN_AS_HOST_USER",
    "docker_persist_across_processes": "TERMINAL_DOCKER_PERSIST_ACROSS_PROCESSES",
    "docker_orphan_reaper": "TERMINAL_DOCKER_ORPHAN_REAPER",
    "sandbox_dir": "TERMINAL_SANDBOX_DIR",
    "persistent_shell": "TERMINAL_PERSISTENT_SHELL",
}


def env_var_for_key(key: str) -> str | None:
    """The variable a ``terminal.<key>`` config key is copied into; None for any other."""
    section, _, name = key.partition(".")
    return TERMINAL_CONFIG_ENV_MAP.get(name) if section == "terminal" else None


def env_value(value: Any) -> str:
    """A setting as its variable holds it: lists and maps as JSON, the rest as text."""
    return json.dumps(value) if isinstance(value, list | dict) else str(value)


def is_fixed_cwd(value: Any) -> bool:
    """``terminal.cwd`` names a folder (not unset, blank or a placeholder)."""
    return str(value or "").strip() not in CWD_PLACEHOLDERS | {""}


def copy_to_env(
    terminal: Mapping[str, Any], env: MutableMapping[str, str], *, override: bool
) -> MutableMapping[str, str]:
    """Copy each ``terminal`` setting 0.19 maps into its variable: over what ``env`` has
    when ``override``, else only where it has none. A placeholder cwd is left out."""
    for key, variable in TERMINAL_CONFIG_ENV_MAP.items():
        if key not in terminal:
            continue
        value = terminal[key]
        if key == "cwd":
            if not is_fixed_cwd(value):
                continue
            if isinstance(value, str):
                value = os.path.expanduser(value)
        if override or variable not in env:
            env[variable] = env_value(value)
    return env


def deprecated_cwd_warning(
    terminal: Mapping[str, Any], environ: Mapping[str, str], home_hint: str
) -> str | None:
    """0.19's warning (ANSI-coloured lines, for stderr) when MESSAGING_CWD, or a
    TERMINAL_CWD config.yaml did not set, is in the environment; None when neither is."""
    lines = []
    messaging = environ.get("MESSAGING_CWD")
    terminal_cwd = environ.get("TERMINAL_CWD")
    if messaging:
        lines.append(
            f"  \033[33m⚠\033[0m MESSAGING_CWD={messaging} found in .env — this is deprecated."
        )
    if terminal_cwd and not is_fixed_cwd(terminal.get("cwd", ".")):
        lines.append(
            f"  \033[33m⚠\033[0m TERMINAL_CWD={terminal_cwd} found in .env — this is deprecated."
        )
    if not lines:
        return None
    return "\n".join(
        [
            "\033[33m⚠ Deprecated .env settings detected:\033[0m",
            *lines,
            "  \033[2mMove to config.yaml instead:  terminal:\\n    cwd: /your/project/path\033[0m",
            f"  \033[2mThen remove the old entries from {home_hint}/.env\033[0m",
        ]
    )
