"""Hermes Agent 0.19's ``hermes_cli.commands``: the chat's slash commands, from hermes's own.

``COMMAND_REGISTRY`` lists hermes's commands (hermes.agent.commands, /cron and
/platforms included) as 0.19's ``CommandDef``, with their aliases, /help groups and where they work (the
terminal only, a messaging chat only, or a terminal command a config key offers on the
gateway); hermes-webui builds its command palette from it. From it come 0.19's menus for
the messaging platforms (Telegram's bot commands, Slack's slashes and manifest,
Discord's plugin commands), with the plugins' commands after hermes's, and the prompt's
completer and ghost text. Hermes has no per-skill slash commands, so the menus list no
skills.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from prompt_toolkit.auto_suggest import AutoSuggest, Suggestion
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

import hermes.agent.agent  # noqa: F401 - registers the chat's commands
import hermes.cron.chat_command  # noqa: F401 - registers /cron
import hermes.gateway.platforms_command  # noqa: F401 - registers /platforms
from hermes.agent import commands as _commands
from hermes.gateway import command_names as _names

__all__ = [
    "key",
    "ACTIVE_SESSION_BYPASS_COMMANDS",
    "COMMANDS",
    "COMMANDS_BY_CATEGORY",
    "COMMAND_REGISTRY",
    "GATEWAY_KNOWN_COMMANDS",
    "SUBCOMMANDS",
    "CommandDef",
    "SlashCommandAutoSuggest",
    "SlashCommandCompleter",
    "discord_skill_commands",
    "discord_skill_commands_by_category",
    "gateway_help_lines",
    "is_gateway_known_command",
    "resolve_command",
    "should_bypass_active_session",
    "slack_app_manifest",
    "slack_native_slashes",
    "slack_subcommand_map",
    "telegram_bot_commands",
    "telegram_menu_commands",
    "telegram_menu_max_commands",
]


@dataclass(frozen=True)
class CommandDef:
    """0.19's definition of one slash command."""

    name: str
    description: str
    category: str
    aliases: tuple[str, ...] = ()
    args_hint: str = ""
    subcommands: tuple[str, ...] = ()
    cli_only: bool = False
    gateway_only: bool = False
    gateway_config_gate: str | None = None


def _args_hint(usage: str, name: str) -> str:
    """``/title [TEXT]`` -> ``[TEXT]``: the usage line without the command's own name."""
    first = usage.split(" | ")[0].strip()
    return first.removeprefix(f"/{name}").strip()


COMMAND_REGISTRY: list[CommandDef] = [
    CommandDef(
        name=spec.name,
        description=spec.help,
        category=spec.category,
        aliases=spec.aliases,
        args_hint=_args_hint(spec.usage, spec.name),
        subcommands=spec.subcommands,
        cli_only=spec.cli_only,
        gateway_only=spec.gateway_only,
        gateway_config_gate=spec.config_gate,
    )
    # 0.19's registry closes with its Exit category (``/quit``): the same here.
    for spec in sorted(_commands.COMMANDS.values(), key=lambda spec: spec.category == "Exit")
]

_BY_NAME = {name: c for c in COMMAND_REGISTRY for name in (c.name, *c.aliases)}


def _describe(command: CommandDef) -> str:
    if command.args_hint:
        return f"{command.description} (usage: /{command.name} {command.args_hint})"
    return command.description


# 0.19's derived tables, the terminal's view (no gateway-only command): "/name" and
# "/alias" -> the description, the same by category, and the words a command takes as
# its first argument (its own, else the "a|b" in its usage).
COMMANDS: dict[str, str] = {}
COMMANDS_BY_CATEGORY: dict[str, dict[str, str]] = {}
for _command in COMMAND_REGISTRY:
    if _command.gateway_only:
        continue
    _group = COMMANDS_BY_CATEGORY.setdefault(_command.category, {})
    _group[f"/{_command.name}"] = COMMANDS[f"/{_command.name}"] = _describe(_command)
    for _alias in _command.aliases:
        _group[f"/{_alias}"] = COMMANDS[f"/{_alias}"] = (
            f"{_command.description} (alias for /{_command.name})"
        )
_PIPE_WORDS = re.compile(r"[a-z]+(?:\|[a-z]+)+")
SUBCOMMANDS: dict[str, list[str]] = {}
for _command in COMMAND_REGISTRY:
    # 0.19's loop variable, left at the module's top level as 0.19's is ("/quit"): a
    # public name of its module, so tools may have read it.
    key = f"/{_command.name}"
    _hinted = _PIPE_WORDS.search(_command.args_hint)
    if _command.subcommands or _hinted:
        SUBCOMMANDS[key] = list(_command.subcommands) or (
            _hinted.group(0).split("|") if _hinted else []
        )
# Every name the gateway dispatches: a terminal-only command only when a config key
# may offer it there (the handler checks that key when it runs).
GATEWAY_KNOWN_COMMANDS: frozenset[str] = frozenset(
    name
    for c in COMMAND_REGISTRY
    if not c.cli_only or c.gateway_config_gate
    for name in (c.name, *c.aliases)
)
# A command never waits behind a running turn: the gateway answers every one at once
# or runs it as the conversation's next item, as 0.19 dispatches them.
ACTIVE_SESSION_BYPASS_COMMANDS: frozenset[str] = GATEWAY_KNOWN_COMMANDS


def resolve_command(name: str) -> CommandDef | None:
    """The command ``name`` (with or without its slash, any case, or an alias) names."""
    return _BY_NAME.get(str(name or "").lower().lstrip("/"))


def _config_gates_on() -> set[str]:
    """The terminal-only commands whose ``gateway_config_gate`` key is true in the
    config; none when the config cannot be read (a menu never fails for it)."""
    gated = [c for c in COMMAND_REGISTRY if c.gateway_config_gate]
    if not gated:
        return set()
    try:
        from hermes_cli.config import read_raw_config

        raw = read_raw_config() or {}
    except Exception:
        return set()
    on = set()
    for command in gated:
        value: Any = raw
        for key in str(command.gateway_config_gate).split("."):
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is True or str(value).strip().lower() in ("1", "true", "yes", "on"):
            on.add(command.name)
    return on


def _on_gateway(command: CommandDef, gates_on: set[str]) -> bool:
    """Whether a messaging chat offers ``command`` (its help, menus and maps)."""
    return not command.cli_only or command.name in gates_on


def _gateway_commands() -> list[CommandDef]:
    gates_on = _config_gates_on()
    return [c for c in COMMAND_REGISTRY if _on_gateway(c, gates_on)]


def _plugin_commands() -> list[tuple[str, str, str]]:
    """(name, description, args hint) of each plugin's slash command; none if the
    plugins cannot be read (a menu never fails for a broken plugin)."""
    try:
        from hermes_cli.plugins import get_plugin_commands

        found = get_plugin_commands() or {}
    except Exception:
        return []
    return [
        (name, str(meta.get("description") or f"Run /{name}"), str(meta.get("args_hint") or ""))
        for name, meta in found.items()
        if isinstance(name, str) and isinstance(meta, dict)
    ]


def is_gateway_known_command(name: str | None) -> bool:
    """Whether ``name`` is a command the gateway runs: hermes's own or a plugin's."""
    if not name:
        return False
    if resolve_command(str(name)) is not None:
        return True
    return any(plugin == name for plugin, _, _ in _plugin_commands())


def should_bypass_active_session(command_name: str | None) -> bool:
    return bool(command_name) and resolve_command(str(command_name)) is not None


def gateway_help_lines() -> list[str]:
    """One ``/name args -- description (alias: ...)`` line per command a messaging chat
    offers, as 0.19's /help lists them (``reload_mcp`` for ``reload-mcp`` is not news)."""
    lines = []
    for c in _gateway_commands():
        others = [f"`/{a}`" for a in c.aliases if a.replace("-", "_") != c.name.replace("-", "_")]
        note = f" (alias: {', '.join(others)})" if others else ""
        lines.append(
            f"`/{c.name}{' ' + c.args_hint if c.args_hint else ''}` -- {c.description}{note}"
        )
    return lines


# -- the messaging platforms' menus ----------------------------------------------------

_CMD_NAME_LIMIT = _names.NAME_LIMIT
_TG_NAME_LIMIT = _CMD_NAME_LIMIT
_sanitize_telegram_name = _names.telegram_name
_sanitize_slack_name = _names.slack_name
_clamp_command_names = _names.clamp_names
_clamp_telegram_names = _clamp_command_names
_SLACK_RESERVED_COMMANDS = _names.SLACK_RESERVED
_SLACK_MAX_SLASH_COMMANDS = _names.SLACK_MAX_SLASHES
_SLACK_NAME_LIMIT = _names.NAME_LIMIT
# 0.19 keeps these off Slack's 50 slashes (reached as /hermes <command>), and so does
# hermes, for whichever of them it or a plugin has.
_SLACK_VIA_HERMES_ONLY = frozenset({"topup", "moa", "debug"})
# Aliases that take a Slack slot ahead of every command, as 0.19 pins them.
_SLACK_PRIORITY_ALIASES = ("btw", "bg")

_DEFAULT_TELEGRAM_MENU_MAX_COMMANDS = 60
_TELEGRAM_BOT_API_MAX_COMMANDS = 100
_TELEGRAM_PRIORITY_MODES = frozenset({"prepend", "append", "replace"})
# The commands kept at the top of Telegram's capped menu, as 0.19 orders them: the most
# typed, then maintenance, turn control, then other operational ones (those hermes has not
# are skipped).
_TELEGRAM_MENU_PRIORITY = (
    "help", "new", "stop", "status", "resume", "sessions", "model",
    "debug", "restart", "update", "verbose", "commands",
    "approve", "deny", "queue", "steer", "background",
    "reasoning", "usage", "platforms", "platform", "profile", "whoami",
)  # fmt: skip


def _requires_argument(args_hint: str) -> bool:
    """A plugin command whose hint starts with ``<`` cannot run from a menu tap."""
    return args_hint.strip().startswith("<")


def telegram_bot_commands() -> list[tuple[str, str]]:
    """(name, description) for Telegram's setMyCommands: every command under a name
    Telegram takes, then the plugins' commands that run without an argument."""
    result = [(_sanitize_telegram_name(c.name), c.description) for c in _gateway_commands()]
    for name, description, args_hint in _plugin_commands():
        if not _requires_argument(args_hint):
            result.append((_sanitize_telegram_name(name), description))
    return [(name, description) for name, description in result if name]


def _telegram_menu_config() -> dict[str, Any]:
    """``platforms.telegram.extra.command_menu``: its cap (1-100, else 60), priority
    mode (prepend, append or replace) and priority list."""
    try:
        from hermes_cli.config import read_raw_config

        raw = read_raw_config() or {}
    except Exception:
        raw = {}
    menu: Any = raw
    for key in ("platforms", "telegram", "extra", "command_menu"):
        menu = menu.get(key) if isinstance(menu, Mapping) else None
    menu = menu if isinstance(menu, Mapping) else {}
    try:
        cap = int(menu.get("max_commands", _DEFAULT_TELEGRAM_MENU_MAX_COMMANDS))
    except (TypeError, ValueError):
        cap = _DEFAULT_TELEGRAM_MENU_MAX_COMMANDS
    mode = str(menu.get("priority_mode") or "prepend").strip().lower()
    priority = menu.get("priority")
    return {
        "max_commands": max(1, min(_TELEGRAM_BOT_API_MAX_COMMANDS, cap)),
        "priority_mode": mode if mode in _TELEGRAM_PRIORITY_MODES else "prepend",
        "priority": [str(p) for p in priority if str(p).strip()]
        if isinstance(priority, list)
        else [],
    }


def telegram_menu_max_commands() -> int:
    """How many commands Telegram's menu shows (the config's, within 1-100; 60 by default)."""
    return int(_telegram_menu_config()["max_commands"])


def _telegram_priority() -> list[str]:
    config = _telegram_menu_config()
    configured, defaults = list(config["priority"]), list(_TELEGRAM_MENU_PRIORITY)
    ordered = {
        "replace": configured,
        "append": defaults + configured,
        "prepend": configured + defaults,
    }[config["priority_mode"]]
    return list(dict.fromkeys(n for n in map(_sanitize_telegram_name, ordered) if n))


def _collect_gateway_skill_entries(
    platform: str,
    max_slots: int,
    reserved_names: set[str],
    desc_limit: int = 100,
    sanitize_name: Callable[[str], str] | None = None,
) -> tuple[list[tuple[str, str, str]], int]:
    """(name, description, key) of the plugins' commands a platform's menu adds after
    the built-in ones, at most ``max_slots``, and how many skills were left out (none:
    hermes has no per-skill slash commands). ``reserved_names`` gains the names used."""
    pairs = []
    for name, description, _ in sorted(_plugin_commands()):
        shown = sanitize_name(name) if sanitize_name else name
        if shown:
            if len(description) > desc_limit:
                description = description[: desc_limit - 3] + "..."
            pairs.append((shown, description, ""))
    entries = _clamp_command_names(pairs, reserved_names)
    reserved_names.update(name for name, *_ in entries)
    return [(n, d, k) for n, d, k in entries][:max_slots], 0


def telegram_menu_commands(max_commands: int = 100) -> tuple[list[tuple[str, str]], int]:
    """Telegram's menu: the commands (the priority ones first), then the plugins',
    cut to ``max_commands``; and how many were cut."""
    priority = {name: rank for rank, name in enumerate(_telegram_priority())}
    core = sorted(
        telegram_bot_commands(),
        key=lambda item: (0, priority[item[0]]) if item[0] in priority else (1, 0),
    )
    extra, hidden = _collect_gateway_skill_entries(
        "telegram",
        max(0, max_commands - len(core)),
        {name for name, _ in core},
        desc_limit=40,
        sanitize_name=_sanitize_telegram_name,
    )
    menu = core + [(name, description) for name, description, _ in extra]
    return menu[:max_commands], hidden + max(0, len(core) - max_commands)


def discord_skill_commands(
    max_slots: int, reserved_names: set[str]
) -> tuple[list[tuple[str, str, str]], int]:
    """(name, description, key) of the slash commands Discord adds after the built-in
    ones (the plugins'; Discord keeps hyphens), at most ``max_slots``; and how many
    skills were left out."""
    return _collect_gateway_skill_entries("discord", max_slots, set(reserved_names), 100)


def discord_skill_commands_by_category(
    reserved_names: set[str],
) -> tuple[dict[str, list[tuple[str, str, str]]], list[tuple[str, str, str]], int]:
    """0.19's ``/skill`` autocomplete by category: empty, as hermes has no per-skill
    slash commands (skills load through the agent's tools)."""
    return {}, [], 0


def slack_native_slashes() -> list[tuple[str, str, str]]:
    """(name, description, usage hint) of each Slack slash: ``/hermes`` first (it takes
    any command as its first word), then /btw and /bg, each command a messaging chat
    offers, their aliases and the plugins' commands, as Slack lets an app register them
    (50 at most; Slack's own names are reached as ``/hermes <command>``)."""
    entries = [("hermes", "Talk to Hermes or run a subcommand", "[subcommand] [args]")]
    seen = {"hermes"}
    offered = _gateway_commands()
    by_alias = {alias: c for c in offered for alias in c.aliases}
    pinned = [
        (a, f"Alias for /{by_alias[a].name} — {by_alias[a].description}", by_alias[a].args_hint)
        for a in _SLACK_PRIORITY_ALIASES
        if a in by_alias
    ]
    canonical = [(c.name, c.description, c.args_hint) for c in offered]
    aliases = [
        (a, f"Alias for /{c.name} — {c.description}", c.args_hint)
        for c in offered
        for a in c.aliases
    ]
    for name, description, hint in pinned + canonical + aliases + _plugin_commands():
        slack = _sanitize_slack_name(name)
        if (
            not slack
            or slack in seen
            or slack in _SLACK_RESERVED_COMMANDS
            or slack in _SLACK_VIA_HERMES_ONLY
            or len(entries) >= _SLACK_MAX_SLASH_COMMANDS
        ):
            continue
        seen.add(slack)
        entries.append((slack, description[:140], (hint or "")[:100]))
    return entries


def slack_app_manifest(
    request_url: str = "https://hermes-agent.local/slack/commands",
) -> dict[str, Any]:
    """The ``features.slash_commands`` part of a Slack app manifest (Socket Mode
    ignores the URL, which Slack's schema still asks for)."""
    slashes = []
    for name, description, usage in slack_native_slashes():
        entry = {
            "command": f"/{name}",
            "description": description or f"Run /{name}",
            "should_escape": False,
            "url": request_url,
        }
        if usage:
            entry["usage_hint"] = usage
        slashes.append(entry)
    return {"features": {"slash_commands": slashes}}


def slack_subcommand_map() -> dict[str, str]:
    """``/hermes <word>`` -> the command it runs: every command, then the plugins'
    (a plugin never shadows a built-in)."""
    mapping = {name: f"/{name}" for c in _gateway_commands() for name in (c.name, *c.aliases)}
    for name, _, _ in _plugin_commands():
        mapping.setdefault(name, f"/{name}")
    return mapping


# -- the prompt's completion -------------------------------------------------------------


def _short(description: str) -> str:
    return description[:50] + ("..." if len(description) > 50 else "")


class SlashCommandCompleter(Completer):
    """Completes ``/command`` (hermes's, the skills ``skill_commands_provider`` gives,
    the plugins'), then a command's first word (its ``SUBCOMMANDS``).

    ``command_filter("/name")`` False hides a command. A name typed in full completes
    with a trailing space, so the menu moves on to its arguments.
    """

    def __init__(
        self,
        skill_commands_provider: Callable[[], Mapping[str, dict[str, Any]]] | None = None,
        command_filter: Callable[[str], bool] | None = None,
        skill_bundles_provider: Callable[[], Mapping[str, dict[str, Any]]] | None = None,
    ) -> None:
        self._skill_commands_provider = skill_commands_provider
        self._command_filter = command_filter
        self._skill_bundles_provider = skill_bundles_provider

    def _command_allowed(self, slash_command: str) -> bool:
        if self._command_filter is None:
            return True
        try:
            return bool(self._command_filter(slash_command))
        except Exception:
            return True  # a broken filter hides nothing

    @staticmethod
    def _provided(
        provider: Callable[[], Mapping[str, dict[str, Any]]] | None,
    ) -> Mapping[str, dict[str, Any]]:
        """What a provider gives; nothing when it has none or fails."""
        if provider is None:
            return {}
        try:
            return provider() or {}
        except Exception:
            return {}

    @staticmethod
    def _completion_text(name: str, word: str) -> str:
        return f"{name} " if name == word else name

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/"):
            return
        parts = text.split(maxsplit=1)
        if len(parts) > 1 or text.endswith(" "):
            yield from self._subcommands(parts[0].lower(), parts[1] if len(parts) > 1 else "")
            return
        word = text[1:]
        found: list[tuple[str, str]] = [
            (cmd[1:], description)
            for cmd, description in COMMANDS.items()
            if self._command_allowed(cmd)
        ]
        for cmd, info in self._provided(self._skill_bundles_provider).items():
            described = _short(str(info.get("description", "Skill bundle")))
            found.append((cmd[1:], f"▣ {described} ({len(info.get('skills', []))} skills)"))
        for cmd, info in self._provided(self._skill_commands_provider).items():
            found.append((cmd[1:], f"⚡ {_short(str(info.get('description', 'Skill command')))}"))
        for name, description, _ in _plugin_commands():
            found.append((name, f"🔌 {_short(description)}"))
        for name, meta in found:
            if name.startswith(word):
                yield Completion(
                    self._completion_text(name, word),
                    start_position=-len(word),
                    display=f"/{name}",
                    display_meta=meta,
                )

    def _subcommands(self, command: str, typed: str) -> Iterable[Completion]:
        if " " in typed or not self._command_allowed(command):
            return
        lowered = typed.lower()
        for sub, meta in _first_words(command):
            if sub.startswith(lowered) and sub != lowered:
                yield Completion(sub, start_position=-len(typed), display=sub, display_meta=meta)


def _first_words(command: str) -> list[tuple[str, str]]:
    """The words a command's first argument takes, with a note: its SUBCOMMANDS, or for
    /personality the personalities the config offers now (as 0.19 completes them)."""
    if command != "/personality":
        return [(sub, "") for sub in SUBCOMMANDS.get(command, [])]
    from hermes.agent.preferences import personalities, personality_prompt
    from hermes.config import load_config

    try:
        offered = personalities(load_config())
    except Exception:  # a config that cannot be read completes nothing, never fails
        return []
    words = [("none", "clear personality overlay")]
    return words + [(name, personality_prompt(v)[:50]) for name, v in offered.items()]


class SlashCommandAutoSuggest(AutoSuggest):
    """Ghost text: the rest of the command name or first word being typed; other input
    gets ``history_suggest``'s suggestion."""

    def __init__(
        self,
        history_suggest: AutoSuggest | None = None,
        completer: SlashCommandCompleter | None = None,
    ) -> None:
        self._history = history_suggest
        self._completer = completer

    def _allowed(self, command: str) -> bool:
        return self._completer is None or self._completer._command_allowed(command)

    def get_suggestion(self, buffer: Any, document: Document) -> Suggestion | None:
        text = document.text_before_cursor
        if text.startswith("/"):
            parts = text.split(maxsplit=1)
            if len(parts) == 1 and not text.endswith(" "):
                word = text[1:].lower()
                for cmd in COMMANDS:
                    if self._allowed(cmd) and cmd[1:].startswith(word) and cmd[1:] != word:
                        return Suggestion(cmd[1 + len(word) :])
                return None
            command, typed = parts[0].lower(), parts[1] if len(parts) > 1 else ""
            if self._allowed(command) and " " not in typed:
                for sub in SUBCOMMANDS.get(command, []):
                    if sub.startswith(typed.lower()) and sub != typed.lower():
                        return Suggestion(sub[len(typed) :])
        if self._history is not None:
            return self._history.get_suggestion(buffer, document)
        return None
