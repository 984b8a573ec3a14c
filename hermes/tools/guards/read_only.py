"""Which commands only read, judged on their parse: the rule where there is no sandbox.

Without an OS sandbox, a surface where nobody can approve (a gateway platform, the
HTTP API) runs only commands that are read-only by parse: each simple command is a
known reader (``ls``, ``cat``, ``grep``, ``git status`` ...) without an option that
writes or runs code, no output redirection other than to ``/dev/null`` or a
descriptor, no ``cd``, no word computed at run time (``$x``, ``$(...)``, braces), and
no path into hermes's home, ``~/.ssh`` or ``/proc``. Anything else is refused there; an
interactive surface asks as before. This is deliberately narrow: it is the last line
when the kernel cannot be the boundary.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hermes.tools.guards import command_paths
from hermes.tools.guards.shell_parse import ParseError, SimpleCommand, Word, parse, unwrap

# Readers that no option makes write or run something, by kind.
_PLAIN_READERS = (
    *("cat", "head", "tail", "less", "more", "tac", "nl", "od", "hexdump", "strings"),  # show
    *("ls", "tree", "stat", "file", "du", "df", "pwd", "basename", "dirname", "realpath"),  # look
    *("readlink", "which", "type"),
    *("grep", "egrep", "fgrep", "rg", "jq", "cmp", "comm", "diffstat"),  # search, compare
    *("wc", "cut", "tr", "rev", "column", "join", "paste", "fold", "fmt", "expand"),  # reshape
    *("sha256sum", "sha1sum", "md5sum"),  # checksums
    *("whoami", "id", "date", "uname", "hostname", "uptime", "free"),  # the system
    *("echo", "printf", "true", "false", "test", "[", "seq", "expr", "sleep"),  # shell words
)
# Readers, and the options that would make each write or run something.
_READERS: dict[str, frozenset[str]] = dict.fromkeys(_PLAIN_READERS, frozenset())
_READERS |= {
    "sort": frozenset({"-o", "--output"}),
    "diff": frozenset({"--output"}),
    "find": frozenset(
        {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
    ),
    "xxd": frozenset({"-r", "-revert"}),
    "base64": frozenset({"-o", "--output"}),
}
_GIT_READERS = {
    *("status", "log", "show", "diff", "blame", "grep", "describe", "shortlog", "reflog"),
    *("rev-parse", "ls-files", "ls-tree", "cat-file"),  # plumbing
}
_GIT_WRITING_OPTIONS = {"--output", "-o", "--ext-diff", "--textconv", "--exec", "-c"}
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr"}
_BRACES = re.compile(r"\{[^}]*[,.][^}]*\}")


def why_not_read_only(
    command: str, cwd: Path, hermes_home: Path, own: Path | None = None
) -> str | None:
    """Why ``command`` is not read-only by parse (completing "this command ..."), or None.
    ``own`` is a gateway user's workspace kept in hermes's home: theirs to read."""
    try:
        script = parse(command)
    except ParseError as exc:
        return f"cannot be read by the shell parser ({exc})"
    for simple in script.commands:
        reason = _judge(simple, cwd, hermes_home, own)
        if reason:
            return reason
    return None


def _judge(
    simple: SimpleCommand, cwd: Path, hermes_home: Path, own: Path | None = None
) -> str | None:
    for redirect in simple.redirects:
        target = redirect.target
        if redirect.writes and target is not None and target.text not in _HARMLESS_TARGETS:
            return f"writes a file ('{target.text}')"
    unwrapped = unwrap(simple.words)
    if unwrapped.shell_code or unwrapped.wrappers or unwrapped.fed_arguments:
        return "runs a command through a wrapper"
    words = unwrapped.words
    if not words:
        return None
    for word in words:
        reason = _word_reason(word, cwd, hermes_home, own)
        if reason:
            return reason
    name = os.path.basename(words[0].text)
    args = [w.text for w in words[1:]]
    if name == "git":
        return _git(args)
    if name not in _READERS:
        return f"runs '{name}', which is not a known read-only command"
    for arg in args:
        if (
            arg.split("=", 1)[0] in _READERS[name]
            or arg.startswith("-o")
            and "-o" in _READERS[name]
        ):
            return f"passes {name} an option that writes or runs something ({arg})"
    return None


def _word_reason(word: Word, cwd: Path, hermes_home: Path, own: Path | None = None) -> str | None:
    if word.dynamic or _BRACES.search(word.text):
        return f"uses a word computed at run time ('{word.text}')"
    path = Path(os.path.realpath(command_paths.resolve_word(word.text, cwd)))
    if own is not None and (path == own or own in path.parents):
        return None
    for root, what in (
        (Path(os.path.realpath(hermes_home)), "hermes's home"),
        (Path(os.path.realpath(Path.home() / ".ssh")), "~/.ssh"),
        (Path("/proc"), "/proc"),
    ):
        if path == root or root in path.parents:
            return f"reads {what} ('{word.text}')"
    return None


def _git(args: list[str]) -> str | None:
    verb = next((a for a in args if not a.startswith("-")), None)
    if args and args[0].startswith("-") or verb not in _GIT_READERS:
        return f"runs 'git {verb or ' '.join(args)}', which is not a read-only git command"
    for arg in args:
        if arg.split("=", 1)[0] in _GIT_WRITING_OPTIONS:
            return f"passes git an option that writes or runs something ({arg})"
    return None
