"""What is wrong with a state store: one sentence saying what, one saying what to do.

Every surface that opens a store (the commands, `hermes doctor`, the gateway, the
library) explains a problem with the same ``Diagnosis``. The backends raise it as a
``StateError`` whose ``diagnosis`` attribute keeps the two sentences apart, so a report
can print the fix once, beside the problem, instead of a generic one.
Reading a file to diagnose it never writes to it.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hermes.state.errors import (
    CorruptStoreError,
    HermesAgentStoreError,
    StateError,
    StoreUnavailableError,
)

BACKUP_FIX = (
    "Stop hermes, then run `hermes recover` (it salvages what is readable into a new "
    "store and keeps the damaged file), or restore the file from a backup."
)


@dataclass(frozen=True)
class Diagnosis:
    """``kind`` names the problem (``empty``, ``foreign``, ``not_sqlite``, ...)."""

    kind: str
    problem: str
    fix: str
    detail: str = ""  # what the driver said, when the problem sentence quotes it

    def __str__(self) -> str:
        return f"{self.problem} {self.fix}"

    def error(self) -> StateError:
        """The error to raise for this problem, carrying the diagnosis."""
        kind: type[StateError] = (
            CorruptStoreError if self.kind in _CORRUPT else StoreUnavailableError
        )
        if self.kind in ("newer", "older"):
            kind = StateError
        if self.kind == "hermes_agent":
            kind = HermesAgentStoreError
        exc = kind(str(self))
        exc.diagnosis = self
        return exc


_CORRUPT = ("foreign", "not_sqlite", "damaged")


def diagnosis_of(exc: BaseException) -> Diagnosis | None:
    return getattr(exc, "diagnosis", None)


# -- a SQLite file ----------------------------------------------------------------


def file_problem(path: Path) -> Diagnosis | None:
    """A problem visible before using the file as a database (None: none seen).

    Read through ``os.stat`` and SQLite only, never a descriptor of our own: closing
    any descriptor of the file drops every lock SQLite holds on it in this process,
    and another process then deletes the -wal this process still writes to (see
    docs/design.md, "No descriptor of a store outside SQLite").
    """
    if path.is_dir():
        return Diagnosis(
            "folder",
            f"{path} is a folder, not a state database file.",
            "Move it aside, or point state.url / HERMES_HOME elsewhere.",
        )
    try:
        size = path.stat().st_size
    except OSError as exc:
        return _unreadable(path, exc.strerror)
    if not os.access(path, os.R_OK):
        return _unreadable(path, os.strerror(errno.EACCES))
    if size == 0:
        return empty(path)
    if not _has_sqlite_header(path):
        return Diagnosis(
            "not_sqlite",
            f"{path} is not a SQLite database at all (it does not start with SQLite's header); "
            "nothing was changed.",
            "If it holds nothing you need, move it aside and hermes starts a new store; "
            "otherwise restore state.db from a backup.",
        )
    return None


def _unreadable(path: Path, reason: str | None) -> Diagnosis:
    return Diagnosis(
        "unreadable",
        f"Cannot read {path}: {reason}.",
        "Check the file's owner and permissions.",
    )


def _has_sqlite_header(path: Path) -> bool:
    """SQLite itself reads the header: its descriptors outlive our close while another
    connection of this process holds a lock on the file. Anything but "not a database"
    (busy, a -shm it cannot make) is left to the open that follows."""
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True, timeout=0
        )
    except sqlite3.Error:
        return True
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as exc:
        return "not a database" not in str(exc)
    finally:
        conn.close()
    return True


def read_only(path: Path) -> Diagnosis | None:
    """The store file, or its folder, cannot be written (a read-only mount or mode)."""
    import os

    if os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
        return None
    return Diagnosis(
        "read_only",
        f"{path} is read-only (the file or its folder cannot be written): hermes can read "
        "its conversations but not add to them.",
        "Reading commands work as they are; to chat, make the folder writable (or copy "
        "HERMES_HOME somewhere writable), or browse with `hermes chat --read-only`.",
    )


def empty(path: Path) -> Diagnosis:
    return Diagnosis(
        "empty",
        f"{path} is an empty file: it holds no conversations yet.",
        "Run `hermes chat` once to start a store in it, or remove it.",
    )


def foreign(path: Path, tables: list[str]) -> Diagnosis:
    shown = ", ".join(sorted(tables)[:5]) + (" …" if len(tables) > 5 else "")
    return Diagnosis(
        "foreign",
        f"{path} is a SQLite database of another program (tables: {shown}), not a hermes "
        "state store; nothing was changed.",
        "Point hermes at another file (move this one out of HERMES_HOME, or set state.url).",
    )


def damaged(path: Path, detail: str) -> Diagnosis:
    return Diagnosis(
        "damaged",
        f"{path} is a damaged SQLite database ({detail}); nothing was changed.",
        BACKUP_FIX,
    )


def open_failed(path: Path, detail: str) -> Diagnosis:
    """Why SQLite failed to open ``path`` ("disk I/O error", "disk is full", ...): damage
    only when the file itself fails SQLite's check. A healthy file that cannot be
    opened is a problem beside it (a full disk, a read-only mount, a failing disk or a
    file-size limit), and restoring it from a backup would overwrite good data."""
    if not _file_checks_out(path):
        return damaged(path, detail)
    if _disk_full(path.parent):
        return Diagnosis(
            "disk_full",
            f"The disk holding {path} is full, so hermes cannot write beside the store "
            f"({detail}); the file itself is healthy.",
            "Free some space on that disk, then run the command again; do not restore it.",
            detail,
        )
    found = read_only(path)
    if found is not None:
        return found
    return Diagnosis(
        "cannot_write",
        f"hermes cannot write beside {path} ({detail}), though the file itself is healthy: "
        "the disk may be full for this user, failing, or a file-size limit (ulimit -f) applies.",
        "Check the disk (df, dmesg) and `ulimit -f`, then run the command again; do not "
        "restore the file.",
        detail,
    )


def _file_checks_out(path: Path) -> bool:
    """SQLite's quick_check of the file alone, read-only (immutable: it writes nothing
    beside it, not even a -shm file)."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return False
    try:
        return bool(conn.execute("PRAGMA quick_check").fetchone()[0] == "ok")
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _disk_full(folder: Path) -> bool:
    try:
        found = os.statvfs(folder)
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < 1024 * 1024


# -- the schema -------------------------------------------------------------------


def newer_schema(location: str, current: int, latest: int) -> Diagnosis:
    return Diagnosis(
        "newer",
        f"The state store {location} was written by a newer hermes (schema {current}, this "
        f"one knows {latest}).",
        "Upgrade hermes (pip install -U hermes-agent-runtime).",
    )


# The command that upgrades a Hermes Agent store in place (hermes/cli/import_cmd.py).
UPGRADE_COMMAND = "hermes import hermes-agent"


def hermes_agent_store(location: str) -> Diagnosis:
    """A Hermes Agent 0.19 state.db where hermes keeps its store: not a newer hermes."""
    return Diagnosis(
        "hermes_agent",
        f"{location} is a Hermes Agent 0.19 store, not yet upgraded for hermes.",
        f"Run `{UPGRADE_COMMAND}` to upgrade it in place (a backup is kept beside it); "
        "until then hermes only reads it.",
    )


# Each diagnosis its own sentence and remedy (as newer_schema): a template would hide what the
# user reads.
def older_schema(location: str, current: int, latest: int) -> Diagnosis:
    return Diagnosis(
        "older",
        f"The state store {location} needs an upgrade (schema {current}, this hermes uses "
        f"{latest}), which a read-only command cannot make.",
        "Run any hermes command that writes (e.g. `hermes chat`) once to upgrade it.",
    )


# -- PostgreSQL -------------------------------------------------------------------

_AUTH_WORDS = (
    "password authentication failed",
    "no password supplied",
    "pg_hba.conf",
    'role "',
    "authentication failed",
)


CONFIGURED_URL = "state.url / HERMES_STATE_URL"
CONNECT_FAILURES = ("no_database", "auth", "unreachable")


def postgres_connect_failed(label: str, reason: str, where: str = CONFIGURED_URL) -> Diagnosis:
    """Why connecting failed: no such database, the login refused, or no server.
    ``where``: where the URL came from (the configuration, or a command's option)."""
    if 'database "' in reason and "does not exist" in reason:
        database = label.rsplit("/", 1)[-1]
        return Diagnosis(
            "no_database",
            f"PostgreSQL at {label} answers but has no database {database} ({reason}).",
            f"Create it (createdb {database}) or fix the database name in {where}.",
            reason,
        )
    if any(word in reason for word in _AUTH_WORDS):
        return Diagnosis(
            "auth",
            f"PostgreSQL at {label} refused the login ({reason}).",
            f"Check the user and password in {where} (or ~/.pgpass).",
            reason,
        )
    return Diagnosis(
        "unreachable",
        f"Cannot reach PostgreSQL at {label} ({reason}).",
        f"Check the host and port in {where} and that the server runs.",
        reason,
    )


def url_given_by(exc: StateError, where: str) -> StateError:
    """``exc`` again, its fix naming ``where`` the URL came from when it was a failed
    connection (the backend cannot know: it assumes the configuration)."""
    found = diagnosis_of(exc)
    if found is None or found.kind not in CONNECT_FAILURES:
        return exc
    fix = found.fix.replace(CONFIGURED_URL, where)
    return Diagnosis(found.kind, found.problem, fix, found.detail).error()


def writers_of_a_gone_file(path: Path) -> list[int]:
    """Processes that hold a deleted or replaced copy of the database at ``path`` (or a
    deleted -wal of it) open.

    SQLite writes an unlinked file as if nothing happened; what such a process stores
    after the swap is lost when it exits. Reads ``/proc`` (Linux; elsewhere: none found),
    and sees only the processes this user may inspect.
    """
    target = os.path.realpath(path)
    try:
        found = os.stat(target)
        current: tuple[int, int] | None = (found.st_dev, found.st_ino)
    except OSError:
        current = None
    holders = []
    for process in _processes():
        if any(_is_gone_copy(fd, target, current) for fd in _open_files(process)):
            holders.append(int(process.name))
    return sorted(holders)


def _processes() -> list[Path]:
    try:
        return [p for p in Path("/proc").iterdir() if p.name.isdigit()]
    except OSError:
        return []


def _open_files(process: Path) -> list[Path]:
    try:
        return list((process / "fd").iterdir())
    except OSError:  # gone meanwhile, or another user's
        return []


def _is_gone_copy(fd: Path, target: str, current: tuple[int, int] | None) -> bool:
    try:
        link = os.readlink(fd)
        if link in (f"{target} (deleted)", f"{target}-wal (deleted)"):
            return True  # the file, or the log its commits go to
        if link != target:
            return False
        opened = os.stat(fd)  # the open file itself, not what the path names now
    except OSError:
        return False
    return (opened.st_dev, opened.st_ino) != current
