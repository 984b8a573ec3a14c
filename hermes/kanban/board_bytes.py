"""A damaged board's bytes, read in a child process so this process's SQLite locks live.

Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's
included, so hermes never opens a board with ``open()`` in a process that may have it open
through sqlite3. That reason is per process: a child process holds none of our locks, so it
may read the file. Only a board SQLite has already refused gets here (a busy or locked
board is no damage and never does): the child copies it, and its ``-wal`` beside it, to
``<name>.corrupt.<sha256 prefix>.bak`` (a temporary name, fsync, then a link that never
replaces an existing copy, so the same bytes refused again and again are copied once) and
prints the copy's path, the sha256 and the first bytes as JSON. A temporary file carries its
child's pid, so a child killed mid-copy (the timeout) leaves nothing the next one keeps.

This file is also the child's program: run by path in isolated mode (``python -I``), it
imports only the standard library.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

_SQLITE_MAGIC = b"SQLite format 3\x00"
HEAD_BYTES = 16
# Copying a large board takes a while on a slow disk; past this the copy is given up.
COPY_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class DamagedCopy:
    """The byte-for-byte copy of a damaged board and what its bytes say."""

    backup: Path
    sha256: str
    head: bytes

    def signature(self) -> str | None:
        """What overwrote the file's start, as 0.19 names it, when it is no SQLite header."""
        if self.head.startswith(_SQLITE_MAGIC):
            return None
        if self.head.startswith(b"SQLit") and _tls_record_at(self.head, 5):
            return "TLS record header detected at byte offset 5"
        if _tls_record_at(self.head, 0):
            return "TLS record header detected at byte offset 0"
        return None


def _tls_record_at(data: bytes, offset: int) -> bool:
    """A TLS record header (content type, version 3.x, a record length) at ``offset``."""
    if len(data) < offset + 5:
        return False
    length = int.from_bytes(data[offset + 3 : offset + 5], "big")
    return (
        data[offset] in {0x14, 0x15, 0x16, 0x17}
        and data[offset + 1] == 0x03
        and data[offset + 2] <= 0x04
        and 0 < length <= 18432
    )


def copy_damaged(path: Path) -> DamagedCopy | None:
    """Copy the damaged board ``path`` aside in a child process; ``None`` if it could not."""
    try:
        run = subprocess.run(
            [sys.executable, "-I", str(Path(__file__).resolve()), str(path)],
            capture_output=True,
            text=True,
            timeout=COPY_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("Could not copy the damaged Kanban board %s aside: %s", path, exc)
        return None
    if run.returncode != 0:
        why = (run.stderr.strip().splitlines() or ["no output"])[-1]
        log.warning("Could not copy the damaged Kanban board %s aside: %s", path, why)
        return None
    try:
        found = json.loads(run.stdout)
        return DamagedCopy(Path(found["backup"]), found["sha256"], bytes.fromhex(found["head"]))
    except (ValueError, KeyError, TypeError):
        log.warning("Could not copy the damaged Kanban board %s aside: %r", path, run.stdout)
        return None


# --- the child's side: only here is a board's file opened outside SQLite -----------------


def _place(partial: Path, final: Path) -> None:
    """``partial`` at ``final`` unless a copy is already there (a link never replaces)."""
    try:
        os.link(partial, final)
    except FileExistsError:
        pass
    except OSError:  # a filesystem without hard links
        if not final.exists():
            os.replace(partial, final)


def _sweep_partials(source: Path) -> None:
    """Remove the temporary copies of ``source`` whose child is gone (killed mid-copy)."""
    for partial in source.parent.glob(f".{glob.escape(source.name)}.*.partial"):
        pid = partial.name.removeprefix(f".{source.name}.").split(".", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue  # another child's copy in progress (or not one of ours)
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process, or no pid at all: leave it be
    return True


def _copy(source: Path, final_for: Callable[[str], Path]) -> tuple[Path, str, bytes]:
    """Copy ``source`` beside itself through a temporary file; the copy's path (chosen by
    ``final_for(sha256)``), the sha256 and the first bytes."""
    digest = hashlib.sha256()
    head = b""
    _sweep_partials(source)
    prefix = f".{source.name}.{os.getpid()}."
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".partial", dir=source.parent)
    partial = Path(name)
    try:
        with open(source, "rb") as board, os.fdopen(fd, "wb") as out:
            while chunk := board.read(1 << 20):
                if len(head) < HEAD_BYTES:
                    head = (head + chunk)[:HEAD_BYTES]
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        final = final_for(digest.hexdigest())
        _place(partial, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
    return final, digest.hexdigest(), head


def _main(argv: list[str]) -> int:
    source = Path(argv[0]).resolve()
    backup, sha256, head = _copy(
        source, lambda digest: source.with_name(f"{source.name}.corrupt.{digest[:16]}.bak")
    )
    wal = source.with_name(source.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:  # commits not yet in the main file
        _copy(wal, lambda _digest: backup.with_name(backup.name + "-wal"))
    directory = os.open(source.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    print(json.dumps({"backup": str(backup), "sha256": sha256, "head": head.hex()}))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
