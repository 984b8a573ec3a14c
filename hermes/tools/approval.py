"""Dangerous terminal commands: recognising them and deciding whether one may run.

``check`` says why a command is dangerous (or None). ``authorize`` applies the policy:
a command on the ``terminal.dangerous_allow`` list runs; otherwise an interactive
surface asks the user through ``ctx.approve``; a surface with nobody to ask refuses.
A refusal is a tool result starting with ``Refused:``, never an exception.

The checks are deliberately about the shapes that destroy a machine or hand it to a
stranger (broad recursive deletes, formatting disks, fork bombs, piping a download into
a shell, writing system paths, power-off); they are a seat belt, not a sandbox.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.config import Config
from hermes.tools import command_paths, protected

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext

# Where a command name can stand: the start, after a separator or a subshell opener,
# or after sudo (with its flags).
_AT_COMMAND = r"(?:^|[;&|({`\n]\s*|\$\(\s*)(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?"
_SHELLS = r"(?:ba|z|da|k|fi|c|tc)?sh"
# An interpreter reads its program from a pipe only when given no script of its own,
# so `curl ... | python -m json.tool` is fine and `curl ... | python` is not.
_STDIN_INTERPRETERS = r"(?:python[0-9.]*|perl|ruby|node)\s*(?:-\s*)?(?:$|[;&|\n)])"
_PIPED_FROM_DOWNLOAD = (
    r"\b(?:curl|wget|fetch)\b[^;&\n]*\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?(?:\S*/)?"
)
_SYSTEM_DIRS = r"(?:etc|boot|usr|bin|sbin|lib|lib32|lib64|sys|proc)"

PATTERNS: tuple[tuple[str, str], ...] = (
    (_AT_COMMAND + r"mkfs(?:\.\w+)?\b", "formats a disk (mkfs)"),
    (_AT_COMMAND + r"(?:fdisk|sfdisk|parted|wipefs)\b", "rewrites a disk's partitions"),
    (
        r"\bdd\b[^;&|\n]*\bof=/dev/(?!null\b|zero\b|stdout\b|stderr\b)",
        "writes raw data to a device (dd of=/dev/...)",
    ),
    (r">\s*/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk)\w*", "writes raw data over a disk device"),
    (r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:", "is a fork bomb"),
    (r"\b(\w+)\s*\(\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}", "is a fork bomb"),
    (_PIPED_FROM_DOWNLOAD + r"(?:" + _SHELLS + r")\b", "pipes a download straight into a shell"),
    (_PIPED_FROM_DOWNLOAD + _STDIN_INTERPRETERS, "pipes a download straight into an interpreter"),
    (
        r"\b(?:"
        + _SHELLS
        + r"|source|eval|\.)\s+(?:-\S+\s+)*[\"']?(?:\$\(|<\()\s*(?:curl|wget|fetch)\b",
        "runs a downloaded script in a shell",
    ),
    (
        r"(?:>>?|\btee\s+(?:-\S+\s+)*)\s*[\"']?/" + _SYSTEM_DIRS + r"(?:/|\b)",
        "writes to a system path",
    ),
    (
        _AT_COMMAND
        + r"(?:cp|mv|install|ln|rsync)\b[^;&|\n]*\s[\"']?/"
        + _SYSTEM_DIRS
        + r"(?:/\S*)?[\"']?\s*(?:$|[;&|\n])",
        "copies or moves files into a system path",
    ),
    (
        _AT_COMMAND + r"sed\s+(?:-\S+\s+)*-i\S*\s[^;&|\n]*\s[\"']?/" + _SYSTEM_DIRS + r"/",
        "edits a file in a system path in place",
    ),
    (_AT_COMMAND + r"(?:shutdown|reboot|halt|poweroff)\b", "shuts down or restarts the machine"),
    (
        _AT_COMMAND
        + r"(?:systemctl\s+(?:poweroff|reboot|halt|kexec)|init\s+[06]|telinit\s+[06])\b",
        "shuts down or restarts the machine",
    ),
    (
        _AT_COMMAND + r"kill\s+(?:-\S+\s+)*-1\s*(?:$|[;&|\n])",
        "kills every process the user owns (kill -1)",
    ),
    (
        _AT_COMMAND + r"find\s+(?:/|~|\$HOME|\$\{HOME\})/?\s[^;&|\n]*-delete\b",
        "deletes files across a whole tree (find -delete)",
    ),
    (r"--no-preserve-root\b", "disables the protection against deleting / (--no-preserve-root)"),
)
_COMPILED = tuple((re.compile(p), reason) for p, reason in PATTERNS)

_TOP_DIRS = {
    "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "media", "mnt", "opt",
    "proc", "root", "run", "sbin", "srv", "sys", "usr", "var", "tmp",
    "Applications", "Library", "System", "Users", "Volumes", "private",
}  # fmt: skip
_HOME_WORDS = {"~", "$HOME", "${HOME}"}
_LOCAL_WORDS = {"*", ".", "..", "./", "../", "./*", "../*", ".*"}
_WRAPPERS = {"sudo", "doas", "nohup", "nice", "ionice", "time", "command", "exec", "env", "builtin"}
_FLAGS_WITH_VALUE = {"-u", "-g", "-n", "-c", "-C", "-U"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")
_SEPARATORS = {";", "&", "&&", "|", "||", "(", ")", "\n", "|&", ";;"}


def check(command: str, config: Config | None = None) -> str | None:
    """Why ``command`` is dangerous, or None if it is not recognised as such."""
    text = command.replace("\\\n", " ")
    reason = _check_words(text)
    if reason:
        return reason
    for pattern, why in _COMPILED:
        if pattern.search(text):
            return why
    for extra in _extra_patterns(config):
        if extra.search(text):
            return f"matches the configured dangerous pattern '{extra.pattern}'"
    return None


def is_allowed(command: str, config: Config | None) -> bool:
    """Whether ``command`` matches an entry of ``terminal.dangerous_allow``.

    An entry matches the whole command (spaces normalised) exactly, as a shell-style
    glob (``rm -rf /tmp/build-*``), or as a regular expression when written ``re:...``.
    A glob or regex matches one simple command only: a chained, piped or substituted
    command (or one that does not lex) is allowed only by an entry that equals it, so
    ``*`` can never stretch over ``; rm -rf ~``.
    """
    entries = _config_list(config, "terminal.dangerous_allow")
    normal = " ".join(command.split())
    simple = _is_one_simple_command(command)
    for entry in entries:
        entry = str(entry).strip()
        if normal == " ".join(entry.split()):
            return True
        if not simple:
            continue
        if entry.startswith("re:"):
            try:
                if re.fullmatch(entry[3:], command.strip()) or re.fullmatch(entry[3:], normal):
                    return True
            except re.error:
                continue
        elif fnmatch.fnmatchcase(normal, entry):
            return True
    return False


def _is_one_simple_command(command: str) -> bool:
    """Whether ``command`` lexes as one simple command: no separator, pipe or substitution.

    Substitution is looked for in the raw text, quotes or not (``"$(...)"`` still runs),
    so a quoted ``$(`` only costs an exact-match requirement, never a wrong allow.
    """
    if any(mark in command for mark in ("$(", "`", "<(", ">(")):
        return False
    lexer = _lexer(command)
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: not something a glob may vouch for
        return False
    return bool(tokens) and not any(set(t) <= set(";&|()\n") for t in tokens)


def authorize(command: str, ctx: ToolContext) -> str | None:
    """None when ``command`` may run; otherwise the ``Refused: ...`` tool result."""
    secret = _secret_read(command, ctx)
    if secret:
        return f"Refused: {secret}. Ask the user for what you need from it."
    # A protected write needs approval even when allow-listed: the allow list lives in one.
    reason = _protected_write(command, ctx)
    if reason is None:
        reason = check(command, ctx.config)
        if reason is None or is_allowed(command, ctx.config):
            return None
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


def _secret_read(command: str, ctx: ToolContext) -> str | None:
    return _first_reason(command_paths.written_and_read(command)[1], protected.secret_reason, ctx)


def _protected_write(command: str, ctx: ToolContext) -> str | None:
    return _first_reason(
        command_paths.written_and_read(command)[0], protected.protected_reason, ctx
    )


def _first_reason(
    words: Iterable[str], reason_for: Callable[[Path, ToolContext], str | None], ctx: ToolContext
) -> str | None:
    """The first reason ``reason_for`` gives for one of the paths the words name."""
    for word in words:
        reason = reason_for(command_paths.resolve_word(word, ctx.cwd), ctx)
        if reason:
            return reason
    return None


def _check_words(command: str) -> str | None:
    """Word-level checks a regex gets wrong: recursive rm/chmod/chown of a broad path."""
    for words in _simple_commands(command):
        words = _strip_wrappers(words)
        if not words:
            continue
        name = os.path.basename(words[0])
        if name in ("rm", "chmod", "chown", "chgrp"):
            reason = _recursive_on_broad(name, words[1:])
            if reason:
                return reason
    return None


def _recursive_on_broad(name: str, args: list[str]) -> str | None:
    flags = [a for a in args if a.startswith("-") and a != "--"]
    letters = "rR" if name == "rm" else "R"  # chmod -r means "remove read", not recursive
    recursive = "--recursive" in flags or any(
        not f.startswith("--") and any(c in f for c in letters) for f in flags
    )
    if not recursive:
        return None
    targets = args[args.index("--") + 1 :] if "--" in args else [a for a in args if a[:1] != "-"]
    for target in targets:
        if not _is_broad(target):
            continue
        if name == "rm":
            return f"recursively deletes a broad path ('{target}')"
        if target not in _LOCAL_WORDS:  # a recursive chmod of "." is routine; of "/" a disaster
            return f"recursively changes ownership or permissions of a broad path ('{target}', {name} -R)"
    return None


def _is_broad(target: str) -> bool:
    """Whether deleting ``target`` recursively would take out a home, a system tree or '/'."""
    if target in _LOCAL_WORDS:
        return True
    base = re.sub(r"(?:/\*?|/\.)+$", "", target)  # "/x/", "/x/*" and "/x/." all mean /x
    if base in ("", os.path.expanduser("~")) or base in _HOME_WORDS:
        return True
    if base.startswith("~") and "/" not in base:
        return True  # ~user
    return bool(re.fullmatch(r"/[^/]+", base)) and base[1:] in _TOP_DIRS


def _lexer(command: str) -> shlex.shlex:
    """A shell-like word splitter that keeps ``; & | ( )`` and newlines as tokens."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    return lexer


def _simple_commands(command: str) -> list[list[str]]:
    """Split a command line into its simple commands' words (best effort)."""
    lexer = _lexer(command)
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: fall back to plain words
        tokens = command.replace(";", " ; ").replace("|", " | ").replace("&", " & ").split()
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in _SEPARATORS or set(token) <= set(";&|()\n"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _strip_wrappers(words: list[str]) -> list[str]:
    """Drop ``sudo -u x``, ``env A=1``, ``nohup`` and the like to reach the real command."""
    i = 0
    after_wrapper = False
    while i < len(words):
        word = words[i]
        if os.path.basename(word) in _WRAPPERS:
            after_wrapper = True
        elif after_wrapper and word in _FLAGS_WITH_VALUE:
            i += 1  # the flag's value is not the command either
        elif not (after_wrapper and word.startswith("-")) and not _ASSIGNMENT.fullmatch(word):
            break
        i += 1
    return words[i:]


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
