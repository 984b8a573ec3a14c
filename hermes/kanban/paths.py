"""Where a board's files are, as Hermes Agent 0.19 lays them out, and the checks that keep
every name that becomes a path inside them.

A board slug is 1-64 characters of lower-case letters, digits, ``-`` and ``_``; a task id
(it names a worker log) may not be absolute, hold a separator or ``..``. Both refuse with
``ValueError``, as 0.19 does for slugs.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from hermes import profiles

DEFAULT_BOARD = "default"
_SLUG = re.compile(r"^[a-z0-9][a-z0-9\-_]{0,63}$")


def normalize_slug(slug: str | None) -> str | None:
    """``slug`` stripped and lower-cased, ``None`` when empty; ``ValueError`` when it could
    leave the boards folder or is otherwise not a slug."""
    if slug is None:
        return None
    text = str(slug).strip().lower()
    if not text:
        return None
    if not _SLUG.match(text):
        raise ValueError(
            f"invalid board slug {slug!r}: must be 1-64 chars, lowercase "
            "alphanumerics / hyphens / underscores, not starting with '-' or '_'"
        )
    return text


def check_task_id(task_id: str) -> str:
    """``task_id`` when it can name a file in a board's folder, else ``ValueError``."""
    text = str(task_id)
    bad = (
        not text.strip()
        or text in (".", "..")
        or ".." in text
        or "/" in text
        or "\\" in text
        or "\x00" in text
        or os.path.isabs(text)
    )
    if bad:
        raise ValueError(
            f"invalid task id {task_id!r}: a task id names a file in the board's folder, "
            "so it cannot be empty, absolute, or hold '/', '\\' or '..'"
        )
    return text


def kanban_home() -> Path:
    """The root that holds every board: ``HERMES_KANBAN_HOME``, else the profiles' root
    (boards are shared by all profiles, as in 0.19)."""
    override = os.environ.get("HERMES_KANBAN_HOME", "").strip()
    return Path(override).expanduser() if override else profiles.root()


def boards_root() -> Path:
    return kanban_home() / "kanban" / "boards"


def current_board_path() -> Path:
    return kanban_home() / "kanban" / "current"


def board_dir(board: str | None = None) -> Path:
    return boards_root() / (normalize_slug(board) or DEFAULT_BOARD)


def board_exists(board: str | None = None) -> bool:
    """``default`` always exists; another board once it has metadata or a database."""
    slug = normalize_slug(board) or DEFAULT_BOARD
    if slug == DEFAULT_BOARD:
        return True
    folder = board_dir(slug)
    return (folder / "board.json").exists() or (folder / "kanban.db").exists()


def _readable_slug(text: str) -> str | None:
    try:
        slug = normalize_slug(text)
    except ValueError:
        return None
    return slug if slug and board_exists(slug) else None


# A board pinned for one context (a thread, an asyncio task): a web server's request on
# board X must not move every other request, nor the pointer file other processes read.
_SCOPED_BOARD: ContextVar[str | None] = ContextVar("hermes_kanban_scoped_board", default=None)


@contextlib.contextmanager
def scoped_current_board(slug: str) -> Iterator[None]:
    """Make ``slug`` the active board inside the ``with``, for this context only."""
    token = _SCOPED_BOARD.set(slug)
    try:
        yield
    finally:
        _SCOPED_BOARD.reset(token)


def get_current_board() -> str:
    """The active board: the one pinned by ``scoped_current_board``, else
    ``HERMES_KANBAN_BOARD``, else the pointer file, else ``default`` (a board that is gone
    or a malformed slug falls through)."""
    scoped = _readable_slug(_SCOPED_BOARD.get() or "")
    if scoped:
        return scoped
    env = _readable_slug(os.environ.get("HERMES_KANBAN_BOARD", ""))
    if env:
        return env
    try:
        pointed = current_board_path().read_text(encoding="utf-8").strip()
    except OSError:
        pointed = ""
    return _readable_slug(pointed) or DEFAULT_BOARD


def set_current_board(slug: str) -> Path:
    normed = normalize_slug(slug)
    if not normed:
        raise ValueError("board slug is required")
    path = current_board_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(normed + "\n", encoding="utf-8")
    return path


def clear_current_board() -> None:
    current_board_path().unlink(missing_ok=True)


def _slug_or_current(board: str | None) -> str:
    return normalize_slug(board) or get_current_board()


def kanban_db_path(board: str | None = None) -> Path:
    """``HERMES_KANBAN_DB`` if set; ``default`` at ``<root>/kanban.db`` (0.19's place from
    before boards); any other board in its own folder."""
    override = os.environ.get("HERMES_KANBAN_DB", "").strip()
    if override:
        return Path(override).expanduser()
    slug = _slug_or_current(board)
    if slug == DEFAULT_BOARD:
        return kanban_home() / "kanban.db"
    return board_dir(slug) / "kanban.db"


def workspaces_root(board: str | None = None) -> Path:
    override = os.environ.get("HERMES_KANBAN_WORKSPACES_ROOT", "").strip()
    if override:
        return Path(override).expanduser()
    slug = _slug_or_current(board)
    if slug == DEFAULT_BOARD:
        return kanban_home() / "kanban" / "workspaces"
    return board_dir(slug) / "workspaces"


def worker_logs_dir(board: str | None = None) -> Path:
    slug = _slug_or_current(board)
    if slug == DEFAULT_BOARD:
        return kanban_home() / "kanban" / "logs"
    return board_dir(slug) / "logs"


def attachments_root(board: str | None = None) -> Path:
    """Where a board keeps the files given to its tasks: ``HERMES_KANBAN_ATTACHMENTS_ROOT``,
    else ``<root>/kanban/attachments`` for ``default`` and ``<board>/attachments`` for another."""
    override = os.environ.get("HERMES_KANBAN_ATTACHMENTS_ROOT", "").strip()
    if override:
        return Path(override).expanduser()
    slug = _slug_or_current(board)
    if slug == DEFAULT_BOARD:
        return kanban_home() / "kanban" / "attachments"
    return board_dir(slug) / "attachments"


def task_attachments_dir(task_id: str, board: str | None = None) -> Path:
    """A task's own attachments folder, ``<attachments root>/<task id>``."""
    return attachments_root(board=board) / check_task_id(task_id)


def board_of_database(db_file: str) -> str:
    """The board whose database is ``db_file``: ``default`` at ``<root>/kanban.db``, the
    slug of ``boards/<slug>/kanban.db``, else (``HERMES_KANBAN_DB``) the active board."""
    path = _real(Path(db_file)) if db_file else None
    if path is not None:
        if path == _real(kanban_home() / "kanban.db"):
            return DEFAULT_BOARD
        if path.name == "kanban.db" and path.parent.parent == _real(boards_root()):
            return path.parent.name
    return get_current_board()


def worker_log_path(task_id: str, *, board: str | None = None) -> Path:
    """Where a task's worker log would be (it may not exist)."""
    return worker_logs_dir(board=board) / f"{check_task_id(task_id)}.log"


def read_worker_log(
    task_id: str, *, tail_bytes: int | None = None, board: str | None = None
) -> str | None:
    """The worker log's text, or its last ``tail_bytes`` from a line start; ``None`` when
    there is none."""
    path = worker_log_path(task_id, board=board)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if tail_bytes is not None and len(data) > tail_bytes:
        data = data[-tail_bytes:]
        newline = data.find(b"\n")
        if 0 <= newline < len(data) - 1:
            data = data[newline + 1 :]
    return data.decode("utf-8", errors="replace")


def scratch_workspace(task_id: str, *, board: str | None = None) -> Path:
    """The scratch folder hermes makes for a task: ``<workspaces root>/<task id>``."""
    return workspaces_root(board=board) / check_task_id(task_id)


def scratch_roots() -> list[Path]:
    """Every folder hermes makes scratch workspaces in: ``HERMES_KANBAN_WORKSPACES_ROOT``,
    the ``default`` board's and each other board's ``workspaces/``."""
    roots = [kanban_home() / "kanban" / "workspaces"]
    override = os.environ.get("HERMES_KANBAN_WORKSPACES_ROOT", "").strip()
    if override:
        roots.insert(0, Path(override).expanduser())
    try:
        boards = sorted(p for p in boards_root().iterdir() if p.is_dir())
    except OSError:
        boards = []
    roots += [b / "workspaces" for b in boards]
    return roots


def absolute_workspace(task_id: str, path: str) -> Path:
    """A workspace path a task names, which hermes makes with the dispatcher's authority
    before any worker runs: it must be absolute (a relative one would be read against
    whatever folder the dispatcher runs in), and neither ``/``, the home folder nor in a
    profile's home, links resolved (but the task's own scratch folder, once recorded);
    ``ValueError`` otherwise."""
    candidate = Path(path).expanduser()
    if "\x00" in path or not candidate.is_absolute():
        raise ValueError(
            f"task {task_id} has workspace path {path!r}, which is not absolute; "
            "give the workspace as an absolute path"
        )
    real = Path(os.path.realpath(candidate))
    if real in (_real(root) / check_task_id(task_id) for root in scratch_roots()):
        return candidate
    homes = [_real(profiles.root()), _real(profiles.native_root())]
    why = None
    if real in (Path("/"), _real(Path.home())):
        why = "would open all of it to the task's tools"
    elif any(real == home or home in real.parents for home in homes):
        why = "is in a profile's home, which no task's tools may see"
    if why:
        raise ValueError(
            f"task {task_id} has workspace path {path!r}, which {why}; "
            "give the full path of a project folder outside hermes's homes"
        )
    return candidate


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))
