"""Turn locks: one gateway at a time runs a turn of a conversation, whichever process or
host it lives in (invariant 11 across gateways sharing a store).

A turn lock is held while a turn runs and is freed by the operating system (SQLite) or
the server (PostgreSQL) when its process dies, so it costs no durable write and needs
no TTL or reclaim. The SQLite kind is here: a POSIX byte-range lock on
``<database>.turns``, one byte per conversation at an offset from a stable hash of its
id. The PostgreSQL kind is in ``postgres/turn_lock.py``.

Both are exclusive within a process too: a second ``try_lock`` of a held conversation
is refused, whichever SessionDB (handle) asks. ``unlock`` of a conversation this handle
does not hold does nothing; closing a handle gives back what it holds.
"""

from __future__ import annotations

import errno
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from hermes.state.backend import conversation_key
from hermes.state.errors import StateError, StoreUnavailableError

try:
    import fcntl
except ImportError:  # Windows: no POSIX locks, so turns are serialised in-process only
    fcntl = None  # type: ignore[assignment]


@dataclass
class _LockFile:
    """The one descriptor a process keeps on a lock file, and which handle holds what.

    POSIX record locks belong to the process, and closing *any* descriptor of the file
    drops all of them: so exactly one descriptor per file per process, closed only when
    no handle uses it any more (and so none holds a lock).
    """

    key: str  # the lock file's real path
    fd: int | None  # None where fcntl does not exist
    pid: int
    users: int = 0
    held: dict[int, object] = field(default_factory=dict)  # offset -> the holding handle


_files: dict[str, _LockFile] = {}
_files_lock = threading.Lock()  # guards _files and every _LockFile


class FileTurnLocks:
    """The turn locks of one SQLite database, for one SessionDB (a handle)."""

    instant = True  # fcntl without waiting: a system call, no I/O

    def __init__(self, database: Path) -> None:
        self.database = database
        self.path = Path(os.path.abspath(f"{database}.turns"))  # the cwd may change later
        self._file: _LockFile | None = None  # attached at the first try_lock
        self._closed = False

    def try_lock(self, conversation_id: str) -> bool:
        """Take the conversation's lock without waiting; False if anyone holds it."""
        offset = conversation_key(conversation_id)
        with _files_lock:
            file = self._attach()
            if offset in file.held:
                return False
            if file.fd is not None:
                try:
                    fcntl.lockf(file.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
                except OSError as exc:
                    if exc.errno in (errno.EACCES, errno.EAGAIN):
                        return False  # another process holds it
                    raise StateError(f"Could not take a turn lock in {self.path}: {exc}.") from exc
            file.held[offset] = self
            return True

    def unlock(self, conversation_id: str) -> None:
        """Give the lock back; nothing happens unless this handle holds it."""
        with _files_lock:
            if self._file is not None:
                self._release(self._file, conversation_key(conversation_id))

    def close(self) -> None:
        with _files_lock:
            file, self._file, self._closed = self._file, None, True
            if file is None or file.pid != os.getpid():
                return
            for offset in [o for o, holder in file.held.items() if holder is self]:
                self._release(file, offset)
            file.users -= 1
            if file.users <= 0:
                if file.fd is not None:
                    os.close(file.fd)
                if _files.get(file.key) is file:
                    del _files[file.key]

    def _release(self, file: _LockFile, offset: int) -> None:
        if file.held.get(offset) is not self:
            return
        del file.held[offset]
        if file.fd is not None:
            try:
                fcntl.lockf(file.fd, fcntl.LOCK_UN, 1, offset)
            except OSError as exc:
                raise StateError(f"Could not give back a turn lock in {self.path}: {exc}.") from exc

    def _attach(self) -> _LockFile:
        if self._closed:
            raise StateError(f"The state store {self.database} is closed.")
        if self._file is not None:
            if self._file.pid != os.getpid():
                raise StateError(
                    "A SessionDB cannot be used across fork(); open a new one in the child."
                )
            return self._file
        key = os.path.realpath(self.path)
        file = _files.get(key)
        if file is None or file.pid != os.getpid():  # none yet, or the parent's before fork
            file = _files[key] = _LockFile(key=key, fd=self._open(), pid=os.getpid())
        file.users += 1
        self._file = file
        return file

    def _open(self) -> int | None:
        if fcntl is None:
            return None
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreUnavailableError(
                f"Cannot open the turn lock file {self.path}: {exc.strerror}. Check the "
                "folder's permissions."
            ) from exc
