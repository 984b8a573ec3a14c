"""Small file-system helpers shared by the tools: private folders and atomic writes.

Every state file the tools keep (process records, memory files, event spools) is
written through ``atomic_write_text`` so a reader never sees half a file, even when
the writer dies mid-way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Self


def private_dir(path: Path) -> Path:
    """Create ``path`` (0700) with its parents if missing and return it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def atomic_write_text(
    path: Path, text: str, mode: int | None = 0o600, *, dir_fd: int | None = None
) -> None:
    """Write ``text`` to ``path`` through a temporary file and ``os.replace``.

    ``mode=None`` keeps an existing file's mode (or the umask default for a new
    file): that is what a user's own files want, while state files want 0600.
    With ``dir_fd``, ``path`` is a name inside that open folder, and every step is
    taken there (see ``folder_opened_as``).
    """
    exact = True  # an explicit or inherited mode is applied as is, past the umask
    if mode is None:
        try:
            mode = os.stat(path, dir_fd=dir_fd).st_mode & 0o7777
        except FileNotFoundError:
            mode, exact = 0o666, False  # a new user file: the umask decides, as for any tool
    # The name is unique per process and thread so concurrent writers never share it.
    tmp = path.with_name(
        f".{path.name}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:8]}.tmp"
    )
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if exact:
            os.chmod(tmp, mode, dir_fd=dir_fd)
        os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


@contextlib.contextmanager
def folder_opened_as(folder: Path) -> Iterator[int | None]:
    """``folder`` opened, and checked to be that very folder and not one a link swapped
    into its path reaches: writes made inside the descriptor stay where ``folder`` was
    checked, whatever is renamed or linked meanwhile. None where the system cannot say
    which folder a descriptor is (no ``/proc``): the caller writes by path then.
    """
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            opened = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            yield None
            return
        if opened != str(folder):
            raise FolderMovedError(f"{folder} now leads to {opened}")
        yield fd
    finally:
        os.close(fd)


class FolderMovedError(OSError):
    """A folder's path led elsewhere when it was opened (a link was swapped in)."""


class JsonRecord:
    """A dataclass kept as a JSON object (a record file, a spooled event); a key it does
    not know (written by a later version) is dropped when it is read back."""

    __dataclass_fields__: ClassVar[dict[str, Any]]  # a subclass is a dataclass

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def write_json(path: Path, data: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or None if it is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None
