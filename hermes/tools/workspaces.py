"""Whose folder the tools work in: one workspace per gateway user.

On a gateway every user (a Telegram, Discord or Slack user, an API principal, a caller
of the operator's key by its ``X-Hermes-Session-Key``) gets a folder of their own,
``<base>/<platform>/u-<id>/``, created 0700 on first use, where ``<base>`` is
``tools.workspace`` or ``$HERMES_HOME/workspaces``. Their turns' terminal commands,
background processes and file tools work there and nowhere else: the sandbox binds it
writable and hides the other users' (``sandbox``), the file tools refuse paths outside
it (``protected``). So the workspace of a gateway is never the directory it was started
in (``$HOME``, say) and user 7 never reaches user 42's files.

A scheduled job (``cron``) is confined the same way, its "user" being the job: its runs
work in the job's ``workdir`` or in ``<base>/cron/<job id>/`` (``job_workspace``), never in
the gateway's working directory, since text from strangers (a web page, an email) may
drive them. Only the confinement is shared: a job's memory and skills stay the
operator's (``per_user`` is False for ``cron``).

The terminal chat (``cli``) keeps its working directory, or ``tools.workspace``. A Kanban
task's turn (``hermes kanban work``, source ``kanban``) works in its task's workspace; a
scratch one lies in the profiles' root, hidden like the rest of it, so the worker's own
folder is carved out of it (``is_kanban_scratch``). Like a job's, that turn is
``unattended``: no memory written, no network by default.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from hermes import profiles

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext

FOLDER = "workspaces"
# The sources whose turns belong to one gateway user (hermes.gateway.settings' platforms
# and the API principals' ``api``; a webhook route is the "user" of its events' turns).
USER_SOURCES = frozenset({"telegram", "discord", "slack", "api_server", "api", "webhook"})
# Scheduled jobs' runs: confined like a gateway user's turns, each job in its own folder.
JOB_SOURCE = "cron"
# A Kanban task's turn (``hermes kanban work``): the assignee profile's, in the task's
# workspace, led by the task's text (its body, comments, the results of other turns).
KANBAN_SOURCE = "kanban"
# Turns nobody watches, driven by text others wrote: they change no memory, and their
# commands have no network unless the operator turns it on.
UNATTENDED_SOURCES = frozenset({JOB_SOURCE, KANBAN_SOURCE})


def per_user(source: str) -> bool:
    """Whether turns from ``source`` belong to one gateway user (their own memory and
    skills, as well as their own workspace)."""
    return source in USER_SOURCES


def confined(source: str) -> bool:
    """Whether turns from ``source`` work in a workspace of their own, given to them as
    their working directory: a gateway user's, or a scheduled job's."""
    return per_user(source) or source == JOB_SOURCE


def unattended(source: str) -> bool:
    """Whether turns from ``source`` run with nobody there to approve, led by text that
    others wrote: a scheduled job's, a Kanban task's."""
    return source in UNATTENDED_SOURCES


def base(config: Any, hermes_home: Path) -> Path:
    """The folder holding every gateway user's workspace."""
    value = config.get("tools.workspace")
    if value:
        return Path(os.path.realpath(Path(str(value)).expanduser()))
    return Path(os.path.realpath(hermes_home)) / FOLDER


def user_workspace(config: Any, hermes_home: Path, source: str, user_id: str | None) -> Path:
    """``<base>/<source>/u-<id>/``, made 0700 (with its parents) if missing."""
    name = "u-" + quote(user_id or "anonymous", safe="")
    return _own_folder(base(config, hermes_home) / quote(source, safe="") / name)


def job_workspace(config: Any, hermes_home: Path, job_id: str) -> Path:
    """``<base>/cron/<job id>/``, a scheduled job's own folder, made 0700 if missing."""
    name = quote(job_id, safe="").replace(".", "%2E")  # an imported id may be '..'
    return _own_folder(base(config, hermes_home) / JOB_SOURCE / name)


def _own_folder(folder: Path) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for path in (folder, folder.parent):
        path.chmod(0o700)  # mkdir's mode bows to the umask; nobody else may look in
    return folder


def workspace(ctx: ToolContext) -> Path:
    """The folder tools may write: a gateway user's or a job's own (the turn's working
    directory, set by the gateway), else ``tools.workspace``, else the working directory."""
    if confined(ctx.source):
        return ctx.cwd
    value = ctx.setting("tools.workspace")
    return Path(str(value)).expanduser() if value else ctx.cwd


def boundary(ctx: ToolContext) -> Path | None:
    """The root outside which file tools refuse paths: a gateway user's or a job's
    workspace, else ``tools.workspace`` (None: no root)."""
    if confined(ctx.source):
        return Path(os.path.realpath(ctx.cwd))
    try:
        value = ctx.setting("tools.workspace")
    except KeyError:
        return None
    return Path(os.path.realpath(Path(str(value)).expanduser())) if value else None


def carved_out(ctx: ToolContext) -> Path | None:
    """A gateway user's (or a job's) workspace inside a hidden folder
    (``$HERMES_HOME/workspaces``, the other users' workspaces): reachable by its own tools
    although the folder around it is hidden. Only a folder strictly inside one of those qualifies, never
    ``$HERMES_HOME`` itself or a part of it holding anything else. Elsewhere, a Kanban
    task's scratch folder when it is the working directory (its worker's own)."""
    real = Path(os.path.realpath(ctx.cwd))
    if not confined(ctx.source):
        return real if is_kanban_scratch(real, Path(ctx.hermes_home)) else None
    holders = (Path(os.path.realpath(ctx.hermes_home)) / FOLDER, base(ctx.config, ctx.hermes_home))
    return real if any(folder in real.parents for folder in holders) else None


def is_kanban_scratch(real: Path, hermes_home: Path) -> bool:
    """Whether ``real`` is a Kanban task's scratch folder, which hermes makes in the
    profiles' root (``kanban/workspaces/<task>``, ``kanban/boards/<board>/workspaces/<task>``)
    and starts the task's worker in: the worker's own, though hermes's home around it is
    hidden. Only such a folder itself, never ``workspaces/`` or the board around it."""
    kanban = Path(os.path.realpath(profiles.root({"HERMES_HOME": str(hermes_home)}))) / "kanban"
    holder = real.parent
    boards = kanban / "boards"
    return holder == kanban / FOLDER or (holder.name == FOLDER and holder.parent.parent == boards)


def others(ctx: ToolContext) -> Path | None:
    """The folder of every user's and job's workspace, hidden from a gateway user's or a
    job's commands (their own is bound back in); None when there is nothing to hide it
    from."""
    if not confined(ctx.source):
        return None
    folder = base(ctx.config, ctx.hermes_home)
    real = Path(os.path.realpath(ctx.cwd))
    if folder == Path("/") or real == folder or real in folder.parents:
        return None  # a working directory given by the caller holds the whole folder
    return folder


def is_job_folder(config: Any, hermes_home: Path, path: Path) -> bool:
    """Whether ``path`` is a job's own folder (``<base>/cron/<job id>/``, not a workdir
    the operator chose) or a Kanban task's scratch folder: nothing in it is a project's,
    since what a run writes there must never instruct a later run (no context files, no
    project skills)."""
    real = Path(os.path.realpath(path))
    if is_kanban_scratch(real, hermes_home):
        return True
    if config is None:
        return False
    return real.parent == base(config, hermes_home) / JOB_SOURCE
