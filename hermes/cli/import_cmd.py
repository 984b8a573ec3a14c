"""`hermes import hermes-agent [PATH]`: bring a Hermes Agent state.db into the store.

The reading, mapping and verification live in ``hermes.compat.importer``; this module
opens the two stores, shows progress like `hermes migrate` and prints the result. A
file that is not a Hermes Agent store is refused in one sentence, with exit status 2.
Importing into a store that already holds conversations asks first (``--yes`` without a
terminal), after counting what would be added: nothing new means nothing to ask.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import click

from hermes.cli._ask import confirm_or_refuse
from hermes.cli._hermes_agent_store import run_upgrade
from hermes.cli._progress import progress_display
from hermes.cli._store import database_errors
from hermes.compat import cron_jobs, importer, upgrade
from hermes.compat.home_extras import bring_extras
from hermes.compat.session_db import SessionDB
from hermes.config import Config, hermes_home, load_config
from hermes.state.location import StoreLocation, store_location
from hermes.state.store import is_hermes_agent_store

DEFAULT_SOURCE = Path("~/.hermes/state.db")


@click.group(name="import")
def import_group() -> None:
    """Import conversations from another agent's store."""


@import_group.command(name="hermes-agent")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="Show what would be imported; change nothing.")
@click.option(
    "-y",
    "--yes",
    is_flag=True,
    help="Import into a store that holds conversations, or upgrade the store "
    "in place, without asking (needed without a terminal).",
)
@click.pass_context
def hermes_agent(ctx: click.Context, path: Path | None, dry_run: bool, yes: bool) -> None:
    """Import a Hermes Agent state.db (default ~/.hermes/state.db), verified.

    A file elsewhere is opened read-only and never changed. Compression rotations become
    segments of one conversation, other child sessions branches. A session Hermes
    Agent compacted in place keeps its archived rows as history in a segment before
    its live context (searchable and exported, not in the model's context); rows
    the user rewound are kept as undone.
    Running it again imports nothing twice. Into a store that already holds
    conversations it asks first (nothing there is changed or removed).

    When the file is hermes's own store (HERMES_HOME is a Hermes Agent home, or PATH
    names the store), it is upgraded in place instead: a backup is written beside it
    first (state.db.hermes-agent-<date>.bak), the new store is built next to it, every
    message verified, and only then renamed over it; running it again does nothing.
    Other commands ask for this on a terminal; without one, --yes here is the way.

    From another home it also brings that home's skills (folders under skills/), its
    mcp_servers: (added to config.yaml) and its webhook subscriptions, each unless one
    of that name is here already; a home used in place needs none of them.
    """
    config = load_config()
    location = store_location(config=config)
    source = (path or _default_source(location)).expanduser()
    if location.path is not None and _same_file(source, location.path):
        _upgrade_in_place(location.path, dry_run=dry_run, yes=yes)
        return
    try:
        conn = importer.open_source(source)
    except importer.NotHermesAgentStoreError as exc:
        click.echo(f"Error: {exc}", err=True)
        ctx.exit(2)
    # "Nothing to import" below turns the store's import into a dry run; the jobs, skills
    # and MCP servers of the home are brought over all the same.
    only_looking = dry_run
    try:
        if dry_run and not location.exists:  # nothing there yet: everything would be new
            report = importer.import_store(conn, None, dry_run=True)
        elif not dry_run and (preview := _preview_into_held_store(conn, location, config)):
            if not preview.new_sessions and not preview.new_messages:
                report, dry_run = preview, True  # "Nothing to import": nothing to ask
            else:
                confirm_or_refuse(
                    f"{location.label} already holds conversations. Add "
                    f"{preview.new_sessions} sessions and {preview.new_messages} messages "
                    f"from {source} to it? Nothing in it is changed or removed",
                    yes=yes,
                    action="importing into a store that holds conversations",
                )
                report = _import(conn, location, config)
        else:
            report = _import(conn, location, config, dry_run=dry_run)
    finally:
        conn.close()
    click.echo(importer.describe(report, dry_run=dry_run))
    _import_jobs(source, location, config, dry_run=only_looking)
    extras = bring_extras(source.parent, hermes_home(), config, dry_run=only_looking)
    for line in extras.describe(dry_run=dry_run):
        click.echo(line)
    _bring_webhooks(source.parent, dry_run=only_looking)


def _bring_webhooks(their_home: Path, *, dry_run: bool) -> None:
    """The other home's webhook subscriptions (0.19's file), each unless ours has one of
    that name; a home used in place serves its own already."""
    from hermes.gateway.webhook.routes import RouteError, load_subscriptions, save_subscriptions

    ours_home = hermes_home()
    if _same_file(their_home, ours_home):
        return
    try:
        theirs, ours = load_subscriptions(their_home), load_subscriptions(ours_home)
    except RouteError as exc:
        click.echo(f"Webhook subscriptions not brought: {exc}", err=True)
        return
    new = [name for name in theirs if name not in ours]
    if not new:
        return
    if not dry_run:
        save_subscriptions(ours_home, {**ours, **{name: theirs[name] for name in new}})
    verb = "Would bring" if dry_run else "Brought"
    click.echo(f"{verb} {len(new)} webhook subscription(s): {', '.join(new)}.")


def _import_jobs(source: Path, location: StoreLocation, config: Config, *, dry_run: bool) -> None:
    """The scheduled jobs of the Hermes Agent home the store came from (cron/jobs.json)."""
    path = cron_jobs.jobs_file(source.parent)
    found = cron_jobs.read_jobs(path)
    if not found:
        return
    if dry_run:
        click.echo(f"Would import up to {len(found)} scheduled jobs from {path}.")
        return
    with database_errors(location), _open(location, config, read_only=False) as db:
        added = cron_jobs.import_jobs(path, db.backend, hermes_home=hermes_home())
    click.echo(f"Imported {added} scheduled jobs from {path} ({len(found) - added} held already).")


def _import(
    conn: sqlite3.Connection,
    location: StoreLocation,
    config: Config,
    *,
    dry_run: bool = False,
) -> importer.ImportReport:
    with (
        database_errors(location),
        _open(location, config, read_only=dry_run) as db,
        progress_display() as show,
    ):
        return importer.import_store(conn, db, dry_run=dry_run, progress=show)


def _preview_into_held_store(
    conn: sqlite3.Connection, location: StoreLocation, config: Config
) -> importer.ImportReport | None:
    """What an import would add, when the store already holds conversations; else None."""
    if not location.exists:
        return None
    with database_errors(location), _open(location, config, read_only=True) as db:
        if not db.list_conversations(limit=1):
            return None
        return importer.import_store(conn, db, dry_run=True)


def _open(location: StoreLocation, config: Config, *, read_only: bool) -> SessionDB:
    """The configured store with Hermes Agent's SessionDB names (the importer uses them)."""
    return SessionDB(
        db_path=location.path,
        url=location.url,
        read_only=read_only,
        synchronous=config.get("state.synchronous"),
    )


def _default_source(location: StoreLocation) -> Path:
    """The store itself when it is (or was, a backup beside it says) a Hermes Agent
    store, else ~/.hermes/state.db."""
    path = location.path
    if path is not None and (is_hermes_agent_store(path) or _backups(path)):
        return path
    return DEFAULT_SOURCE


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.hermes-agent-*.bak"))


def _same_file(one: Path, other: Path) -> bool:
    return one.exists() and other.exists() and one.resolve() == other.resolve()


def _upgrade_in_place(path: Path, *, dry_run: bool, yes: bool) -> None:
    if not is_hermes_agent_store(path):
        kept = _backups(path)
        was = (
            f" (upgraded from Hermes Agent; the original is kept as {kept[-1].name})"
            if kept
            else ""
        )
        click.echo(f"Nothing to import: {path} is this hermes's own store already{was}.")
        return
    if dry_run:
        with upgrade.read_only_view(path) as db:
            held = db.list_conversations(limit=1_000_000)
        click.echo(
            f"Would upgrade {path} in place ({len(held)} conversations), keeping the "
            "original beside it as a backup; nothing was changed."
        )
        return
    confirm_or_refuse(
        f"{path} is a Hermes Agent 0.19 store. Upgrade it in place for hermes? The "
        "original is kept beside it as a backup",
        yes=yes,
        action="upgrading the Hermes Agent store in place",
    )
    report = run_upgrade(path)
    if report is not None:
        click.echo(f"Verified: every message is in the store, sha256:{report.imported.checksum}.")
