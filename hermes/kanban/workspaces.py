"""A task's workspace, as 0.19 makes it: the folder its worker runs in.

- ``scratch``: ``<workspaces root>/<task id>``, made here and removed when the task is done
  (kept while a child task still waits for it: children read their parents' handoff
  files). Only a folder hermes makes is ever removed: one at exactly that place, for that
  task, after symlinks are resolved; a ``workspace_path`` naming any other folder is left
  alone.
- ``dir``: the absolute folder the task names (made if missing), never removed.
- ``worktree``: a linked git worktree, made with the ``git`` CLI. A path naming a repo's
  root (or none: the board's ``default_workdir``) gets ``<repo>/.worktrees/<task id>``; a
  path inside a repo is made a worktree there; an existing linked worktree is reused with
  its branch. The branch is the task's ``branch_name``, else ``wt/<task id>``.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import subprocess
from pathlib import Path

from hermes.kanban.boards import read_board_metadata
from hermes.kanban.db import write_txn
from hermes.kanban.paths import (
    absolute_workspace,
    check_task_id,
    get_current_board,
    scratch_roots,
    scratch_workspace,
)
from hermes.kanban.records import Task

log = logging.getLogger(__name__)

GIT_TIMEOUT_SECONDS = 60
# A child in one of these no longer needs its parents' scratch folders.
_FINISHED = ("done", "archived")


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str] | None:
    """``git -C cwd args``; ``None`` when git could not run at all."""
    try:
        return subprocess.run(
            ["git", "-C", str(cwd), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def _git_path(*args: str, cwd: Path) -> Path | None:
    done = _git(*args, cwd=cwd)
    out = done.stdout.strip() if done is not None and done.returncode == 0 else ""
    return Path(out).resolve() if out else None


def _toplevel(path: Path) -> Path | None:
    return _git_path("rev-parse", "--show-toplevel", cwd=path) if path.is_dir() else None


def _common_dir(path: Path) -> Path | None:
    return _git_path("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=path)


def _is_linked_worktree(path: Path) -> bool:
    if not path.is_dir():
        return False
    git_dir = _git_path("rev-parse", "--path-format=absolute", "--git-dir", cwd=path)
    common = _common_dir(path)
    return git_dir is not None and common is not None and git_dir != common


def _current_branch(path: Path) -> str | None:
    done = _git("branch", "--show-current", cwd=path)
    return (done.stdout.strip() or None) if done is not None and done.returncode == 0 else None


def _enclosing_repo(path: Path) -> Path | None:
    """The repo holding ``path`` or, for a path not made yet, its nearest existing folder."""
    for folder in (path, *path.parents):
        if folder.is_dir():
            return _toplevel(folder)
    return None


def _add_worktree(repo: Path, target: Path, branch: str) -> None:
    """Make ``target`` a linked worktree of ``repo`` on ``branch`` (kept when it is one)."""
    if target.is_dir() and _common_dir(target) == _common_dir(repo):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    has_branch = _git("show-ref", "--verify", "--quiet", f"refs/heads/{branch}", cwd=repo)
    if has_branch is not None and has_branch.returncode == 0:
        done = _git("worktree", "add", str(target), branch, cwd=repo)
    else:
        done = _git("worktree", "add", "-b", branch, str(target), "HEAD", cwd=repo)
    if done is None or done.returncode != 0:
        why = (done.stderr or done.stdout).strip() if done is not None else "git did not run"
        raise RuntimeError(f"could not make a git worktree at {target} on {branch}: {why}")


def resolve_worktree(task: Task, *, board: str | None = None) -> tuple[Path, str]:
    """The task's linked worktree (made if missing) and its branch."""
    branch = (task.branch_name or "").strip() or f"wt/{check_task_id(task.id)}"
    if branch.startswith("-"):  # git would read it as an option
        raise ValueError(f"task {task.id}'s branch {branch!r} cannot start with '-'")
    if not task.workspace_path:
        slug = board or get_current_board()
        anchor = (read_board_metadata(slug).get("default_workdir") or "").strip()
        if not anchor:
            raise ValueError(
                f"task {task.id} wants a git worktree but names no repo, and board {slug!r} "
                "has no default_workdir: set the board's default_workdir to a git repo, or "
                "give the task an absolute worktree path"
            )
        requested = absolute_workspace(task.id, anchor)
    else:
        requested = absolute_workspace(task.id, task.workspace_path)
    if task.workspace_path and _is_linked_worktree(requested):
        return requested.resolve(), _current_branch(requested) or branch
    repo = _toplevel(requested)
    if repo is not None and (not task.workspace_path or repo == requested.resolve()):
        target = repo / ".worktrees" / check_task_id(task.id)
    elif task.workspace_path:
        repo, target = _enclosing_repo(requested.parent), requested
    else:
        repo, target = None, requested
    if repo is None:
        raise ValueError(
            f"task {task.id}'s worktree path {str(requested)!r} is in no git repo: "
            "name a repo's root or a folder inside one"
        )
    _add_worktree(repo, target, branch)
    return target, branch


def resolve_workspace(task: Task, *, board: str | None = None) -> Path:
    """The task's workspace folder, made if missing (see the module's doc)."""
    kind = task.workspace_kind or "scratch"
    if kind == "worktree":
        return resolve_worktree(task, board=board)[0]
    if kind not in ("scratch", "dir"):
        raise ValueError(f"unknown workspace_kind: {kind}")
    if task.workspace_path:
        folder = absolute_workspace(task.id, task.workspace_path)
    elif kind == "dir":
        raise ValueError(f"task {task.id} has a dir workspace but names no folder")
    else:
        folder = scratch_workspace(task.id, board=board)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def prepare_workspace(conn: sqlite3.Connection, task: Task, *, board: str | None = None) -> Path:
    """The workspace a claimed task's worker runs in, made if missing, with its path (and
    a worktree's branch) recorded on the task so a rerun reuses it."""
    if (task.workspace_kind or "scratch") == "worktree":
        folder, branch = resolve_worktree(task, board=board)
        set_branch_name(conn, task.id, branch)
    else:
        folder = resolve_workspace(task, board=board)
    set_workspace_path(conn, task.id, folder)
    return folder


def set_workspace_path(conn: sqlite3.Connection, task_id: str, path: Path | str) -> None:
    with write_txn(conn):
        conn.execute("UPDATE tasks SET workspace_path = ? WHERE id = ?", (str(path), task_id))


def set_branch_name(conn: sqlite3.Connection, task_id: str, branch_name: str) -> None:
    with write_txn(conn):
        conn.execute("UPDATE tasks SET branch_name = ? WHERE id = ?", (branch_name, task_id))


def is_hermes_scratch(task_id: str, path: Path | str) -> bool:
    """Whether ``path`` is the scratch folder hermes makes for ``task_id``: once symlinks
    are resolved, exactly ``<a workspaces root>/<task id>``, and no link itself."""
    folder = Path(path)
    try:
        check_task_id(task_id)
        if folder.is_symlink() or not folder.is_dir():
            return False
        real = folder.resolve(strict=True)
        return any(real == root.resolve() / task_id for root in scratch_roots())
    except (OSError, ValueError):
        return False


def _has_active_child(conn: sqlite3.Connection, task_id: str) -> bool:
    marks = ",".join("?" * len(_FINISHED))
    row = conn.execute(
        "SELECT 1 FROM task_links l JOIN tasks c ON c.id = l.child_id "
        f"WHERE l.parent_id = ? AND c.status NOT IN ({marks}) LIMIT 1",
        (task_id, *_FINISHED),
    ).fetchone()
    return row is not None


def _remove_scratch(conn: sqlite3.Connection, task_id: str) -> None:
    """Remove the task's scratch folder if it has one hermes made and no child still needs
    it; a folder hermes did not make is logged and left."""
    row = conn.execute(
        "SELECT status, workspace_kind, workspace_path FROM tasks WHERE id = ?", (task_id,)
    ).fetchone()
    if row is None or row["workspace_kind"] != "scratch" or not row["workspace_path"]:
        return
    if row["status"] not in _FINISHED or _has_active_child(conn, task_id):
        return
    path = Path(row["workspace_path"])
    if not path.exists():
        return
    if not is_hermes_scratch(task_id, path):
        log.warning(
            "Kept task %s's workspace %s: it is not a scratch folder hermes made.", task_id, path
        )
        return
    shutil.rmtree(path, ignore_errors=True)


def cleanup_workspace(conn: sqlite3.Connection, task_id: str) -> None:
    """After a task is done: remove its scratch folder, and each parent's that waited only
    for it. Never fails the completion (a folder that cannot go stays)."""
    try:
        _remove_scratch(conn, task_id)
        for row in conn.execute(
            "SELECT parent_id FROM task_links WHERE child_id = ?", (task_id,)
        ).fetchall():
            _remove_scratch(conn, row["parent_id"])
    except (OSError, sqlite3.Error) as exc:
        log.warning("Could not clean up task %s's workspace: %s", task_id, exc)
