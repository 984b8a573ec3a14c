"""A completed task's deliverables in its scratch folder, kept (0.19's): hermes removes a
task's scratch folder once it is done, so the files the completion names there (its
``metadata["artifacts"]``, or a path in the scratch folder its summary or result names,
as a worker answering in prose does) are copied into the task's attachments first, each
an attachment ``kanban_complete`` uploaded, and the metadata then names the copies.

Only a regular file inside the task's own scratch folder is copied (a path elsewhere, or
a link leading out, is left named as it is: a worker cannot turn a file outside its
folder into an attachment). One that is missing or over the attachment cap refuses the
completion (``ArtifactPreservationError``), so the promised file is never lost silently.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

from hermes.kanban.attachments import (
    KANBAN_ATTACHMENT_MAX_BYTES,
    connection_board,
    own_folder,
    write_new,
)
from hermes.kanban.tasks import append_event, task_fields
from hermes.kanban.workspaces import is_hermes_scratch

_TRAILING = ".,;:!?)]}"


class ArtifactPreservationError(RuntimeError):
    """A deliverable a completion names in the task's scratch folder cannot be kept."""


def _named_in_prose(workspace: Path, *texts: str | None) -> list[str]:
    """Existing files under ``workspace`` that the texts name by absolute path."""
    text = "\n".join(t for t in texts if t)
    found: list[str] = []
    for match in re.finditer(re.escape(str(workspace)) + r"[/\\][^\s`\"'<>]+", text):
        path = match.group(0).rstrip(_TRAILING)
        if Path(path).is_file() and path not in found:
            found.append(path)
    return found


def _read_capped(path: Path, name: str) -> bytes:
    """The file's bytes; ``ArtifactPreservationError`` if it is not a regular file (a
    FIFO is not waited on) or is over the attachment cap (checked on what is read: the
    file may grow meanwhile)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ArtifactPreservationError(
            f"declared scratch artifact is unavailable: {name} ({exc.strerror or exc})"
        ) from None
    with os.fdopen(fd, "rb") as source:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ArtifactPreservationError(
                f"declared scratch artifact is not a regular file: {name}"
            )
        data = source.read(KANBAN_ATTACHMENT_MAX_BYTES + 1)
    if len(data) > KANBAN_ATTACHMENT_MAX_BYTES:
        raise ArtifactPreservationError(
            f"declared scratch artifact exceeds the {KANBAN_ATTACHMENT_MAX_BYTES}-byte "
            f"limit: {name}"
        )
    return data


def preserve_scratch_artifacts(
    conn: sqlite3.Connection,
    task_id: str,
    metadata: dict[str, Any] | None,
    *,
    summary: str | None,
    result: str | None,
) -> dict[str, Any] | None:
    """Copy the completion's deliverables out of the task's scratch folder (inside the
    caller's write transaction, which records them); the metadata naming the copies.
    ``ArtifactPreservationError`` (nothing kept) when one cannot be copied."""
    row = task_fields(conn, task_id, "workspace_kind", "workspace_path")
    if not row or row["workspace_kind"] != "scratch" or not row["workspace_path"]:
        return metadata
    workspace = Path(row["workspace_path"])
    if not is_hermes_scratch(task_id, workspace):
        return metadata
    named = metadata.get("artifacts") if isinstance(metadata, dict) else None
    artifacts = (
        [str(a).strip() for a in named if str(a).strip()] if isinstance(named, list | tuple) else []
    )
    artifacts += [p for p in _named_in_prose(workspace, summary, result) if p not in artifacts]
    if not artifacts:
        return metadata
    real_workspace = workspace.resolve()
    kept: list[str] = []
    copies: list[Path] = []
    try:
        for artifact in artifacts:
            real = Path(os.path.realpath(Path(artifact).expanduser()))
            if not real.is_relative_to(real_workspace):
                kept.append(artifact)  # named as it is: not the worker's to hand over
                continue
            data = _read_capped(real, artifact)
            folder = own_folder(task_id, connection_board(conn))
            copy = write_new(folder, real.name, data)
            copies.append(copy)
            kept.append(str(copy))
            conn.execute(
                "INSERT INTO task_attachments (task_id, filename, stored_path, content_type, "
                "size, uploaded_by, created_at) VALUES (?, ?, ?, NULL, ?, 'kanban_complete', ?)",
                (task_id, copy.name, str(copy), len(data), int(time.time())),
            )
            append_event(
                conn,
                task_id,
                "attached",
                {"filename": copy.name, "size": len(data), "by": "kanban_complete"},
            )
    except BaseException:
        for copy in copies:  # the caller's transaction rolls the rows back
            with contextlib.suppress(OSError):
                copy.unlink()
        raise
    return {**(metadata or {}), "artifacts": kept}
