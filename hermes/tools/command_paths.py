"""Which files a shell command writes or reads by name, for the protected-path checks.

Best effort on the shapes a model writes: redirections (``>``, ``>>``, ``&>``), ``tee``,
the target of ``cp``/``mv``/``install``/``ln``, the files of ``sed -i`` and ``dd of=``.
Every argument counts as a read, so ``cat ~/.hermes/.env`` is seen. Anything the lexer
cannot read is left to the dangerous-command check.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

_PUNCTUATION = ";&|()\n<>"
_WRAPPERS = {"sudo", "doas", "nohup", "nice", "time", "command", "exec", "env", "timeout"}
_TARGET_LAST = {"cp", "mv", "install", "ln", "rsync"}


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command.replace("\\\n", " "), posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes
        return []


def written_and_read(command: str) -> tuple[list[str], list[str]]:
    """The words ``command`` writes to, and every word it passes as an argument."""
    writes: list[str] = []
    commands: list[list[str]] = [[]]
    tokens = _tokens(command)
    for i, token in enumerate(tokens):
        if set(token) <= set(_PUNCTUATION):
            if ">" in token and i + 1 < len(tokens) and not set(tokens[i + 1]) <= set(_PUNCTUATION):
                writes.append(tokens[i + 1])
            commands.append([])
        elif not (i and ">" in tokens[i - 1] and set(tokens[i - 1]) <= set(_PUNCTUATION)):
            commands[-1].append(token)
    reads: list[str] = []
    for words in commands:
        while words and (os.path.basename(words[0]) in _WRAPPERS or "=" in words[0]):
            words = words[1:]
        if not words:
            continue
        reads.extend(words[1:])
        writes.extend(_command_targets(os.path.basename(words[0]), words[1:]))
    return writes, reads


def _command_targets(name: str, args: list[str]) -> list[str]:
    plain = [a for a in args if not a.startswith("-")]
    if name == "tee":
        return plain
    if name in _TARGET_LAST and plain:
        return [plain[-1]]
    if name == "sed" and any(a.startswith("-i") or a == "--in-place" for a in args):
        return plain[1:]
    if name == "dd":
        return [a[3:] for a in args if a.startswith("of=")]
    return []


def resolve_word(word: str, cwd: Path) -> Path:
    """The path a shell word names: ``~`` and ``$HOME`` expanded, relative to ``cwd``."""
    for home in ("$HOME", "${HOME}"):
        if word == home or word.startswith(home + "/"):
            word = "~" + word[len(home) :]
    path = Path(word).expanduser()
    return path if path.is_absolute() else cwd / path
