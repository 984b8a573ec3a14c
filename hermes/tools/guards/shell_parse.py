"""Reading a shell command line into the simple commands it runs, with ``bashlex``.

``parse`` walks bashlex's syntax tree (lists, pipelines, compound commands, functions,
redirections, command and process substitutions) and returns every simple command in
source order, each with its words after quote removal. A word whose value is decided
at run time (a ``$(...)``, `` `...` ``, ``<(...)``, a parameter other than ``$HOME``, or
a brace expansion ``{a,b}``) is marked ``dynamic``: nobody can tell in advance what it says. ``unwrap`` looks through
wrappers (``sudo``, ``timeout``, ``xargs``, ``env``, ``busybox`` ...) to the command
they run. Input bashlex cannot read raises ``ParseError``; callers treat it as unknown.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import bashlex

_LOCK = threading.Lock()  # bashlex keeps module-level parser state
_HOME_PARAMETERS = {"HOME"}
_WRITE_OPERATORS = {">", ">>", ">|", "&>", "&>>", "<>", ">&"}
_INPUT_OPERATORS = {"<", "<<", "<<-", "<<<"}
_QUOTED = re.compile(r"'[^']*'" + r'|"(?:[^"\\]|\\.)*"')  # a quoted part of a word
_BRACES = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)


class ParseError(ValueError):
    """The command is not shell that bashlex can read."""


@dataclass(frozen=True)
class Word:
    text: str
    dynamic: bool = False


@dataclass(frozen=True)
class Redirect:
    operator: str
    target: Word | None  # None for a descriptor copy such as 2>&1

    @property
    def writes(self) -> bool:
        return self.operator in _WRITE_OPERATORS and self.target is not None

    @property
    def reads_input(self) -> bool:
        return self.operator in _INPUT_OPERATORS


@dataclass(frozen=True)
class SimpleCommand:
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...] = ()
    text: str = ""
    piped: bool = False  # its standard input is a pipe


@dataclass
class Script:
    commands: list[SimpleCommand] = field(default_factory=list)
    # More than one simple command, or any pipe, list, substitution, loop or function.
    compound: bool = False
    self_calling_functions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Unwrapped:
    """The command a wrapper chain finally runs, and what the wrappers add to it."""

    words: tuple[Word, ...]
    wrappers: tuple[str, ...] = ()
    fed_arguments: bool = False  # xargs/parallel append words read from input
    shell_code: str | None = None  # a wrapper that hands a string to a shell


def parse(command: str) -> Script:
    """Every simple command of ``command``, in order; ParseError if it does not parse."""
    if not command.strip():
        return Script()
    try:
        with _LOCK:
            trees = bashlex.parse(command)
    except Exception as exc:  # bashlex raises many kinds (ParsingError, NotImplementedError...)
        raise ParseError(_describe(exc)) from exc
    walker = _Walker(command)
    try:
        for tree in trees:
            walker.visit(tree, piped=False)
    except RecursionError as exc:
        raise ParseError("nested too deeply") from exc
    script = walker.script
    script.compound = script.compound or len(script.commands) > 1
    return script


def _describe(exc: Exception) -> str:
    message = str(exc).split(" (position")[0].strip()
    return message or type(exc).__name__


class _Walker:
    """Collects the simple commands of a bashlex tree; one method per node kind."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.script = Script()

    def visit(self, node: Any, piped: bool) -> None:
        kind = node.kind
        if kind == "command":
            self._command(node, piped)
        elif kind == "pipeline":
            self.script.compound = True
            commands = [p for p in node.parts if p.kind not in ("pipe", "reservedword")]
            for i, part in enumerate(commands):
                self.visit(part, piped=piped or i > 0)
        elif kind == "function":
            self._function(node, piped)
        elif kind in ("list", "compound", "if", "for", "while", "until"):
            self.script.compound = True
            for part in getattr(node, "parts", None) or getattr(node, "list", []):
                self.visit(part, piped)
            self._loose_redirects(node)
        elif kind == "word":
            self._word(node, piped)  # a `for` list word: its substitutions run
        elif kind not in ("operator", "reservedword", "pipe"):
            raise ParseError(f"unsupported shell construct ({kind})")

    def _command(self, node: Any, piped: bool) -> None:
        words: list[Word] = []
        redirects: list[Redirect] = []
        for part in node.parts:
            if part.kind == "redirect":
                redirects.append(self._redirect(part, piped))
            elif part.kind == "word" and not (words == [] and _ASSIGNMENT.fullmatch(part.word)):
                words.append(self._word(part, piped))
            else:  # an assignment before the command name: its substitutions still run
                self._word(part, piped)
        text = self.source[node.pos[0] : node.pos[1]]
        self.script.commands.append(SimpleCommand(tuple(words), tuple(redirects), text, piped))

    def _function(self, node: Any, piped: bool) -> None:
        self.script.compound = True
        name = node.parts[0].word
        before = len(self.script.commands)
        for part in node.parts[1:]:
            self.visit(part, piped)
        body = self.script.commands[before:]
        if any(c.words and c.words[0].text == name for c in body):
            self.script.self_calling_functions.append(name)

    def _loose_redirects(self, node: Any) -> None:
        """Redirections of a compound command (``{ ...; } > f``) as a command of no words."""
        redirects = tuple(self._redirect(r, False) for r in getattr(node, "redirects", []) or [])
        if redirects:
            self.script.commands.append(SimpleCommand((), redirects, "", False))

    def _redirect(self, node: Any, piped: bool) -> Redirect:
        heredoc = getattr(node, "heredoc", None)
        if heredoc is not None and re.search(r"\$\(|`", heredoc.value):
            raise ParseError("a here-document with a command substitution")
        target = node.output if hasattr(node.output, "kind") else None
        word = self._word(target, piped) if target is not None and target.kind == "word" else None
        return Redirect(node.type, word)

    def _word(self, node: Any, piped: bool) -> Word:
        """The word as written; the commands of its substitutions are collected too.

        A ``$(...)`` reads the standard input of the command it stands in; a ``>(...)``
        reads what is written to it, so it counts as reading a pipe.
        """
        dynamic = False
        for part in getattr(node, "parts", []) or []:
            if part.kind in ("commandsubstitution", "processsubstitution"):
                dynamic = True
                self.script.compound = True
                self.visit(part.command, piped=piped or part.kind == "processsubstitution")
            elif part.kind == "parameter":
                if re.search(r"\$\(|`", part.value):
                    raise ParseError("a command substitution inside ${...}")
                dynamic = dynamic or part.value not in _HOME_PARAMETERS
        raw = self.source[node.pos[0] : node.pos[1]]
        return Word(node.word, dynamic or _has_brace_expansion(raw))


def _has_brace_expansion(raw: str) -> bool:
    """Whether bash expands ``{a,b}`` or ``{1..3}`` in the word as written (quotes aside)."""
    unquoted = _QUOTED.sub("", raw)
    return bool(_BRACES.search(unquoted))


# Wrappers run the command that follows their own options. Each entry: the options
# that take a value, how many operands come before the command, and whether it feeds
# the command extra arguments from its input.
@dataclass(frozen=True)
class _Wrapper:
    valued: frozenset[str] = frozenset()
    operands: int = 0
    feeds: bool = False
    code_options: frozenset[str] = frozenset()  # options whose value is shell code
    no_command_options: frozenset[str] = frozenset()  # options that mean "run nothing"
    stop_words: frozenset[str] = frozenset()  # words that end the command (parallel's :::)


def _w(
    valued: str = "",
    *,
    operands: int = 0,
    feeds: bool = False,
    code_options: str = "",
    no_command_options: str = "",
    stop_words: str = "",
) -> _Wrapper:
    """A wrapper from space-separated option lists, as the table below reads best."""
    return _Wrapper(
        valued=frozenset(valued.split()),
        operands=operands,
        feeds=feeds,
        code_options=frozenset(code_options.split()),
        no_command_options=frozenset(no_command_options.split()),
        stop_words=frozenset(stop_words.split()),
    )


WRAPPERS: dict[str, _Wrapper] = {
    "sudo": _w(
        "-u -g -h -p -C -D -r -t -U -T --user --group --host --prompt --chdir --role --type",
        code_options="-s -i --shell --login",
    ),
    "doas": _w("-u -C", code_options="-s"),
    "nohup": _w(),
    "setsid": _w(),
    "builtin": _w(),
    "command": _w(no_command_options="-v -V"),
    "nice": _w("-n --adjustment"),
    "ionice": _w("-c -n --class --classdata", no_command_options="-p -P -u --pid --pgid --uid"),
    "env": _w("-u --unset -C --chdir", code_options="-S --split-string"),
    "timeout": _w("-s --signal -k --kill-after", operands=1),
    "stdbuf": _w("-i -o -e --input --output --error"),
    "time": _w("-f --format -o --output"),
    "chroot": _w("--userspec --groups", operands=1),
    "flock": _w(
        "-w --wait --timeout -E --conflict-exit-code", operands=1, code_options="-c --command"
    ),
    "watch": _w("-n --interval -q --equexit"),
    "busybox": _w(),
    "xargs": _w(
        "-a --arg-file -d --delimiter -E -I -L -n --max-args -P --max-procs -s --max-chars "
        "--process-slot-var",
        feeds=True,
    ),
    "parallel": _w(
        "-j --jobs -N -S --sshlogin --joblog --results -a --arg-file --delay --timeout -d "
        "--delimiter -I --colsep --halt --retries",
        feeds=True,
        stop_words="::: :::: :::+ ::::+",
    ),
}
# watch and parallel hand their words to a shell: a word with shell syntax is code.
_SHELL_JOINERS = {"watch", "parallel"}
_SHELL_SYNTAX = re.compile(r"[\s;&|<>()`$\\]")


def unwrap(words: tuple[Word, ...]) -> Unwrapped:
    """The command ``words`` finally runs, looking through every wrapper in front of it."""
    names: list[str] = []
    fed = False
    while words and not words[0].dynamic and os.path.basename(words[0].text) in WRAPPERS:
        name = os.path.basename(words[0].text)
        names.append(name)
        spec = WRAPPERS[name]
        rest, code = _after_options(name, spec, words[1:])
        if code:
            return Unwrapped((), tuple(names), fed, code)
        if name in _SHELL_JOINERS and any(_SHELL_SYNTAX.search(w.text) for w in rest):
            return Unwrapped((), tuple(names), fed, f"{name} runs its arguments as shell code")
        fed = fed or spec.feeds
        words = rest
    return Unwrapped(words, tuple(names), fed)


def _after_options(
    name: str, spec: _Wrapper, words: tuple[Word, ...]
) -> tuple[tuple[Word, ...], str | None]:
    """The words after the wrapper's options and operands, or the reason it runs code."""
    rest, outcome = _skip_options(name, spec, words)
    if outcome is None and spec.operands:  # options may follow the operand (flock FILE -c ...)
        rest, outcome = _skip_options(name, spec, rest[spec.operands :])
    if outcome:
        return (), None if outcome == "nothing" else outcome
    for n, word in enumerate(rest):
        if word.text in spec.stop_words:
            return rest[:n], None
    return rest, None


def _skip_options(
    name: str, spec: _Wrapper, words: tuple[Word, ...]
) -> tuple[tuple[Word, ...], str | None]:
    """Words after the leading options; or "nothing" / a code reason as the outcome."""
    i = 0
    while i < len(words):
        text = words[i].text
        option = text.split("=", 1)[0]
        if option in spec.code_options:
            return (), f"{name} {option} runs a string as shell code"
        if option in spec.no_command_options:
            return (), "nothing"
        if text == "--":
            return words[i + 1 :], None
        if name in ("env", "sudo") and _ASSIGNMENT.fullmatch(text):
            i += 1
        elif text.startswith("-") and len(text) > 1:
            i += 2 if text in spec.valued else 1
        else:
            break
    return words[i:], None
