"""Upgrading a Hermes Agent 0.19 state.db in place, where it lies, verified.

The new store is built next to the old one and then put in its place with one atomic
``rename``; the original is never edited. Why not one transaction inside the file:
Hermes Agent's tables carry the same names as hermes's (``sessions``, ``messages``,
``schema_version``, ``compression_locks``) with other columns, and the import goes
through the store's own API (its transactions, routing and invariants), which cannot
run inside one outer transaction. Building beside it keeps both properties: whatever
happens, ``state.db`` is either the untouched Hermes Agent store or the complete,
verified hermes store, never a mix.

Step by step, under an exclusive lock on the store's folder so two hermes processes
never race:

1. the write-ahead log is checkpointed into the file (refused if another program
   holds it open, i.e. Hermes Agent still runs), so the file alone holds everything;
2. a backup ``state.db.hermes-agent-<date>.bak`` (0600) is written beside it, through
   a temporary name and a rename; an identical backup already there is kept;
3. the backup is imported into ``state.db.upgrading`` (any leftover of a run that
   was killed is removed first) and every message verified: counts and a sha256 over
   the content of every row, as ``hermes import hermes-agent`` verifies;
4. if the original changed meanwhile, nothing is replaced; else ``state.db.upgrading``
   replaces ``state.db`` by rename (the old, now empty, log files removed first).

Killed at any point, a re-run starts again from step 1 and ends with one store;
the original stays in the backup. ``memories/`` and the rest of the home are not
touched.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import filecmp
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hermes.compat import cron_jobs, importer
from hermes.compat.session_db import SessionDB
from hermes.state.errors import StateError
from hermes.state.store import is_hermes_agent_store

WORK_SUFFIX = ".upgrading"
LOCK_SUFFIX = ".upgrade-lock"  # where earlier versions locked; removed when seen
_SIDE_FILES = ("-wal", "-shm", "-journal")
# What a damaged or crafted source raises while it is read and mapped.
_BAD_SOURCE = (sqlite3.Error, ValueError, TypeError, KeyError, OverflowError, RecursionError)


class UpgradeRefusedError(StateError):
    """The store could not be upgraded; nothing was changed (the sentence says why)."""


@dataclass(frozen=True)
class UpgradeReport:
    """An upgrade done: where the original is kept and what the import verified."""

    path: Path
    backup: Path
    imported: importer.ImportReport

    def summary(self) -> str:
        report = self.imported
        return (
            f"Upgraded {self.path} in place: {report.sessions} sessions and {report.messages} "
            f"messages, every one verified (sha256:{report.checksum[:12]}…); the Hermes Agent "
            f"original is kept as {self.backup.name}."
        )


def upgrade_in_place(
    path: Path, *, progress: importer.Progress | None = None
) -> UpgradeReport | None:
    """Upgrade the Hermes Agent store at ``path``; None if it is not one (any more)."""
    with _exclusive(path):
        if not is_hermes_agent_store(path):
            return None  # another process upgraded it while this one waited
        _settle(path)
        before = _fingerprint(path)
        backup, made_now = _backup(path)
        work = path.with_name(path.name + WORK_SUFFIX)
        _remove_database(work)
        try:
            imported = _build(backup, work, progress, name=path)
            _to_rollback_journal(work)
        except UpgradeRefusedError:
            _remove_database(work)
            if made_now:  # the original is still in place, unchanged
                backup.unlink(missing_ok=True)
            raise
        except BaseException:
            _remove_database(work)
            raise
        if _fingerprint(path) != before:
            _remove_database(work)
            raise UpgradeRefusedError(
                f"{path} changed during the upgrade (is Hermes Agent running?); nothing was "
                "replaced. Stop Hermes Agent and run the upgrade again."
            )
        for suffix in _SIDE_FILES:  # empty after step 1; stale beside the new file
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        os.replace(work, path)
        _sync_folder(path.parent)
        return UpgradeReport(path=path, backup=backup, imported=imported)


@contextlib.contextmanager
def read_only_view(path: Path) -> Iterator[SessionDB]:
    """The Hermes Agent store at ``path`` as a read-only hermes store, ``path`` unchanged.

    Its rows are imported into a private temporary store (removed afterwards), which
    is then opened read-only: every reading command works, every write is refused.
    """
    with tempfile.TemporaryDirectory(prefix="hermes-agent-view-") as folder:
        copy = Path(folder) / "state.db"
        _build(path, copy, None)
        db = SessionDB(db_path=copy, read_only=True)
        try:
            yield db
        finally:
            db.close()


def _build(
    source: Path, target: Path, progress: importer.Progress | None, *, name: Path | None = None
) -> importer.ImportReport:
    """Import the Hermes Agent store ``source`` into a new store at ``target``, verified;
    a refusal names the store as ``name`` (the original, when ``source`` is its backup)."""
    try:
        conn = importer.open_source(source)
    except importer.NotHermesAgentStoreError as exc:
        text = str(exc).replace(str(source), str(name or source))
        if "nothing was changed" not in text:
            text += " Nothing was changed."
        raise UpgradeRefusedError(text) from exc
    try:
        db = SessionDB(db_path=target, synchronous="normal")
        try:
            report = importer.import_store(conn, db, progress=progress)
            # The home's scheduled jobs move in with the store they now live in.
            cron_jobs.import_jobs(cron_jobs.jobs_file((name or source).parent), db.backend)
            return report
        finally:
            db.close()
    except _BAD_SOURCE as exc:
        raise UpgradeRefusedError(
            f"The Hermes Agent store {name or source} cannot be read as one ({_short(exc)}); nothing "
            "was changed."
        ) from exc
    finally:
        conn.close()


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


# -- the steps --------------------------------------------------------------------------


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    # The lock is on the store's folder, which the upgrade never replaces: a lock file
    # would have to stay behind (removing it lets a waiting process and a new one each
    # lock a different file), and the store file itself is renamed over.
    _forget_old_lock_file(path)
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _forget_old_lock_file(path: Path) -> None:
    """The lock file an earlier hermes left beside the store: unused now."""
    try:
        path.with_name(path.name + LOCK_SUFFIX).unlink(missing_ok=True)
    except OSError:
        pass


def _settle(path: Path) -> None:
    """Move the write-ahead log into the file; refuse while another program uses it."""
    try:
        conn = sqlite3.connect(path, timeout=2.0, isolation_level=None)
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise UpgradeRefusedError(
            f"The Hermes Agent store {path} cannot be read ({_short(exc)}); nothing was changed."
        ) from exc
    if busy:
        raise UpgradeRefusedError(
            f"{path} is in use by another program (is Hermes Agent running?); stop it and "
            "run the upgrade again. Nothing was changed."
        )


def _fingerprint(path: Path) -> tuple[object, ...]:
    """What changes when anyone writes to the store (its file and its log)."""
    found: list[object] = []
    for suffix in ("", "-wal"):
        try:
            st = path.with_name(path.name + suffix).stat()
            found.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            found.append(None)
    return tuple(found)


def _backup(path: Path) -> tuple[Path, bool]:
    """A copy of the settled file beside it (0600), or an identical one already there;
    and whether this call made it."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d")
    for n in range(1, 1000):
        suffix = "" if n == 1 else f"-{n}"
        backup = path.with_name(f"{path.name}.hermes-agent-{stamp}{suffix}.bak")
        if not backup.exists():
            break
        if filecmp.cmp(path, backup, shallow=False):
            return backup, False  # a killed run made it: the same bytes
    partial = backup.with_name(backup.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out, path.open("rb") as original:
        shutil.copyfileobj(original, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, backup)
    _sync_folder(path.parent)
    return backup, True


def _to_rollback_journal(path: Path) -> None:
    """Leave the new store as one self-contained file, with no log to carry along."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()
    with path.open("rb+") as handle:
        os.fsync(handle.fileno())


def _remove_database(path: Path) -> None:
    for suffix in ("", *_SIDE_FILES):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
