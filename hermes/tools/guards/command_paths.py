"""Which files a shell command writes or reads by name, for the protected-path checks.

Read from the same parse as the dangerous-command policy (``shell_parse``): output
redirections (``>``, ``>>``, ``&>``), ``tee``, the target of ``cp``/``mv``/``install``/
``ln``/``rsync`` (or their ``-t``), the files of ``sed -i``, ``shred``, ``truncate``,
``dd of=`` and of ``rm``/``unlink``/``rmdir`` (deleting a file is writing it), also
behind wrappers (``sudo tee``). Every argument counts as a read, so ``cat ~/.hermes/.env``
is seen. A command that does not parse falls back to its whitespace-separated words as
reads; the policy asks before running it anyway.
"""

from __future__ import annotations

import os
from pathlib import Path

from hermes.tools.guards import shell_parse
from hermes.tools.guards.shell_parse import Word

_TARGET_LAST = {"cp", "mv", "install", "ln", "rsync"}
_ALL_OPERANDS = {"tee", "shred", "truncate", "rm", "unlink", "rmdir"}  # deleting is writing


def written_and_read(command: str) -> tuple[list[str], list[str]]:
    """The words ``command`` writes to, and every word it passes as an argument."""
    try:
        script = shell_parse.parse(command)
    except shell_parse.ParseError:
        return [], [w.strip("'\"") for w in command.split()]
    writes: list[str] = []
    reads: list[str] = []
    for simple in script.commands:
        writes.extend(r.target.text for r in simple.redirects if r.writes and r.target)
        reads.extend(r.target.text for r in simple.redirects if r.operator == "<" and r.target)
        words = shell_parse.unwrap(simple.words).words
        if words:
            reads.extend(w.text for w in words[1:])
            writes.extend(
                w.text for w in command_writes(os.path.basename(words[0].text), words[1:])
            )
    return writes, reads


def command_writes(name: str, args: tuple[Word, ...]) -> list[Word]:
    """The arguments of command ``name`` that it writes to (not counting redirections)."""
    plain = [a for a in args if not a.text.startswith("-")]
    if name in _TARGET_LAST:
        for i, arg in enumerate(args):  # cp -t DIR / --target-directory=DIR
            if arg.text == "-t" and i + 1 < len(args):
                return [args[i + 1]]
            if arg.text.startswith("--target-directory="):
                return [Word(arg.text.split("=", 1)[1], arg.dynamic)]
    if name in _ALL_OPERANDS:
        return plain
    if name in _TARGET_LAST and plain:
        return [plain[-1]]
    if name == "sed" and any(a.text.startswith("-i") or a.text == "--in-place" for a in args):
        return plain[1:]
    if name == "dd":
        return [Word(a.text[3:], a.dynamic) for a in args if a.text.startswith("of=")]
    return []


def resolve_word(word: str, cwd: Path) -> Path:
    """The path a shell word names: ``~`` and ``$HOME`` expanded, relative to ``cwd``."""
    for home in ("$HOME", "${HOME}"):
        if word == home or word.startswith(home + "/"):
            word = "~" + word[len(home) :]
    try:
        path = Path(word).expanduser()
    except RuntimeError:  # "~nobody": no such user, so the shell keeps the word as it is
        path = Path(word)
    return path if path.is_absolute() else cwd / path
