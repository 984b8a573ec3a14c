"""Which shell commands are risky: allow by parse, never deny by pattern.

``risk`` parses a command line with a real shell parser (``shell_parse``, on bashlex)
and judges each simple command it runs, wrappers looked through. A command is safe
only when it parses and none of its simple commands is risky; the reason returned
completes the sentence "this command ...". Risky are:

- input that does not parse, a command name computed at run time (``$x``, ``$(...)``),
  ``eval``/``source``/``.``/``exec``, a shell or interpreter reading its program from a
  pipe or here-document, interpreter code given inline (``python -c``, ``bash -c``,
  ``perl -e``, ``node -e``), a wrapper option that takes shell code (``env -S``, ``flock -c``,
  ``sudo -s``), a function that calls itself (the fork-bomb shape);
- wrappers (``sudo``, ``timeout``, ``xargs``, ``env``, ``busybox`` ...) in front of a risky
  command; ``xargs``/``parallel`` feed arguments nobody has seen, so they count as computed;
- writes to block devices or system paths (redirections, ``dd of=``, ``cp``/``tee``/
  ``shred`` targets), disk formatting and partitioning tools, a write to a computed path;
- deleting, or recursively changing, anything not strictly inside the session's
  working directory (``rm -r``, ``chmod/chown/chgrp -R``), ``mv`` of anything from outside
  it, ``find`` with ``-delete``/``-exec``/``-ok`` over a tree outside it; a ``cd`` earlier
  in the line moves where relative paths start but not the boundary, and one that
  cannot be followed makes every relative path unknown;
- git that loses work no reflog brings back (``git_risk``: ``push --force``,
  ``reset --hard``, ``clean -f``, ``branch -D`` ...; ``rebase`` is allowed);
- ``crontab`` other than ``-l``, killing many processes (``kill -1``, a process group,
  ``pkill -u``), ``awk`` programs calling ``system()``, and shutting down or restarting.

A script file (``python3 script.py``, ``bash build.sh``) is run, not read: this is a
seat belt for commands the model writes, not a sandbox.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hermes.tools.guards import command_paths, git_risk
from hermes.tools.guards.shell_parse import ParseError, SimpleCommand, Word, parse, unwrap

_SHELLS = {
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "ash",
    "fish",
    "csh",
    "tcsh",
    "rbash",
    "yash",
}
# An interpreter name, and the short options that mean "the program follows inline".
_INTERPRETERS = (
    (re.compile(r"(?:python|pypy)[0-9.]*"), "c", ("-c",)),
    (re.compile(r"perl[0-9.]*"), "eE", ("-e", "-E")),
    (re.compile(r"ruby[0-9.]*"), "e", ("-e",)),
    (re.compile(r"node(?:js)?"), "ep", ("--eval", "--print")),
    (re.compile(r"php[0-9.]*"), "r", ("--run",)),
    (re.compile(r"lua(?:jit|[0-9.]*)"), "e", ()),
)
_INTERPRETER_VALUED = {"-m", "-W", "-X", "-I", "-M", "-r", "--require", "-o", "-O"}
_CODE_RUNNERS = {"eval", "source", ".", "exec"}
_STDIN_FILES = {"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"}
_DISK_TOOLS = {
    *("fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "cgdisk", "parted"),  # partition tables
    *("mke2fs", "mkswap", "mkntfs", "mkdosfs", "wipefs", "blkdiscard"),  # file systems, wiping
}
_POWER = {"shutdown", "reboot", "halt", "poweroff"}
_SYSTEMCTL_POWER = {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep"}
_DEVICE = re.compile(
    r"/dev/(?:(?:sd|hd|vd|xvd)[a-z]|nvme\d|mmcblk\d|r?disk\d|disk/|loop\d|mapper/|md\d|dm-\d|nbd\d)"
)
_SYSTEM_DIRS = {"etc", "boot", "usr", "bin", "sbin", "lib", "lib32", "lib64", "sys", "proc"}
_FIND_OPTION = re.compile(r"-[HLPD]|-O\d*")  # options before find's start points
_FIND_ACTIONS = {"-delete", "-exec", "-execdir", "-ok", "-okdir"}
_KILL_MANY_OPTIONS = {
    *("-u", "-U", "--euid", "--uid", "--user"),  # by user
    *("-g", "-G", "--group", "--pgroup"),  # by group
    *("-s", "--session", "-P", "--parent"),  # by session or parent
}
_MATCH_ALL = {"", ".", ".*", "^", "$", "^.*$"}
# The arguments xargs and parallel add: read from input, so nobody has seen them.
_COMPUTED = Word("<arguments read from input>", dynamic=True)


@dataclass(frozen=True)
class Place:
    """Where a command runs: ``root`` is the session's working directory, the boundary;
    ``cwd`` is where relative paths start after any ``cd`` (None: a ``cd`` the parse
    cannot follow)."""

    root: Path
    cwd: Path | None


@dataclass(frozen=True)
class Call:
    """One command about to run: its name, its arguments and where it runs."""

    name: str
    args: tuple[Word, ...]
    place: Place
    reads_input: bool  # its standard input is a pipe or a here-document


def risk(command: str, cwd: Path, start: Path | None = None) -> str | None:
    """Why ``command`` needs approval (completing "this command ..."), or None if it is safe.

    ``cwd`` is the session's working directory (the boundary); the command starts in
    ``start``, by default ``cwd``.
    """
    try:
        script = parse(command)
    except ParseError as exc:
        return f"cannot be read by the shell parser ({exc}; plain commands, pipes, && and if/for/while can)"
    if script.self_calling_functions:
        return f"defines a function that calls itself ({script.self_calling_functions[0]}, a fork bomb shape)"
    place = Place(cwd, start or cwd)
    for simple in script.commands:
        reason = _judge_simple(simple, place)
        if reason:
            return reason
        place = Place(cwd, _after_cd(simple, place.cwd))
    return None


def sandboxed_risk(command: str) -> str | None:
    """Inside the sandbox, why ``command`` still needs approval: git that loses work or
    rewrites a remote. Everything else stays in the workspace, so it just runs (a line
    the parser cannot read included: the kernel, not the parse, is the boundary)."""
    try:
        script = parse(command)
    except ParseError:
        return None
    for simple in script.commands:
        words = unwrap(simple.words).words
        if words and os.path.basename(words[0].text) == "git":
            reason = git_risk.risk(words[1:])
            if reason:
                return reason
    return None


def _judge_simple(simple: SimpleCommand, place: Place) -> str | None:
    for redirect in simple.redirects:
        if redirect.writes and redirect.target is not None:
            reason = _write_reason(redirect.target, place)
            if reason:
                return reason
    if not simple.words:
        return None
    reads_input = simple.piped or any(r.reads_input for r in simple.redirects)
    return _judge_words(simple.words, place, reads_input)


def _judge_words(words: tuple[Word, ...], place: Place, reads_input: bool) -> str | None:
    unwrapped = unwrap(words)
    if unwrapped.shell_code:
        return f"hands a string to a shell ({unwrapped.shell_code})"
    words = unwrapped.words
    if not words:
        return "runs a shell through chroot" if "chroot" in unwrapped.wrappers else None
    if words[0].dynamic or any(c in words[0].text for c in "*?["):
        return f"runs a command whose name is computed at run time ('{words[0].text}')"
    args = words[1:] + ((_COMPUTED,) if unwrapped.fed_arguments else ())
    call = Call(os.path.basename(words[0].text), args, place, reads_input)
    reason = _judge_call(call)
    if reason and unwrapped.wrappers:
        return f"{reason} (behind {' '.join(unwrapped.wrappers)})"
    return reason


def _judge_call(call: Call) -> str | None:
    if any(a.text == "--no-preserve-root" for a in call.args):
        return "disables the protection against deleting / (--no-preserve-root)"
    for target in command_paths.command_writes(call.name, call.args):
        reason = _write_reason(target, call.place)
        if reason:
            return reason
    if call.name == "ln" and any(_is_device(_path(a, call.place)) for a in call.args):
        return "links to a disk device, so a later write would go to the disk"
    rule = _RULES.get(call.name) or _name_rule(call.name)
    return rule(call) if rule else None


def _name_rule(name: str) -> Callable[[Call], str | None] | None:
    if name in _SHELLS or any(p.fullmatch(name) for p, _, _ in _INTERPRETERS):
        return _interpreter
    if name.startswith("mkfs") or name in _DISK_TOOLS:
        return lambda call: f"formats or repartitions a disk ({call.name})"
    if name in _POWER:
        return lambda call: f"shuts down or restarts the machine ({call.name})"
    if name in _CODE_RUNNERS:
        return lambda call: f"runs code it reads or builds at run time ({call.name})"
    return None


def _write_reason(target: Word, place: Place) -> str | None:
    if target.dynamic:
        return f"writes to or deletes a path computed at run time ('{target.text}')"
    path = _path(target, place)
    if _is_device(path):
        return f"writes raw data over a disk device ({path})"
    if len(path.parts) > 1 and path.parts[1] in _SYSTEM_DIRS:
        return f"writes to a system path ({path})"
    return None


def _path(word: Word, place: Place) -> Path:
    return Path(os.path.normpath(command_paths.resolve_word(word.text, place.cwd or Path("/"))))


def _is_device(path: Path) -> bool:
    return bool(
        _DEVICE.match(str(path)) or _DEVICE.match(os.path.realpath(path))
    )  # or a link to one


# --- shells and interpreters -------------------------------------------------------


def _interpreter(call: Call) -> str | None:
    letters, long_options = _code_options(call.name)
    for i, arg in enumerate(call.args):
        text = arg.text
        if text in long_options or (_short_cluster(text) and set(text[1:]) & set(letters)):
            return f"runs {call.name} code given inline ({call.name} {text} ...), which cannot be checked"
        if text == "-m" and call.name not in _SHELLS:
            return None  # python -m module: a program of its own
        if (
            i
            and call.args[i - 1].text in _INTERPRETER_VALUED
            or _short_cluster(text)
            or text.startswith("--")
        ):
            continue
        if arg.dynamic:
            return f"runs a {call.name} program produced at run time ('{text}')"
        if text in _STDIN_FILES:
            break
        return None  # a script file: run, not read
    if call.reads_input:
        return f"pipes a program into {call.name} (it reads the code from its standard input)"
    return None


def _awk(call: Call) -> str | None:
    program = next((a for a in _operands_after_valued(call.args, {"-F", "-v", "-f"}) if a), None)
    if program is not None and (program.dynamic or re.search(r"\bsystem\s*\(|\|", program.text)):
        return f"runs commands from an awk program ({call.name} with system() or a pipe)"
    return None


def _operands_after_valued(args: tuple[Word, ...], valued: set[str]) -> list[Word]:
    operands, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg.text in valued:
            skip = True
        elif not arg.text.startswith("-"):
            operands.append(arg)
    return operands


def _code_options(name: str) -> tuple[str, tuple[str, ...]]:
    if name in _SHELLS:
        return "c", ("--command",)
    for pattern, letters, long_options in _INTERPRETERS:
        if pattern.fullmatch(name):
            return letters, long_options
    return "", ()


# --- deleting, moving and changing files --------------------------------------------


def _rm(call: Call) -> str | None:
    if not _has_flag(call.args, "rR", "--recursive"):
        return None
    for target in _operands(call.args):
        if not _inside(target, call.place, strict=True):
            return f"recursively deletes something outside the working directory ('{target.text}')"
    return None


def _change_mode(call: Call) -> str | None:
    if not _has_flag(call.args, "R", "--recursive"):
        return None
    operands = _operands(call.args)
    if not any(a.text.startswith("--reference") for a in call.args):
        operands = operands[1:]  # the mode or owner comes first
    for target in operands:
        if not _inside(target, call.place, strict=False):
            return f"recursively changes permissions or ownership outside the working directory ('{target.text}', {call.name} -R)"
    return None


def _mv(call: Call) -> str | None:
    args = list(call.args)
    into_dir = None
    for i, arg in enumerate(args):  # mv -t DIR SOURCE...: every operand is a source
        if arg.text == "-t" and i + 1 < len(args):
            into_dir = args.pop(i + 1)
            break
        if arg.text.startswith("--target-directory="):
            into_dir = arg
    operands = _operands(tuple(args))
    sources = operands if into_dir else operands[:-1]
    for source in sources:
        if not _inside(source, call.place, strict=True):
            return f"moves something from outside the working directory ('{source.text}')"
    return None


def _find(call: Call) -> str | None:
    texts = [a.text for a in call.args]
    starts = _find_starts(call.args)
    for action in _FIND_ACTIONS & set(texts):
        if not all(_inside(s, call.place, strict=False) for s in starts):
            return f"deletes or runs commands across a tree outside the working directory (find {action})"
    for i, text in enumerate(texts):
        if text in _FIND_ACTIONS - {"-delete"}:
            inner = tuple(a for a in _until_terminator(call.args[i + 1 :]))
            reason = _judge_words(inner, call.place, reads_input=False) if inner else None
            if reason:
                return f"runs a command from find {text} that {reason}"
    return None


def _find_starts(args: tuple[Word, ...]) -> list[Word]:
    """The trees ``find`` walks: the operands after -H/-L/-P/-D/-O and before the expression."""
    starts: list[Word] = []
    i = 0
    while i < len(args) and _FIND_OPTION.fullmatch(args[i].text):
        i += 2 if args[i].text == "-D" else 1
    for arg in args[i:]:
        if arg.text[:1] in ("-", "(", "!", ")"):
            break
        starts.append(arg)
    return starts or [Word(".")]


def _until_terminator(args: tuple[Word, ...]) -> list[Word]:
    words = []
    for arg in args:
        if arg.text in (";", "+"):
            break
        words.append(arg)
    return words


# --- cron, processes, power ------------------------------------------------------


def _crontab(call: Call) -> str | None:
    rest = [a.text for a in call.args]
    if "-u" in rest:  # crontab -u USER -l
        i = rest.index("-u")
        rest = rest[:i] + rest[i + 2 :]
    return None if rest == ["-l"] else "replaces or removes the user's crontab"


def _kill(call: Call) -> str | None:
    args = list(call.args)
    if args and args[0].text in ("-l", "-L", "--list", "--table"):
        return None
    if args and args[0].text in ("-s", "-n", "--signal"):
        args = args[2:]
    elif args and args[0].text.startswith("-") and args[0].text != "--":
        args = args[1:]  # the signal (`-9`, `-KILL`)
    for pid in args:
        if pid.dynamic or pid.text.startswith("-") and pid.text != "--" or pid.text == "0":
            return f"signals many processes at once (kill {pid.text})"
    return None


def _kill_by_name(call: Call) -> str | None:
    for arg in call.args:
        if arg.text.split("=", 1)[0] in _KILL_MANY_OPTIONS:
            return f"kills every process of a user, group or session ({call.name} {arg.text})"
    patterns = [a for a in call.args if not a.text.startswith("-")]
    for pattern in patterns:
        if pattern.dynamic or pattern.text in _MATCH_ALL:
            return f"kills processes by a pattern that may match all of them ({call.name} '{pattern.text}')"
    return None


def _systemctl(call: Call) -> str | None:
    verbs = {a.text for a in call.args} & _SYSTEMCTL_POWER
    return f"shuts down or restarts the machine (systemctl {verbs.pop()})" if verbs else None


def _init(call: Call) -> str | None:
    runlevel = {a.text for a in call.args} & {"0", "6", "1", "s", "S"}
    return f"changes the machine's runlevel ({call.name} {runlevel.pop()})" if runlevel else None


_RULES: dict[str, Callable[[Call], str | None]] = {
    "rm": _rm,
    "chmod": _change_mode,
    "chown": _change_mode,
    "chgrp": _change_mode,
    "mv": _mv,
    "find": _find,
    "git": lambda call: git_risk.risk(call.args),
    "crontab": _crontab,
    "awk": _awk,
    "gawk": _awk,
    "mawk": _awk,
    "nawk": _awk,
    "kill": _kill,
    "pkill": _kill_by_name,
    "killall": _kill_by_name,
    "systemctl": _systemctl,
    "init": _init,
    "telinit": _init,
}


# --- words and places -------------------------------------------------------------------


def _short_cluster(text: str) -> bool:
    return text.startswith("-") and not text.startswith("--") and len(text) > 1


def _has_flag(args: tuple[Word, ...], letters: str, long_option: str) -> bool:
    for arg in args:
        if arg.text == "--":
            break
        if arg.text == long_option or (
            _short_cluster(arg.text) and set(arg.text[1:]) & set(letters)
        ):
            return True
    return False


def _operands(args: tuple[Word, ...]) -> list[Word]:
    if any(a.text == "--" for a in args):
        i = next(i for i, a in enumerate(args) if a.text == "--")
        return [a for a in args[:i] if not a.text.startswith("-")] + list(args[i + 1 :])
    return [a for a in args if not a.text.startswith("-") or a.dynamic]


def _inside(word: Word, place: Place, *, strict: bool) -> bool:
    """Whether ``word`` names a path inside the working directory (a glob by its fixed part).

    A home, ``/``, a top-level directory or anything above them is never inside, even
    when the working directory is one of them.
    """
    cwd = place.cwd
    if word.dynamic or cwd is None and not word.text.startswith(("/", "~", "$HOME", "${HOME}")):
        return False
    path = command_paths.resolve_word(word.text, cwd or Path("/"))
    fixed = Path(*[p for p in _until_glob(path.parts)]) if path.parts else path
    real = Path(os.path.realpath(fixed))
    home = Path(os.path.realpath(Path.home()))
    if len(real.parts) <= 2 or real == home or real in home.parents:
        return False
    root = Path(os.path.realpath(place.root))
    return root in real.parents or (not strict and real == root)


def _until_glob(parts: tuple[str, ...]) -> list[str]:
    fixed = []
    for part in parts:
        if any(c in part for c in "*?["):
            break
        fixed.append(part)
    return fixed


def _after_cd(simple: SimpleCommand, cwd: Path | None) -> Path | None:
    """The working directory after ``simple`` runs, as far as the parse can follow it."""
    words = simple.words
    if not words or os.path.basename(words[0].text) not in ("cd", "pushd", "popd"):
        return cwd
    args = [w for w in words[1:] if not w.text.startswith("-") or w.text == "-"]
    if words[0].text == "popd" or (args and (args[0].dynamic or args[0].text == "-")):
        return None
    if not args:
        return Path.home()
    if cwd is None and not args[0].text.startswith(("/", "~", "$HOME", "${HOME}")):
        return None
    return Path(os.path.normpath(command_paths.resolve_word(args[0].text, cwd or Path("/"))))
