"""`hermes recover`: salvage a damaged SQLite store into a new one, keep the original.

What SQLite can still read of each table is copied, a range of rows at a time (a range
that fails is read row by row, so one bad page costs only its own rows), into a store
made anew with hermes's current schema. The new file must pass SQLite's integrity check
and open as a hermes store before it takes the store's place; the damaged file (with
its -wal and -shm) is renamed beside it, never changed or deleted. The damaged file is
read with ``immutable=1``: SQLite writes nothing beside it, not even a -shm. Nothing here
opens a store file except through SQLite.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import click
import psutil

from hermes.errors import HermesError

CHUNK = 256  # rows per copied range; a failing range is read row by row
OWN_TABLES = ("schema_version", "messages_fts_watermark")


@dataclass
class Salvage:
    """What a salvage copied and what it could not read."""

    rows: dict[str, int] = field(default_factory=dict)
    lost_rows: dict[str, int] = field(default_factory=dict)
    lost_tables: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.lost_rows and not self.lost_tables


@click.command()
@click.option(
    "--force", is_flag=True, help="Salvage even a store that passes SQLite's check."
)  # fmt: skip
def recover(force: bool) -> None:
    """Salvage what is readable of a damaged state.db into a new store.

    The new store is checked before it takes the old one's place; the damaged file is
    kept beside it as state.db.damaged-DATE. Stop hermes (chats, gateways) first.
    """
    from hermes.state.location import store_location

    location = store_location()
    if location.path is None:
        raise HermesError(
            f"The store is in PostgreSQL ({location.label}): recover it with PostgreSQL's "
            "own tools (pg_dump, or a restore of its backup); `hermes recover` is for a "
            "SQLite file."
        )
    path = location.path
    if not path.exists():
        raise HermesError(f"There is no store at {path} to recover.")
    holders = _holders(path)
    if holders:
        raise HermesError(
            f"{path} is open in process {', '.join(map(str, holders))}: stop hermes (its "
            "chats and gateways) first, then run `hermes recover` again."
        )
    if not force and _healthy(path):
        click.echo(f"{path} passes SQLite's check and opens as a hermes store: nothing to recover.")
        return
    stamp = datetime.now().astimezone().strftime("%Y%m%d-%H%M%S")  # local, like backup
    fresh = path.with_name(f"{path.name}.recovering-{stamp}")
    click.echo(f"Reading what SQLite can of {path} ...", err=True)
    try:
        found = salvage(path, fresh)
        if not any(found.rows.values()) and found.lost_tables:
            raise HermesError(
                f"SQLite can read nothing of {path}: restore it from a backup (`hermes "
                "backup` makes one); nothing was changed."
            )
        verify(fresh)
    except BaseException:
        for leftover in (fresh, Path(f"{fresh}-wal"), Path(f"{fresh}-shm")):
            leftover.unlink(missing_ok=True)
        raise
    kept = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{path}{suffix}").exists():
            os.replace(f"{path}{suffix}", f"{kept}{suffix}")
    os.replace(fresh, path)
    copied = sum(found.rows.values())
    click.echo(
        f"Recovered {copied} rows into a new {path} "
        f"({found.rows.get('sessions', 0)} segments, {found.rows.get('messages', 0)} messages)."
    )
    if not found.complete:
        lost = sum(found.lost_rows.values())
        tables = ", ".join(found.lost_tables) or "none"
        click.echo(f"Could not read {lost} rows; tables lost whole: {tables}.")
    click.echo(f"The damaged file is kept at {kept}; delete it once you are content.")


def salvage(damaged: Path, fresh: Path) -> Salvage:
    """Copy what SQLite can read of ``damaged`` into a new store at ``fresh``."""
    from hermes.state import SessionDB

    SessionDB(db_path=fresh).close()  # the current schema, empty
    found = Salvage()
    conn = sqlite3.connect(fresh.resolve().as_uri(), uri=True, isolation_level=None)
    try:
        with _readable(damaged, fresh.parent) as source:
            _attach(conn, source)
            for table in _copied_tables(conn):
                _copy_table(conn, table, found)
            conn.execute("DETACH DATABASE old")
        conn.execute("PRAGMA journal_mode = DELETE")  # no -wal/-shm left when renamed
    finally:
        conn.close()
    return found


@contextlib.contextmanager
def _readable(damaged: Path, scratch: Path) -> Iterator[Path]:
    """``damaged`` itself while SQLite can read its schema; else, where the sqlite3
    program is installed, what its ``.recover`` rebuilds of it (it reads the pages one
    by one, the schema's too) in a scratch file beside."""
    if _schema_readable(damaged) or shutil.which("sqlite3") is None:
        yield damaged
        return
    with tempfile.TemporaryDirectory(dir=scratch, prefix=".hermes-recover-") as folder:
        rebuilt = Path(folder) / "rebuilt.db"
        dump = subprocess.run(
            ["sqlite3", "-readonly", f"{damaged.resolve().as_uri()}?immutable=1", ".recover"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        load = subprocess.run(
            ["sqlite3", str(rebuilt)], input=dump.stdout, capture_output=True, text=True,
            check=False,
        )  # fmt: skip
        yield rebuilt if load.returncode == 0 and rebuilt.exists() else damaged


def _schema_readable(path: Path) -> bool:
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.DatabaseError:
        return False
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return True
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def _attach(conn: sqlite3.Connection, damaged: Path) -> None:
    """``damaged`` as ``old``, read-only: immutable when SQLite takes it so (nothing
    written beside it), else read-only with its -wal (a store left in WAL mode)."""
    problem = None
    for query in ("mode=ro&immutable=1", "mode=ro"):
        try:
            conn.execute("ATTACH DATABASE ? AS old", (f"{damaged.resolve().as_uri()}?{query}",))
            conn.execute("SELECT count(*) FROM old.sqlite_master").fetchone()
            return
        except sqlite3.DatabaseError as exc:
            problem = exc
            try:
                conn.execute("DETACH DATABASE old")
            except sqlite3.DatabaseError:
                pass
    raise HermesError(
        f"SQLite cannot read {damaged} at all ({problem}): restore it from a backup "
        "(`hermes backup` makes one); nothing was changed."
    )


def verify(fresh: Path) -> None:
    """The new file passes SQLite's integrity check and opens as a hermes store."""
    from hermes.state import SessionDB

    conn = sqlite3.connect(fresh.resolve().as_uri(), uri=True)
    try:
        result = conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
    if result != "ok":
        raise HermesError(f"The salvaged store failed SQLite's check ({result}); nothing replaced.")
    with SessionDB(db_path=fresh, read_only=True) as db:
        db.list_conversations(limit=1)


def _copied_tables(conn: sqlite3.Connection) -> list[str]:
    """The new schema's plain tables, less SQLite's, the full-text index and its shadow
    tables, and what the new store keeps of its own: the schema version, and the index's
    watermark (at 0, every salvaged message is searched directly until the store folds
    them into the index, as it does any deferred row)."""
    rows = conn.execute(
        "SELECT name, sql FROM main.sqlite_master WHERE type = 'table' ORDER BY rowid"
    ).fetchall()
    virtual = [name for name, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL")]
    return [
        name
        for name, _ in rows
        if not name.startswith("sqlite_")
        and name not in OWN_TABLES
        and name not in virtual
        and not any(name.startswith(f"{v}_") for v in virtual)
    ]


def _copy_table(conn: sqlite3.Connection, table: str, found: Salvage) -> None:
    try:
        old = [row[1] for row in conn.execute(f'PRAGMA old.table_info("{table}")')]
        top = conn.execute(f'SELECT max(rowid) FROM old."{table}"').fetchone()[0] or 0
    except sqlite3.DatabaseError:
        found.lost_tables.append(table)
        return
    new = [row[1] for row in conn.execute(f'PRAGMA main.table_info("{table}")')]
    if not old:
        return  # an older store without this table: nothing to bring
    columns = ", ".join(f'"{c}"' for c in new if c in old)
    copy = (
        f'INSERT OR IGNORE INTO main."{table}" ({columns}) '
        f'SELECT {columns} FROM old."{table}" WHERE rowid BETWEEN ? AND ?'
    )
    before = conn.execute(f'SELECT count(*) FROM main."{table}"').fetchone()[0]
    lost = 0
    for start in range(0, top + 1, CHUNK):
        end = start + CHUNK - 1
        try:
            conn.execute(copy, (start, end))
        except sqlite3.DatabaseError:
            for rowid in range(start, end + 1):
                try:
                    conn.execute(copy, (rowid, rowid))
                except sqlite3.DatabaseError:
                    lost += 1
    after = conn.execute(f'SELECT count(*) FROM main."{table}"').fetchone()[0]
    found.rows[table] = after - before
    if lost:
        found.lost_rows[table] = lost


def _healthy(path: Path) -> bool:
    """The file passes SQLite's quick check and opens as a hermes store."""
    from hermes.state import SessionDB
    from hermes.state.errors import StateError

    conn = None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            return False
    except sqlite3.DatabaseError:
        return False
    finally:
        if conn is not None:
            conn.close()
    try:
        with SessionDB(db_path=path, read_only=True) as db:
            db.list_conversations(limit=1)
    except StateError:
        return False
    return True


def _holders(path: Path) -> list[int]:
    """Other processes that have the store open."""
    target = str(path.resolve())
    found = []
    for process in psutil.process_iter(["pid"]):
        if process.pid == os.getpid():
            continue
        try:
            if any(f.path == target for f in process.open_files()):
                found.append(process.pid)
        except psutil.Error:
            continue
    return found
