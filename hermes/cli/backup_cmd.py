"""`hermes backup`: a zip of HERMES_HOME as Hermes Agent 0.19's `hermes backup` makes it,
which its `hermes import ZIP` restores.

Paths in the zip are relative to the home; what 0.19 leaves out is left out (code
checkouts, virtualenvs, caches, earlier backups, SQLite's -wal/-shm/-journal files and
the gateway's pid files), and so are the records of running gateways. Every ``*.db``
file, the store first, is copied with SQLite's online backup API: a consistent copy
while gateways and chats go on writing, never a byte copy of a file hermes holds open
(closing any descriptor of a file drops hermes's POSIX locks on it).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import zipfile
from datetime import datetime
from pathlib import Path

import click

from hermes.errors import HermesError

EXCLUDED_DIRS = {
    "hermes-agent", "__pycache__", ".git", "node_modules", "backups", "checkpoints",
    ".venv", "venv", "site-packages", ".cache", ".tox", ".nox", ".pytest_cache",
    ".mypy_cache", ".ruff_cache", "gateways",
}  # fmt: skip
EXCLUDED_SUFFIXES = (".pyc", ".pyo", ".db-wal", ".db-shm", ".db-journal", ".lock")
EXCLUDED_NAMES = {"gateway.pid", "cron.pid"}


@click.command()
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), default=None,
    help="The zip to write, or a folder for it (default: ~/hermes-backup-DATE.zip).",
)  # fmt: skip
def backup(output: Path | None) -> None:
    """Back up HERMES_HOME into a zip that Hermes Agent 0.19's `hermes import` restores."""
    from hermes.config import hermes_home

    home = hermes_home()
    if not home.is_dir():
        raise HermesError(f"There is no HERMES_HOME at {home} to back up.")
    target = _target(output)
    count = write_backup(home, target)
    click.echo(f"Backup complete: {target} ({count} files).")
    click.echo(f"Restore with Hermes Agent 0.19: hermes import {target.name}")
    _say_where_the_store_is()


def _target(output: Path | None) -> Path:
    stamp = datetime.now().astimezone().strftime("%Y-%m-%d-%H%M%S")  # local, as 0.19 names it
    if output is None:
        return Path.home() / f"hermes-backup-{stamp}.zip"
    output = output.expanduser().resolve()
    if output.is_dir():
        return output / f"hermes-backup-{stamp}.zip"
    return output if output.suffix.lower() == ".zip" else output.with_name(output.name + ".zip")


def write_backup(home: Path, target: Path) -> int:
    """Write the zip of ``home`` to ``target`` (built beside it, then renamed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    count = 0
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds secrets
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in _files(home, skip={target, partial}):
                name = path.relative_to(home).as_posix()
                if path.suffix == ".db":
                    _add_database(zf, path, name, target.parent)
                else:
                    zf.write(path, arcname=name)
                count += 1
        partial.replace(target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return count


def _files(home: Path, skip: set[Path]) -> list[Path]:
    found = []
    for folder, dirs, names in os.walk(home):
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDED_DIRS)
        for name in sorted(names):
            path = Path(folder) / name
            if name in EXCLUDED_NAMES or name.endswith(EXCLUDED_SUFFIXES) or path in skip:
                continue
            if path.is_file() and not path.is_symlink():
                found.append(path)
    return found


def _add_database(zf: zipfile.ZipFile, path: Path, name: str, scratch: Path) -> None:
    """A consistent copy of a live SQLite database, through SQLite's backup API."""
    with tempfile.TemporaryDirectory(dir=scratch, prefix=".hermes-backup-") as folder:
        copy = Path(folder) / "copy.db"
        try:
            source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            try:
                with sqlite3.connect(copy) as dest:
                    source.backup(dest)
                dest.close()
            finally:
                source.close()
        except sqlite3.Error as exc:
            raise HermesError(
                f"Cannot copy {path} consistently ({exc}); nothing was written. "
                "Run `hermes doctor` to see what is wrong with it."
            ) from None
        zf.write(copy, arcname=name)


def _say_where_the_store_is() -> None:
    from hermes.state.location import store_location

    try:
        location = store_location()
    except HermesError:
        return
    if location.url is not None:
        click.echo(
            f"The conversations are in PostgreSQL ({location.label}), not in the zip: "
            "back that database up with pg_dump."
        )
