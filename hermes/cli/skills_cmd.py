"""`hermes skills`: list, show, install and remove skills (hermes/tools/skills.py).

The operator's view: ``list`` shows every skill on this home with its owner (the
operator, a gateway or API user, the project here); ``show``, ``install`` and ``remove``
work on the skills the terminal chat sees and on the operator's own folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from hermes.cli._group import DefaultGroup
from hermes.cli._table import echo_listing
from hermes.config import ensure_home, hermes_home, load_config
from hermes.tools.skills import (
    SkillInstallError,
    SkillScan,
    all_skill_roots,
    home_skills_dir,
    install_skill,
    scan_skills,
    skill_files,
    skill_roots,
)


def _scan(*, every: bool = False) -> SkillScan:
    """The skills the terminal chat sees here, or with ``every`` each skill of every
    owner on this home (a name several owners use is listed once for each)."""
    config = load_config()
    roots = (all_skill_roots if every else skill_roots)(hermes_home(), Path.cwd(), config)
    scan = scan_skills(roots, every=every)
    for problem in scan.problems:
        click.echo(problem, err=True)
    disabled = set(config.get("skills.disabled"))
    return SkillScan([s for s in scan.skills if s.name not in disabled], scan.problems)


@click.group(cls=DefaultGroup)
def skills() -> None:
    """List, show, install and remove skills (folders holding a SKILL.md)."""


@skills.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print Hermes Agent's JSON listing.")
def list_skills(as_json: bool) -> None:
    """Every skill on this home and its owner: the operator, a user, the project."""
    echo_listing(
        [s.as_listing() for s in _scan(every=True).skills],
        as_json=as_json,
        empty="No skills yet. Add one with `hermes skills install PATH` or in "
        f"{home_skills_dir(hermes_home())}.",
        headers=["name", "owner", "category", "description"],
        row=lambda s: (s["name"], s["owner"], s.get("category") or "", s["description"]),
    )


@skills.command("show")
@click.argument("name")
def show(name: str) -> None:
    """Print a skill's SKILL.md and list its files."""
    skill = _scan().find(name)
    if skill is None:
        raise click.ClickException(f"No skill named '{name}'; `hermes skills list` shows them.")
    click.echo(skill.index.read_text(encoding="utf-8", errors="replace").rstrip())
    files = skill_files(skill)
    if files:
        click.echo(f"\nFiles in {skill.folder}:")
        for file in files:
            click.echo(f"  {file}")


@skills.command("install")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
def install(path: Path) -> None:
    """Copy the skill folder PATH (holding a SKILL.md) into $HERMES_HOME/skills."""
    try:
        skill, target = install_skill(path, home_skills_dir(ensure_home()))
    except SkillInstallError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Installed the skill '{skill.name}' at {target}.")


@skills.command("remove")
@click.argument("name")
def remove(name: str) -> None:
    """Delete the skill NAME from $HERMES_HOME/skills."""
    home = home_skills_dir(hermes_home())
    skill = scan_skills([home]).find(name)
    if skill is None:
        raise click.ClickException(f"No skill named '{name}' in {home}.")
    shutil.rmtree(skill.folder)
    click.echo(f"Removed the skill '{name}' ({skill.folder}).")
