"""`hermes profile`: list, create and choose profiles, as Hermes Agent 0.19's command has them.

A profile is a home of its own under ``<root>/profiles/NAME`` (hermes.profiles says how a
run picks one). ``use`` makes one sticky for every later command; ``--profile NAME`` or
``HERMES_PROFILE`` picks one for a single run.
"""

from __future__ import annotations

import click

from hermes import profiles
from hermes.cli._group import DefaultGroup
from hermes.cli._table import echo_listing
from hermes.gateway.state_file import read_status


@click.group(cls=DefaultGroup)
def profile() -> None:
    """Profiles, each a home of its own: list, create, use (default: list)."""


@profile.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_cmd(as_json: bool) -> None:
    """One row per profile; `*` marks the one this command runs in."""
    current = profiles.current_name()
    rows = [
        {
            "name": p.name,
            "path": str(p.path),
            "active": p.name == current,
            "gateway": "running" if read_status(p.path).running else "stopped",
        }
        for p in profiles.list_all()
    ]
    echo_listing(
        rows,
        as_json=as_json,
        empty="No profiles.",
        headers=["", "profile", "gateway", "path"],
        row=lambda r: ["*" if r["active"] else "", r["name"], r["gateway"], r["path"]],
    )


@profile.command("create")
@click.argument("name")
@click.option(
    "--clone",
    is_flag=True,
    help="Copy config.yaml, .env, SOUL.md, skills and memory notes from the profile this "
    "command runs in.",
)
@click.option(
    "--clone-all",
    is_flag=True,
    help="Copy the whole home of the profile this command runs in (or of --clone-from), "
    "but its conversations, backups and running gateway's files.",
)
@click.option(
    "--clone-from",
    metavar="PROFILE",
    help="Copy from PROFILE instead (implies --clone).",
)
def create_cmd(name: str, clone: bool, clone_all: bool, clone_from: str | None) -> None:
    """Create the profile NAME (lower-case letters, digits, '-' and '_')."""
    source = clone_from or (profiles.current_name() if clone or clone_all else None)
    if source == "custom":
        source = None  # HERMES_HOME is no profile: there is nothing named to copy
    path = profiles.create(name, clone_from=source, whole=clone_all)
    click.echo(f"Created profile {profiles.normalize(name)} at {path}.")
    click.echo(
        f"Use it once with `hermes --profile {profiles.normalize(name)} chat`, "
        f"or for every command with `hermes profile use {profiles.normalize(name)}`."
    )


@profile.command("use")
@click.argument("name")
def use_cmd(name: str) -> None:
    """Make NAME the profile every later command runs in (`default`: the root home)."""
    profiles.set_active(name)
    name = profiles.normalize(name)
    click.echo(f"Switched to: {name} ({profiles.profile_dir(name)})")
