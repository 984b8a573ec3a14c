"""`hermes import hermes-agent [PATH]`: bring a Hermes Agent state.db into the store.

The reading, mapping and verification live in ``hermes.compat.importer``; this module
opens the two stores, shows progress like `hermes migrate` and prints the result. A
file that is not a Hermes Agent store is refused in one sentence, with exit status 2.
"""

from __future__ import annotations

from pathlib import Path

import click

from hermes.cli._store import StoreLocation, database_errors, store_location
from hermes.cli.migrate import progress_display
from hermes.compat import importer
from hermes.compat.session_db import SessionDB
from hermes.config import Config, load_config

DEFAULT_SOURCE = Path("~/.hermes/state.db")


@click.group(name="import")
def import_group() -> None:
    """Import conversations from another agent's store."""


@import_group.command(name="hermes-agent")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="Show what would be imported; change nothing.")
@click.pass_context
def hermes_agent(ctx: click.Context, path: Path | None, dry_run: bool) -> None:
    """Import a Hermes Agent state.db (default ~/.hermes/state.db), verified.

    The file is opened read-only and never changed. Compression rotations become
    segments of one conversation, other child sessions branches; rows Hermes Agent
    compacted in place are kept as undone history (searchable, not in the context).
    Running it again imports nothing twice.
    """
    source = (path or DEFAULT_SOURCE).expanduser()
    try:
        conn = importer.open_source(source)
    except importer.NotHermesAgentStoreError as exc:
        click.echo(f"Error: {exc}", err=True)
        ctx.exit(2)
    config = load_config()
    location = store_location(config.get("state.url"), use_config=False)
    try:
        if dry_run and not location.exists:  # nothing there yet: everything would be new
            report = importer.import_store(conn, None, dry_run=True)
        else:
            with (
                database_errors(location),
                _open(location, config, read_only=dry_run) as db,
                progress_display() as show,
            ):
                report = importer.import_store(conn, db, dry_run=dry_run, progress=show)
    finally:
        conn.close()
    click.echo(importer.describe(report, dry_run=dry_run))


def _open(location: StoreLocation, config: Config, *, read_only: bool) -> SessionDB:
    """The configured store with Hermes Agent's SessionDB names (the importer uses them)."""
    where = {"db_path": location.path} if location.path is not None else {"url": location.url}
    return SessionDB(**where, read_only=read_only, synchronous=config.get("state.synchronous"))
