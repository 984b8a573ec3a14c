"""Where a job's run works: its ``workdir``, else a folder of its own.

A job may name a ``workdir`` (Hermes Agent 0.19's per-job field): an absolute path to an
existing folder, checked when the job is made or changed (``check_workdir``). Its runs
then work there; without one, in ``<workspaces base>/cron/<job id>/``
(``workspaces.job_workspace``), never in the gateway's working directory. Either way the
run is confined to that folder like a gateway user's turn (``workspaces.confined``).

A workdir that overlaps hermes's home or the folder of a SQLite store is refused, as are
``/`` and the home folder: the sandbox hides the first two from every command (a run
there could not even see its own folder), and the last two would open everything to
tools that text from strangers may drive. A workdir that is gone by the time a run
starts (deleted, unmounted) is not fatal: the run works in the job's own folder and says
so (``run_folder``), as 0.19 runs without it and logs a warning.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hermes.errors import HermesError
from hermes.state.backend import Backend
from hermes.tools import workspaces


class WorkdirError(HermesError):
    """A workdir a job cannot work in; the message says why and what to give instead."""


def check_workdir(value: Any, *, hermes_home: Path, store: Backend | None) -> str | None:
    """The real path of a job's workdir, checked against hermes's home and the folder of
    ``store`` (the jobs' store); None when none is given (an empty value clears it, as
    in 0.19). Raises ``WorkdirError`` with one sentence."""
    if value is None or value is False:
        return None
    if not isinstance(value, str):
        raise WorkdirError("The workdir must be a folder's path, as text.")
    raw = value.strip()
    if not raw:
        return None
    given = Path(raw).expanduser()
    if not given.is_absolute():
        raise WorkdirError(
            f"The workdir {raw!r} is not an absolute path: a job runs away from any shell, "
            "so give the folder's full path, such as /home/me/project."
        )
    real = Path(os.path.realpath(given))
    if not real.exists():
        raise WorkdirError(f"The workdir {real} does not exist: create it first, or give another.")
    if not real.is_dir():
        raise WorkdirError(f"The workdir {real} is not a folder: give a directory.")
    problem = _refused(real, hermes_home, store)
    if problem:
        raise WorkdirError(f"The workdir {real} {problem}: give a project folder outside it.")
    return str(real)


def run_folder(
    job: dict[str, Any], *, config: Any, hermes_home: Path, store: Backend | None
) -> tuple[Path, str | None]:
    """The folder a run of ``job`` works in (``config`` places the workspaces), and why
    its workdir was not used (None: it was, or the job has none)."""
    wanted = job.get("workdir")
    if not wanted:
        return workspaces.job_workspace(config, hermes_home, job["id"]), None
    real = Path(os.path.realpath(Path(str(wanted)).expanduser()))
    if not real.exists():
        why = "no longer exists"
    elif not real.is_dir():
        why = "is no longer a folder"
    else:
        why = _refused(real, hermes_home, store) or ""
        if not why:
            return real, None
    own = workspaces.job_workspace(config, hermes_home, job["id"])  # made when first used
    return own, f"The job's workdir {wanted} {why}, so this run worked in {own} instead."


def _refused(real: Path, hermes_home: Path, store: Backend | None) -> str | None:
    """Why tools may not be handed ``real`` as their folder, or None."""
    if real == Path("/") or real == Path(os.path.realpath(Path.home())):
        return "would open all of it to the job's tools"
    home = Path(os.path.realpath(hermes_home))
    if _overlap(real, home):
        return f"overlaps hermes's home ({home}), which tools never see"
    folder = _store_folder(store)
    if folder is not None and _overlap(real, folder):
        return f"overlaps the folder of hermes's store ({folder}), which tools never see"
    return None


def _overlap(one: Path, other: Path) -> bool:
    return one == other or one in other.parents or other in one.parents


def _store_folder(store: Backend | None) -> Path | None:
    """The folder of a SQLite store (None: PostgreSQL, or no store given)."""
    if store is None or store.kind != "sqlite":
        return None
    return Path(os.path.realpath(store.location)).parent
