"""Files a user gives a task (0.19's task attachments): each task's files in its own folder
under its board's (``paths.task_attachments_dir``: ``<root>/kanban/attachments/<task>`` for
``default``), one ``task_attachments`` row and an ``attached`` event each.

Every name that becomes a path is checked. The task id must name a folder
(``paths.check_task_id``); the file's name must be a plain name, without a separator or
``..`` (0.19 cuts ``../../x`` down to ``x``; hermes refuses it, so nobody is surprised by
where a file went), and a leading dot is dropped so no hidden file is made, as in 0.19. A
file is always created new, never over another one nor through a link, and is deleted only
when it is in its own task's folder: a row pointing anywhere else leaves that file alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from pathlib import Path

from hermes.errors import HermesError
from hermes.kanban.db import write_txn
from hermes.kanban.paths import (
    attachments_root,
    board_of_database,
    check_task_id,
    task_attachments_dir,
)
from hermes.kanban.records import Attachment
from hermes.kanban.tasks import append_event, missing_tasks

log = logging.getLogger(__name__)

# One cap for every way in (0.19's web dashboard, its agent tools, its CLI).
KANBAN_ATTACHMENT_MAX_BYTES = 25 * 1024 * 1024
_MAX_NAME_CHARS = 200


class AttachmentTooLarge(HermesError, ValueError):
    """A file over the attachment cap (a ``ValueError``, as 0.19's, for callers that
    answer any ``ValueError`` with a 400)."""


def connection_board(conn: sqlite3.Connection) -> str:
    """The board whose database ``conn`` has open."""
    main = [row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"]
    return board_of_database(main[0] if main else "")


def plain_name(raw: str) -> str:
    """``raw`` as a file name in a task's folder: unprintable characters and leading dots
    dropped, at most 200 characters; ``ValueError`` for a path or nothing."""
    text = "".join(ch for ch in str(raw or "") if ch.isprintable()).strip()
    if "/" in text or "\\" in text:
        raise ValueError(
            f"invalid attachment filename {raw!r}: give the file's own name, not a path"
        )
    name = text.lstrip(".").strip()
    if not name:
        raise ValueError(f"invalid attachment filename {raw!r}: give the file a name")
    return name[:_MAX_NAME_CHARS]


def _real_folder(task_id: str, board: str) -> Path:
    """Where the task's folder must really be: in the board's attachments root (which may
    itself be a link the user made), and no link itself."""
    return Path(os.path.realpath(attachments_root(board=board))) / check_task_id(task_id)


def _inside(path: Path, task_id: str, board: str) -> bool:
    """Whether ``path`` is a file of the task's own folder, reached through no link."""
    real = Path(os.path.realpath(path))
    return not path.is_symlink() and real.parent == _real_folder(task_id, board)


def own_folder(task_id: str, board: str) -> Path:
    """The task's attachments folder, made if missing; ``ValueError`` when it is a link
    (or under one) leading out of the board's attachments root."""
    folder = task_attachments_dir(task_id, board=board)
    folder.mkdir(parents=True, exist_ok=True)
    real, wanted = Path(os.path.realpath(folder)), _real_folder(task_id, board)
    if real != wanted:
        raise ValueError(
            f"the attachments folder {folder} of task {task_id} leads elsewhere ({real}); "
            "remove that link and attach the file again"
        )
    return real


def write_new(folder: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to a new file in ``folder``: ``name``, else ``stem (1).ext``, ...
    (0.19's names). Created exclusively, so no existing file or link is followed."""
    stem, dot, ext = name.partition(".")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    where = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        candidate, n = name, 1
        while True:
            try:
                fd = os.open(candidate, flags, 0o600, dir_fd=where)
                break
            except FileExistsError:
                candidate, n = f"{stem} ({n}){dot}{ext}", n + 1
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    finally:
        os.close(where)
    return folder / candidate


def _record(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    filename: str,
    stored_path: str,
    content_type: str | None,
    size: int,
    uploaded_by: str | None,
) -> int:
    with write_txn(conn):
        if missing_tasks(conn, [task_id]):
            raise ValueError(f"unknown task {task_id}")
        cur = conn.execute(
            "INSERT INTO task_attachments (task_id, filename, stored_path, content_type, "
            "size, uploaded_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                task_id,
                filename,
                stored_path,
                content_type,
                int(size),
                uploaded_by,
                int(time.time()),
            ),
        )
        append_event(
            conn, task_id, "attached", {"filename": filename, "size": int(size), "by": uploaded_by}
        )
    return int(cur.lastrowid or 0)


def store_attachment_bytes(
    conn: sqlite3.Connection,
    task_id: str,
    filename: str,
    data: bytes,
    *,
    content_type: str | None = None,
    uploaded_by: str | None = None,
    board: str | None = None,
    max_bytes: int | None = None,
) -> int:
    """Keep ``data`` as a new file of the task's (``board``'s folder, else that of the
    board ``conn`` has open) and record it; the attachment's id. ``AttachmentTooLarge``
    over ``max_bytes`` (25 MiB), ``ValueError`` for a bad name or an unknown task."""
    limit = KANBAN_ATTACHMENT_MAX_BYTES if max_bytes is None else int(max_bytes)
    if len(data) > limit:
        raise AttachmentTooLarge(
            f"attachment exceeds {limit // (1024 * 1024)} MB limit ({len(data)} bytes); "
            "attach a smaller file"
        )
    name = plain_name(filename)
    if missing_tasks(conn, [task_id]):
        raise ValueError(f"unknown task {task_id}")
    path = write_new(own_folder(task_id, board or connection_board(conn)), name, data)
    try:
        return _record(
            conn,
            task_id,
            filename=path.name,
            stored_path=str(path),
            content_type=content_type,
            size=len(data),
            uploaded_by=uploaded_by,
        )
    except BaseException:
        path.unlink(missing_ok=True)  # no file without its row
        raise


def add_attachment(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    filename: str,
    stored_path: str,
    content_type: str | None = None,
    size: int = 0,
    uploaded_by: str | None = None,
) -> int:
    """Record a file the caller already put in the task's attachments folder; the
    attachment's id. ``ValueError`` when ``stored_path`` is elsewhere or a link."""
    if not filename or not filename.strip():
        raise ValueError("attachment filename is required")
    if not stored_path or not stored_path.strip():
        raise ValueError("attachment stored_path is required")
    board = connection_board(conn)
    if not _inside(Path(stored_path), task_id, board):
        raise ValueError(
            f"attachment {stored_path} is not a file in task {task_id}'s attachments "
            f"folder {task_attachments_dir(task_id, board=board)}; put it there first "
            "(store_attachment_bytes does)"
        )
    return _record(
        conn,
        task_id,
        filename=filename.strip(),
        stored_path=stored_path,
        content_type=content_type,
        size=size,
        uploaded_by=uploaded_by,
    )


def list_attachments(conn: sqlite3.Connection, task_id: str) -> list[Attachment]:
    rows = conn.execute(
        "SELECT * FROM task_attachments WHERE task_id = ? ORDER BY created_at ASC, id ASC",
        (task_id,),
    )
    return [Attachment.from_row(r) for r in rows]


def get_attachment(conn: sqlite3.Connection, attachment_id: int) -> Attachment | None:
    row = conn.execute(
        "SELECT * FROM task_attachments WHERE id = ?", (int(attachment_id),)
    ).fetchone()
    return Attachment.from_row(row) if row else None


def delete_attachment(conn: sqlite3.Connection, attachment_id: int) -> Attachment | None:
    """Forget an attachment and delete its file if that is in the task's own folder; the
    row removed, or ``None`` when there was none."""
    with write_txn(conn):
        found = get_attachment(conn, attachment_id)
        if found is None:
            return None
        conn.execute("DELETE FROM task_attachments WHERE id = ?", (found.id,))
        append_event(conn, found.task_id, "attachment_removed", {"filename": found.filename})
    path = Path(found.stored_path)
    try:
        ours = _inside(path, found.task_id, connection_board(conn))
    except ValueError:  # a task id no folder could have: its file is none of ours
        ours = False
    if ours:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            path.unlink()
    elif path.exists() or path.is_symlink():
        log.warning(
            "Attachment %s of task %s names %s, outside the task's attachments folder: "
            "the file is left as it is.",
            found.id,
            found.task_id,
            path,
        )
    return found
