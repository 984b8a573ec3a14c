"""The chat's commands for its tools, skills and install: /tools, /skills, /reload-mcp,
/debug, /update and /version, as Hermes Agent 0.19 names them.

/tools and /skills change this profile (config.yaml, the operator's skills folder), so
they are the terminal's, as in 0.19. Nothing here uploads anything: /debug writes its
report under the home for the operator to read or share.
"""

from __future__ import annotations

import difflib
import os
import platform
import sys
import time
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from hermes import redaction
from hermes.agent.commands import Reply, command
from hermes.config import save_value
from hermes.install import this_install
from hermes.text import one_line, plural, table

if TYPE_CHECKING:
    from hermes.agent import AIAgent
    from hermes.tools.skills import Skill

# -- /tools ------------------------------------------------------------------------------

TOOLS_USAGE = "/tools [list|disable|enable] [name...]"


# The /help row stays as narrow as the others (tests/cron/test_chat_command.py); a bad
# /tools line answers with the whole syntax.
@command(
    "tools",
    "/tools [ACTION]",
    "List the tools, or enable and disable them for this profile.",
    subcommands=("list", "disable", "enable"),
    category="Tools & Skills",
    cli_only=True,
)
def _tools(agent: AIAgent, arg: str) -> Reply:
    verb, _, rest = arg.partition(" ")
    verb, names = verb.lower(), rest.split()
    if verb not in ("list", "disable", "enable"):
        return _tool_listing(agent)
    if verb == "list":
        return _toolset_listing(agent)
    if not names:
        return Reply(
            f"Usage: /tools {verb} NAME [NAME...], a toolset (/tools list shows them) or a "
            f"tool, e.g. /tools disable terminal. The whole syntax: {TOOLS_USAGE}.",
            ok=False,
        )
    return _toggle(agent, names, enable=verb == "enable")


def _tool_listing(agent: AIAgent) -> Reply:
    names = agent.tool_names()
    if not names:
        return Reply("No tools are enabled (see /tools list, or agent.toolsets in config.yaml).")
    rows = []
    for name in names:
        tool = agent.toolbox.registry.get(name)
        rows.append((name, one_line(_first_sentence(tool.description if tool else ""), 80)))
    return Reply(table(("TOOL", "WHAT IT DOES"), rows), data={"tools": names})


def _toolset_listing(agent: AIAgent) -> Reply:
    from hermes.tools.toolsets import known_toolsets

    offered = set(agent.tool_names())
    tools = agent.toolbox.registry.tools()
    groups = known_toolsets(agent.config, tools)
    rows, status = [], {}
    for name, members in sorted(groups.items()):
        if f"mcp-{name}" in groups and groups[f"mcp-{name}"] is members:
            continue  # an MCP server's own name: its mcp-<server> row says it
        on = [m for m in members if m in offered]
        if not members:  # an MCP server that is down: chosen or not
            status[name] = "enabled" if _named(agent, name) else "disabled"
        else:
            status[name] = "enabled" if len(on) == len(members) else "partly" if on else "disabled"
        rows.append((name, status[name], ", ".join(members) or "(server down)"))
    text = table(("TOOLSET", "STATUS", "TOOLS"), rows)
    return Reply(f"{text}\nChange it with /tools enable NAME or /tools disable NAME.", data=status)


def _named(agent: AIAgent, toolset: str) -> bool:
    """Whether ``agent.toolsets`` chooses the (empty, down) MCP toolset ``toolset``."""
    entries = agent.config.get("agent.toolsets")
    return entries is None or toolset in entries or toolset.removeprefix("mcp-") in entries


def _toggle(agent: AIAgent, names: list[str], *, enable: bool) -> Reply:
    from hermes.tools.toolsets import known_names, toggled

    if agent.toolbox.override is not None:
        return Reply(
            "This chat's tools were chosen by whoever started it, so /tools cannot change "
            "them; start the chat without a tool list to use this profile's.",
            ok=False,
        )
    tools = agent.toolbox.registry.tools()
    known = known_names(agent.config, tools)
    unknown = [n for n in names if n not in known]
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, 1, 0.5)
        hint = f" Did you mean {close[0]}?" if close else ""
        return Reply(
            f"'{unknown[0]}' is neither a toolset nor a tool here.{hint} /tools list shows "
            "the toolsets; nothing was changed.",
            ok=False,
        )
    entries = toggled(
        agent.config.get("agent.toolsets"), names, enable=enable, config=agent.config, tools=tools
    )
    path = save_value("agent.toolsets", entries, agent.config.path)
    agent.toolbox.choose_toolsets(entries)
    done = "Enabled" if enable else "Disabled"
    return Reply(
        f"{done} {', '.join(names)} for this profile (agent.toolsets in {path}); the next "
        f"turn offers {plural(len(agent.tool_names()), 'tool')}.",
        data={"toolsets": entries},
    )


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    end = flat.find(". ")
    return flat[: end + 1] if end > 0 else flat


# -- /skills -----------------------------------------------------------------------------

SKILLS_USAGE = "/skills [list|search TEXT|browse|inspect NAME|install PATH|remove NAME]"
# 0.19's verbs for its skills hub and its write approval, which hermes has no part of.
_HUB_VERBS = {
    "audit": "hermes keeps no skills hub, so there are no hub installs to audit",
    "check": "hermes keeps no skills hub, so there are no hub installs to check",
    "update": "hermes keeps no skills hub: install the new version of a skill from its folder",
    "publish": "hermes keeps no skills hub to publish to",
    "tap": "hermes keeps no skills hub, so it has no taps",
    "snapshot": "hermes keeps no skills hub, so it has no snapshots",
    "reset": "hermes keeps no skills hub, so there is nothing to reset",
}
_APPROVAL_VERBS = ("pending", "approve", "apply", "reject", "deny", "drop", "diff", "approval")


@command(
    "skills",
    "/skills [ACTION]",
    "List, search, inspect, install or remove skills.",
    subcommands=(
        "list", "search", "browse", "inspect", "install", "remove", "audit", "pending",
        "approve", "reject", "diff", "approval",
    ),
    category="Tools & Skills",
    cli_only=True,
    config_gate="skills.write_approval",
)  # fmt: skip
def _skills(agent: AIAgent, arg: str) -> Reply:
    verb, _, rest = arg.strip().partition(" ")
    verb, rest = verb.lower(), rest.strip()
    if verb in ("", "list", "browse"):
        return _skill_listing(agent, _visible_skills(agent), "")
    if verb == "search":
        if not rest:
            return Reply(
                "Usage: /skills search TEXT (a word of a skill's name or purpose).", ok=False
            )
        return _skill_listing(agent, _matching(_visible_skills(agent), rest), rest)
    if verb in ("inspect", "show", "view"):
        return _inspect(agent, rest)
    if verb == "install":
        return _install(agent, rest)
    if verb in ("remove", "uninstall"):
        return _remove(agent, rest)
    if verb in _HUB_VERBS:
        return Reply(f"/skills {verb}: {_HUB_VERBS[verb]}. Usage: {SKILLS_USAGE}.", ok=False)
    if verb in _APPROVAL_VERBS:
        return Reply(
            f"/skills {verb}: hermes has no queue of skill writes to approve; the terminal "
            "chat asks before each write to your skills folder. "
            f"Usage: {SKILLS_USAGE}.",
            ok=False,
        )
    return Reply(f"Unknown /skills action '{verb}'. Usage: {SKILLS_USAGE}.", ok=False)


def _visible_skills(agent: AIAgent) -> list[Skill]:
    from hermes.tools.skills import load_skills

    return load_skills(
        agent.hermes_home, agent.cwd, agent.config, source=agent.source, user_id=agent.user_id
    ).skills


def _matching(skills: list[Skill], text: str) -> list[Skill]:
    words = text.lower().split()
    return [
        s
        for s in skills
        if all(w in f"{s.name} {s.category or ''} {s.description}".lower() for w in words)
    ]


def _skill_listing(agent: AIAgent, skills: list[Skill], searched: str) -> Reply:
    listing = [s.as_listing() for s in skills]
    if not skills:
        if searched:
            return Reply(f"No skill here matches '{searched}'.", data={"skills": []})
        return Reply(
            "No skills yet; install one with /skills install PATH (a folder holding SKILL.md).",
            data={"skills": []},
        )
    rows = [(s.name, s.category or "", one_line(s.description, 80)) for s in skills]
    return Reply(table(("SKILL", "CATEGORY", "WHAT IT IS FOR"), rows), data={"skills": listing})


def _inspect(agent: AIAgent, name: str) -> Reply:
    from hermes.tools.skills import skill_files, skill_text

    if not name:
        return Reply("Usage: /skills inspect NAME (see /skills for the names).", ok=False)
    skill = next((s for s in _visible_skills(agent) if s.name == name), None)
    if skill is None:
        return Reply(f"No skill named '{name}' here; /skills lists them.", ok=False)
    text = skill_text(skill).rstrip()
    files = skill_files(skill)
    if files:
        text += f"\n\nFiles in {skill.folder}:\n" + "\n".join(f"  {f}" for f in files)
    return Reply(text, data={"skill": skill.as_listing()})


def _install(agent: AIAgent, where: str) -> Reply:
    from hermes.tools.skills import SkillInstallError, home_skills_dir, install_skill

    if not where:
        return Reply("Usage: /skills install PATH (a folder holding a SKILL.md).", ok=False)
    source = (agent.cwd / Path(where).expanduser()).absolute()
    hidden = _hidden_from_view(agent, source)
    if hidden is not None:
        return Reply(
            f"Not installed: {hidden} is hidden from the agent's tools, so a skill may not "
            "be made of it; copy what the skill needs into a folder of your project first.",
            ok=False,
        )
    try:
        skill, target = install_skill(source, home_skills_dir(agent.hermes_home))
    except SkillInstallError as exc:
        return Reply(str(exc), ok=False)
    return Reply(
        f"Installed the skill '{skill.name}' at {target}; the next conversation lists it.",
        data={"skill": skill.name, "path": str(target)},
    )


def _hidden_from_view(agent: AIAgent, source: Path) -> Path | None:
    """The first path of the folder ``source`` (itself, or a file or link in it) that the
    chat's tools may not read (the home, credential stores, hermes's homes), or None.
    A skill is read back by the agent, so it holds nothing the tools could not see."""
    from hermes.tools.guards import view
    from hermes.tools.registry import ToolContext

    ctx = ToolContext(
        hermes_home=agent.hermes_home, config=agent.config, cwd=agent.cwd,
        surface=agent.source, source=agent.source, user_id=agent.user_id,
    )  # fmt: skip
    rules = view.rules(ctx)
    if not source.exists():
        return None  # install_skill says it is missing
    for path in (source, *sorted(source.rglob("*"))):
        if view.rule_for(path, rules).access == view.HIDDEN:
            return path
    return None


def _remove(agent: AIAgent, name: str) -> Reply:
    import shutil

    from hermes.tools.skills import home_skills_dir, scan_skills

    if not name:
        return Reply("Usage: /skills remove NAME (a skill of your skills folder).", ok=False)
    folder = home_skills_dir(agent.hermes_home)
    skill = scan_skills([folder]).find(name)
    if skill is None:
        return Reply(f"No skill named '{name}' in {folder}; nothing was removed.", ok=False)
    shutil.rmtree(skill.folder)
    return Reply(f"Removed the skill '{name}' ({skill.folder}).")


# -- /reload-mcp -------------------------------------------------------------------------


@command(
    "reload-mcp",
    "/reload-mcp",
    "Restart the MCP servers from config.yaml.",
    aliases=("reload_mcp",),
    category="Tools & Skills",
)
def _reload_mcp(agent: AIAgent, arg: str) -> Reply:
    lines = agent.toolbox.reload_mcp()
    if not lines:
        return Reply("No MCP servers are configured (mcp_servers in config.yaml).")
    connected = sum(1 for line in lines if ": connected" in line)
    head = f"Reloaded MCP servers: {connected} of {plural(len(lines), 'server')} connected."
    return Reply(head + "\n" + "\n".join(f"  {line}" for line in lines), data={"servers": lines})


# -- /debug ------------------------------------------------------------------------------

DEBUG_LOG_LINES = 50  # of each log file, the most recent


@command(
    "debug",
    "/debug [nous|local]",
    "Write a debug report (versions, config, logs) to a file.",
    category="Info",
)
def _debug(agent: AIAgent, arg: str) -> Reply:
    words = {w.lower() for w in arg.split()}
    if words - {"local", "nous"}:
        return Reply("Usage: /debug [local] writes a debug report to a file.", ok=False)
    if "nous" in words and "local" not in words:
        return Reply(
            "hermes uploads nothing: /debug writes the report to a file here, for you to "
            "read and share yourself.",
            ok=False,
        )
    path = write_debug_report(agent)
    if agent.source != "cli":  # a messaging chat: the operator's folders are not its business
        return Reply(
            f"Wrote a debug report logs/{path.name} in the gateway's home (secrets redacted) "
            "for its operator to read and share."
        )
    return Reply(
        f"Wrote a debug report to {path} (secrets redacted; read it before you share it).",
        data={"path": str(path)},
    )


def write_debug_report(agent: AIAgent) -> Path:
    install = this_install()
    masked = {key: redaction.mask_fields(key, value) for key, value in agent.config.values.items()}
    sections = [
        "hermes debug report",
        f"written: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        f"hermes: {install.version} ({install.kind} install at {install.where})",
        f"python: {sys.version.split()[0]} ({sys.executable})",
        f"system: {platform.platform()}",
        f"home: {agent.hermes_home}",
        f"model: {agent.model} at {agent.base_url}",
        f"tools offered: {', '.join(agent.tool_names()) or 'none'}",
        "",
        f"config ({agent.config.path}, with defaults):",
        yaml.safe_dump(
            replace(agent.config, values=masked).as_tree(), sort_keys=True, default_flow_style=False
        ).rstrip(),
    ]
    for name in ("agent.log", "errors.log", "gateway.log"):
        lines = _tail(agent.hermes_home / "logs" / name)
        if lines:
            sections += ["", f"last {len(lines)} lines of logs/{name}:", *lines]
    folder = agent.hermes_home / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"debug-{time.strftime('%Y%m%d-%H%M%S')}.txt"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(redaction.redact("\n".join(sections)) + "\n")
    return path


def _tail(path: Path) -> list[str]:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return [line.rstrip("\n") for line in deque(handle, DEBUG_LOG_LINES)]
    except OSError:
        return []


# -- /update, /version -------------------------------------------------------------------


@command("update", "/update", "Say how to update this install of hermes.", category="Info")
def _update(agent: AIAgent, arg: str) -> Reply:
    install = this_install()
    return Reply(
        f"hermes {install.version} does not update itself while it runs. To update this "
        f"{install.kind} install, quit and run:\n  {install.update}\nthen start hermes again.",
        data={"kind": install.kind, "command": install.update},
    )


@command("version", "/version", "Show hermes's version.", aliases=("v",), category="Info")
def _version(agent: AIAgent, arg: str) -> Reply:
    install = this_install()
    return Reply(
        f"hermes {install.version} (Python {sys.version.split()[0]}, {install.kind} install)",
        data={"version": install.version},
    )
