"""What `hermes import hermes-agent` brings from another Hermes Agent home besides its
state.db: its skills and its MCP servers.

A home used in place needs none of this (``skills/`` and ``mcp_servers:`` are read
where Hermes Agent keeps them). From another home: each skill folder of its ``skills/``
is copied to the same place under ours unless a skill of that name is here already, and
each server of its ``mcp_servers:`` is added to our config.yaml unless ours has one of
that name (ours always wins; nothing here is changed or removed). Server entries are
copied as written, ``${VAR}`` placeholders included: the variables they name must be in
our environment or ``$HERMES_HOME/.env``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.config import Config, save_value
from hermes.tools.mcp.config import placeholder_names
from hermes.tools.skills import home_skills_dir, scan_skills


@dataclass
class ExtrasReport:
    skills: list[str] = field(default_factory=list)
    skills_kept: list[str] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)
    servers_kept: list[str] = field(default_factory=list)
    needs_env: list[str] = field(default_factory=list)

    def describe(self, *, dry_run: bool) -> list[str]:
        verb = "Would bring" if dry_run else "Brought"
        lines = []
        if self.skills:
            lines.append(f"{verb} {len(self.skills)} skill(s): {', '.join(self.skills)}.")
        if self.skills_kept:
            lines.append(f"Kept our own skill(s) of the same name: {', '.join(self.skills_kept)}.")
        if self.servers:
            lines.append(f"{verb} {len(self.servers)} MCP server(s): {', '.join(self.servers)}.")
        if self.servers_kept:
            lines.append(
                f"Kept our own MCP server(s) of the same name: {', '.join(self.servers_kept)}."
            )
        if self.needs_env:
            lines.append(
                f"Their config names {', '.join(self.needs_env)}: set them in this environment "
                "or $HERMES_HOME/.env."
            )
        return lines


def bring_extras(
    their_home: Path, our_home: Path, config: Config, *, dry_run: bool
) -> ExtrasReport:
    """Copy ``their_home``'s skills and MCP servers that ours lacks (see the module)."""
    report = ExtrasReport()
    if Path(their_home).resolve() == Path(our_home).resolve():
        return report
    _bring_skills(Path(their_home), Path(our_home), report, dry_run=dry_run)
    _bring_servers(Path(their_home), config, report, dry_run=dry_run)
    return report


def _bring_skills(their_home: Path, our_home: Path, report: ExtrasReport, *, dry_run: bool) -> None:
    theirs_root, ours_root = home_skills_dir(their_home), home_skills_dir(our_home)
    ours = {s.name for s in scan_skills([ours_root]).skills}
    for skill in scan_skills([theirs_root]).skills:
        if skill.name in ours:
            report.skills_kept.append(skill.name)
            continue
        report.skills.append(skill.name)
        target = ours_root / skill.folder.relative_to(theirs_root)
        if not dry_run and not target.exists():
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            shutil.copytree(skill.folder, target, symlinks=True)


def _bring_servers(
    their_home: Path, config: Config, report: ExtrasReport, *, dry_run: bool
) -> None:
    theirs = _their_servers(their_home / "config.yaml")
    if not theirs:
        return
    ours = dict(config.get("mcp_servers") or {})
    added = {}
    for name, entry in theirs.items():
        if name in ours:
            report.servers_kept.append(str(name))
        else:
            added[name] = entry
            report.servers.append(str(name))
    report.needs_env = sorted(set(placeholder_names(added)))
    if added and not dry_run:
        save_value("mcp_servers", {**ours, **added}, config.path)


def _their_servers(path: Path) -> Mapping[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    servers = data.get("mcp_servers") if isinstance(data, Mapping) else None
    return servers if isinstance(servers, Mapping) else {}
