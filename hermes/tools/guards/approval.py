"""Dangerous terminal commands: deciding whether one may run, ask, or is refused.

``check`` says why a command needs approval (or None), by ``command_policy``: a command
passes only when a shell parser reads it as simple commands none of which is risky.
``authorize`` applies it on every surface alike: a command on ``terminal.dangerous_allow``
runs (and any, with ``ctx.yolo``); otherwise an interactive surface asks the user through
``ctx.approve`` and any other refuses. With ``terminal.mode: allowlist`` a command runs at
all only when each of its simple commands matches a ``terminal.allow`` entry (and then
the same check applies).
A refusal is a tool result starting with ``Refused:``, never an exception.
"""

from __future__ import annotations

import fnmatch
import glob
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.config import Config
from hermes.tools import workspaces
from hermes.tools.guards import (
    command_paths,
    command_policy,
    protected,
    read_only,
    sandbox,
    shell_parse,
    view,
)

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext


def check(
    command: str, config: Config | None = None, cwd: Path | None = None, start: Path | None = None
) -> str | None:
    """Why ``command`` needs approval, or None when it may just run.

    ``cwd`` is the session's working directory, the boundary for deletes and moves;
    ``start`` is where the command starts (the terminal's ``workdir``), by default ``cwd``.
    """
    reason = command_policy.risk(command, cwd or Path.cwd(), start)
    return reason or _configured_risk(command, config)


def is_allowed(command: str, config: Config | None) -> bool:
    """Whether ``command`` matches an entry of ``terminal.dangerous_allow``.

    An entry matches the whole command (spaces normalised) exactly, as a shell-style
    glob (``rm -rf /tmp/build-*``), or as a regular expression when written ``re:...``.
    A glob or regex matches one simple command only: a chained, piped or substituted
    command (or one that does not parse) is allowed only by an entry that equals it, so
    ``*`` can never stretch over ``; rm -rf ~``.
    """
    entries, equal, script = _against(command, config, "terminal.dangerous_allow")
    if equal or script is None:
        return equal
    return not script.compound and any(_matches(command, entry) for entry in entries)


def unlisted_part(command: str, config: Config | None) -> str | None:
    """With ``terminal.mode: allowlist``, the first simple command no ``terminal.allow`` entry matches.

    None when the mode is ``approve`` or every part is listed. A command that does not
    parse is listed only by an entry equal to it.
    """
    if config is None or config.get("terminal.mode") != "allowlist":
        return None
    entries, equal, script = _against(command, config, "terminal.allow")
    if equal:
        return None
    if script is None:
        return command
    for simple in script.commands:
        if simple.text and not any(_matches(simple.text, entry) for entry in entries):
            return simple.text
    return None if script.commands else command


def _against(
    command: str, config: Config | None, key: str
) -> tuple[list[str], bool, shell_parse.Script | None]:
    """The entries of the list ``key``; whether ``command`` equals one (spaces
    normalised); if not, the command parsed to match them against (None: it does not
    parse)."""
    entries = [str(e).strip() for e in _config_list(config, key)]
    if any(_normal(command) == _normal(entry) for entry in entries):
        return entries, True, None
    try:
        return entries, False, shell_parse.parse(command)
    except shell_parse.ParseError:
        return entries, False, None


def _matches(text: str, entry: str) -> bool:
    """Whether one simple command's ``text`` matches an allow entry: exact, glob or ``re:``."""
    normal = _normal(text)
    if entry.startswith("re:"):
        try:
            return bool(re.fullmatch(entry[3:], text.strip()) or re.fullmatch(entry[3:], normal))
        except re.error:
            return False
    return normal == _normal(entry) or fnmatch.fnmatchcase(normal, entry)


def _normal(text: str) -> str:
    return " ".join(text.split())


def authorize(command: str, ctx: ToolContext, workdir: Path | None = None) -> str | None:
    """None when ``command`` may run in ``workdir`` (default ``ctx.cwd``); else the refusal."""
    start = workdir or ctx.cwd
    secret = _hidden_read(command, ctx, start, view.HIDE)
    if secret:
        return f"Refused: {secret}. {_ASK}"
    unlisted = unlisted_part(command, ctx.config)
    if unlisted:
        return (
            f"Refused: terminal.mode is allowlist and '{unlisted}' matches no terminal.allow "
            "entry, so it does not run on any surface. Use only the commands listed there, or "
            "ask the user to add this one to terminal.allow in config.yaml."
        )
    if sandbox.mode_of(ctx).sandboxed:
        # The kernel keeps the command to the workspace; ask only about what it can still
        # lose or send there (git history, a force push) and the operator's own patterns.
        reason = command_policy.sandboxed_risk(command) or _configured_risk(command, ctx.config)
        if reason is None or is_allowed(command, ctx.config) or ctx.yolo:
            return None
    else:
        reason = _unsandboxed_reason(command, ctx, start)
        if reason is None:
            # The sandbox would hide the rest of the home too; at the keyboard it is the
            # user's own, elsewhere (a gateway user's `cat ~/notes`) it stays unread.
            home = None if ctx.interactive else _hidden_read(command, ctx, start, view.HOME)
            return f"Refused: {home}. {_ASK}" if home else None
    if ctx.approve is None or not ctx.interactive:
        return (
            f"Refused: this command {reason}, so it needs approval, and nobody can approve it on "
            f"this surface ({ctx.surface}). Do it another way, or ask the user to run it "
            "themselves or to add it to terminal.dangerous_allow in config.yaml."
        )
    try:
        approved = bool(ctx.approve(command, reason))
    except Exception as exc:  # a broken prompt must not run the command
        return f"Refused: this command {reason} and asking for approval failed ({exc}). It was not run."
    if not approved:
        return f"Refused: this command {reason}; the user declined to approve it. It was not run. Ask the user how to proceed."
    return None


def _unsandboxed_reason(command: str, ctx: ToolContext, start: Path) -> str | None:
    """Without a sandbox: why ``command`` needs approval, or None when it may just run.

    Where nobody can approve, a command runs only when it is read-only by parse or the
    operator listed it (``terminal.dangerous_allow``, or ``terminal.mode: allowlist``)."""
    # `--yolo` is the user's own leave for this run, as good as a listed command.
    listed = is_allowed(command, ctx.config) or _allowlist_mode(ctx.config) or ctx.yolo
    # A protected write needs approval even when allow-listed: the allow list lives in one.
    reason = _protected_write(command, ctx, start)
    if reason is None:
        reason = check(command, ctx.config, ctx.cwd, start)
        if reason is not None and listed:
            reason = None
    if reason is None and not listed and (ctx.approve is None or not ctx.interactive):
        not_read_only = read_only.why_not_read_only(
            command, start, ctx.hermes_home, workspaces.carved_out(ctx)
        )
        if not_read_only:
            return f"{not_read_only}, and without a sandbox only read-only commands run here"
    return reason


_ASK = "Ask the user for what you need from it."


def _allowlist_mode(config: Config | None) -> bool:
    """``terminal.mode: allowlist`` (``authorize`` has already refused an unlisted part)."""
    return config is not None and config.get("terminal.mode") == "allowlist"


def _configured_risk(command: str, config: Config | None) -> str | None:
    for extra in _extra_patterns(config):
        if extra.search(command):
            return f"matches the configured dangerous pattern '{extra.pattern}'"
    return None


def _hidden_read(command: str, ctx: ToolContext, start: Path, mount: str) -> str | None:
    """Why ``command`` reads a path the one view (the file tools' too) hides with
    ``mount``: ``view.HIDE`` for secrets (hermes's home, credentials, the store,
    ``terminal.hidden_paths``, another user's workspace), ``view.HOME`` for the rest of
    the home. ``/tmp``, ``/dev`` and ``/proc`` are the command's own in the sandbox and
    the host's without one: not asked about."""
    reads = command_paths.written_and_read(command)[1]
    if not reads:
        return None
    table = view.rules(ctx)

    def hidden(path: Path, ctx: ToolContext) -> str | None:
        rule = view.rule_for(path, table)
        return f"{path} {rule.why}" if rule.access == view.HIDDEN and rule.mount == mount else None

    return _first_reason(reads, hidden, ctx, start)


def _protected_write(command: str, ctx: ToolContext, start: Path) -> str | None:
    writes = command_paths.written_and_read(command)[0]
    return _first_reason(writes, protected.protected_reason, ctx, start)


def _first_reason(
    words: Iterable[str],
    reason_for: Callable[[Path, ToolContext], str | None],
    ctx: ToolContext,
    start: Path,
) -> str | None:
    """The first reason ``reason_for`` gives for one of the paths the words name."""
    for word in words:
        for path in _paths(command_paths.resolve_word(word, start)):
            reason = reason_for(path, ctx)
            if reason:
                return reason
    return None


def _paths(path: Path) -> list[Path]:
    """``path``, or what it matches when it is a glob (``~/.her*/.env`` is the secret file)."""
    if not any(c in str(path) for c in "*?["):
        return [path]
    return [Path(p) for p in glob.glob(str(path), include_hidden=True)] + [path]


def _extra_patterns(config: Config | None) -> list[re.Pattern[str]]:
    compiled = []
    for entry in _config_list(config, "terminal.dangerous_patterns"):
        try:
            compiled.append(re.compile(str(entry)))
        except re.error:
            compiled.append(re.compile(re.escape(str(entry))))  # a bad regex still means that text
    return compiled


def _config_list(config: Config | None, key: str) -> list[object]:
    if config is None:
        return []
    try:
        value = config.get(key)
    except KeyError:
        return []
    return list(value) if isinstance(value, list | tuple) else []
