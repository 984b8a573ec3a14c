"""`hermes migrate`: copy a whole state store between SQLite and PostgreSQL, verified.

The copy itself is ``hermes.state.copy.copy_store``; this module opens the two stores
(the source read-only, so it is never changed), shows progress on stderr and prints
the verified counts and checksum. A failed copy into a SQLite file this command
created removes that file, so a retry starts clean.
"""

from __future__ import annotations

from pathlib import Path

import click

from hermes.cli._progress import progress_display
from hermes.cli._store import open_db
from hermes.errors import HermesError
from hermes.state import SessionDB
from hermes.state.copy import CopyReport, TargetNotEmptyError, copy_store, table_counts
from hermes.state.diagnose import url_given_by
from hermes.state.errors import StateError
from hermes.state.location import StoreLocation, location_of


@click.command()
@click.option(
    "--from",
    "source",
    required=True,
    metavar="PATH|URL",
    help="The store to copy: a SQLite file or a postgresql:// URL. Opened read-only.",
)
@click.option(
    "--to",
    "target",
    required=True,
    metavar="PATH|URL",
    help="The empty store to copy into: a SQLite file (created if missing) or a postgresql:// URL.",
)
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=2000,
    show_default=True,
    help="Rows written per target transaction.",
)
@click.option(
    "--dry-run", is_flag=True, help="Only count what would be copied and check the target is empty."
)
def migrate(source: str, target: str, batch: int, dry_run: bool) -> None:
    """Copy a state store into an empty one, SQLite to PostgreSQL or back.

    Each of --from and --to is a SQLite file path or a postgresql:// URL. Every
    conversation, message (with its id), compression lease, gateway route and queued
    gateway input is copied in batches, and the search index is rebuilt on the target.
    Then the copy is verified: the row count of every table and a sha256 checksum of
    every message must be equal on both sides.

    The source is opened read-only and never changed. The target must be empty. Stop
    every hermes process (chats, the gateway) first: a write during the copy makes the
    verification fail.

    \b
    Examples:
      hermes migrate --from ~/.hermes/state.db --to postgresql://hermes@db.lan/hermes
      hermes migrate --from postgresql://hermes@db.lan/hermes --to backup.db
    """
    src, dst = location_of(source), location_of(target)
    _refuse_same_store(src, dst)
    if src.path is not None and not src.path.is_file():
        raise HermesError(f"There is no state store at {src.path}; check the --from path.")
    if dry_run:
        _dry_run(src, dst)
        return
    created = dst.path is not None and not dst.path.exists()
    with _open(src, "--from", read_only=True) as from_db:
        to_db = _open(dst, "--to", read_only=False)
        report = _copy(from_db, to_db, batch, created=dst.path if created else None)
    click.echo(render_report(report))


def _dry_run(src: StoreLocation, dst: StoreLocation) -> None:
    """Count the source's rows and check the target, opening both read-only."""
    with _open(src, "--from", read_only=True) as from_db:
        counts = table_counts(from_db)
    if dst.exists:
        with _open(dst, "--to", read_only=True) as to_db:
            held = table_counts(to_db)
        if any(held.values()):
            raise TargetNotEmptyError(dst.label, held)
    rows = ", ".join(f"{n} {table}" for table, n in counts.items() if n) or "no rows"
    click.echo(f"Would copy {rows} from {src.label} into {dst.label}; nothing was changed.")


def _open(location: StoreLocation, option: str, *, read_only: bool) -> SessionDB:
    """Open a store named on the command line; a failed connection blames that option."""
    try:
        return open_db(location, read_only=read_only, synchronous="full")
    except StateError as exc:
        better = url_given_by(exc, f"the {option} URL")
        if better is exc:
            raise
        raise better from exc


def _refuse_same_store(src: StoreLocation, dst: StoreLocation) -> None:
    same = (
        src.path.resolve() == dst.path.resolve()
        if src.path is not None and dst.path is not None
        else src.url is not None and src.url == dst.url
    )
    if same:
        raise HermesError(f"--from and --to both name {src.label}; copy into a new, empty store.")


def _copy(from_db: SessionDB, to_db: SessionDB, batch: int, *, created: Path | None) -> CopyReport:
    """Run the copy; on failure remove a target file we created, else say what is left."""
    try:
        with progress_display() as show:
            return copy_store(from_db, to_db, progress=show, batch=batch)
    except TargetNotEmptyError:
        raise  # refused before writing anything
    except BaseException as exc:
        to_db.close()
        if created is not None:
            _remove_database(created)
        if not isinstance(exc, HermesError):
            raise
        if created is not None:
            raise HermesError(f"{exc} Nothing was kept: {created} was removed.") from exc
        raise HermesError(
            f"{exc} {to_db.location} may now hold part of the copy; empty it (or use a new "
            "database or schema) before trying again."
        ) from exc
    finally:
        to_db.close()


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def render_report(report: CopyReport) -> str:
    width = max(len(name) for name in (*report.counts, "message checksum"))
    lines = [f"Copied {report.source} to {report.target} and verified it:"]
    lines += [f"  {name:<{width}}  {n:>9}" for name, n in report.counts.items()]
    lines.append(f"  {'message checksum':<{width}}  sha256:{report.checksum}")
    lines.append(f"  ({report.seconds:.1f} s)")
    return "\n".join(lines)
