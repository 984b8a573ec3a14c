"""Git's code-running parts stay inert in every writable root, whatever a command did.

The owner's own ``git status`` or ``git commit`` on the host runs a repository's hooks,
``core.fsmonitor``, ``core.pager``, ``core.sshCommand``, aliases, filters..., read from
its git folder, or from the folder its ``commondir`` or ``.git`` file names. A command
can make a repository anywhere in a writable root (``git init`` at any depth, a
submodule under ``.git/modules/``, a worktree, ``.git`` moved aside and made again),
and no mount can stop a name from being created, so the rule is kept by a check:

- before a command (or background process) starts, ``baseline`` notes every
  code-running part of every git folder in the writable roots (any depth: ``.git``
  folders, bare repositories, ``.git/modules/*``, ``.git/worktrees/*``, and the
  folders ``.git`` files, links and ``commondir`` files lead to inside the roots):
  the hooks, ``config``, ``config.worktree``, ``commondir`` and a ``core.hooksPath``
  folder's scripts;
- when it ends, ``disarm`` looks again, and every such part that is new or changed
  (a different file, or the same one renamed or rewritten) is made inert where it is:
  a hook is renamed ``<name>.hermes-disarmed`` (git runs hooks only by their exact
  name), a settings file keeps only the keys that run nothing (``SAFE_KEYS``:
  remotes, branches, identity, format), a ``commondir`` leading out of the roots is
  renamed aside. What was there before, unchanged, is the owner's and is left alone.

So a hook written in the sandbox runs there, in the command that wrote it; after it,
only the owner can adopt it (by renaming it back). The file tools write nothing in a
git folder at all (``write_problem``). A background process's writes are checked when
it ends and when any command ends meanwhile.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DISARMED = ".hermes-disarmed"
# Keys of a repository's settings that run nothing: (section, has a subsection) -> names.
SAFE_KEYS: dict[tuple[str, bool], frozenset[str]] = {
    ("core", False): frozenset(
        {
            "repositoryformatversion",
            "filemode",
            "bare",
            "logallrefupdates",
            "ignorecase",
            "precomposeunicode",
            "symlinks",
            "autocrlf",
            "eol",
            "safecrlf",
            "quotepath",
            "worktree",  # a submodule's: where its files are, nothing that runs
        }
    ),
    ("remote", True): frozenset(
        {"url", "pushurl", "fetch", "push", "tagopt", "prune", "mirror", "promisor"}
        | {"partialclonefilter"}
    ),
    ("branch", True): frozenset({"remote", "merge", "rebase", "pushremote", "description"}),
    ("submodule", True): frozenset({"url", "active", "branch"}),
    ("user", False): frozenset({"name", "email"}),
    ("init", False): frozenset({"defaultbranch"}),
    ("extensions", False): frozenset({"objectformat", "refstorage", "partialclone"}),
    ("pull", False): frozenset({"rebase", "ff"}),
    ("push", False): frozenset({"default", "autosetupremote"}),
    ("fetch", False): frozenset({"prune"}),
}
_SETTINGS = ("config", "config.worktree")
# Inside a git folder only these hold other git folders; objects/ and refs/ are left unread.
_NESTED = ("modules", "worktrees")


@dataclass(frozen=True)
class Baseline:
    """The code-running parts of the git folders in ``roots`` when a command started."""

    roots: tuple[Path, ...]
    seen: frozenset[tuple[str, int, int, int]]


def baseline(roots: Iterable[Path]) -> Baseline:
    real_roots = tuple(Path(os.path.realpath(r)) for r in roots)
    return Baseline(real_roots, frozenset(_fingerprint(p) for p in _parts(real_roots)))


def disarm(before: Baseline) -> list[str]:
    """Make inert every code-running git part that is not as ``before`` saw it; what was
    done, one phrase each (empty when nothing was)."""
    done: list[str] = []
    for part in _parts(before.roots):
        if _fingerprint(part) in before.seen:
            continue
        try:
            what = _make_inert(part, before.roots)
        except OSError as exc:
            log.warning("could not make %s inert: %s", part, exc)
            continue
        if what:
            done.append(what)
    return done


def note(done: list[str]) -> str:
    """One sentence for a command's result saying what ``disarm`` did, or ""."""
    if not done:
        return ""
    return (
        f"\n[Made inert so the host's git never runs them: {'; '.join(done)}. Git runs them in "
        "the sandbox only in the command that wrote them; the user can adopt one on the host.]"
    )


def write_problem(path: Path, roots: Iterable[Path]) -> str | None:
    """Why a file tool may not write ``path``: it lies in a git folder, is a ``.git``
    file, or would make a folder one. None for an ordinary file."""
    real = Path(os.path.realpath(path))
    if real.name == ".git":
        return "is a repository's .git, which only git itself makes"
    for root in roots:
        top = Path(os.path.realpath(root))
        if real != top and top not in real.parents:
            continue
        folder = real.parent
        while folder == top or top in folder.parents:
            if folder.name == ".git" or _would_be_git_dir(folder, real):
                return "is in a git folder, whose files the host's git may run"
            folder = folder.parent
    return None


# -- finding git folders ------------------------------------------------------------------


def is_git_dir(folder: Path) -> bool:
    """Whether git would take ``folder`` for a repository's git folder (bare or not)."""
    head = folder / "HEAD"
    return head.is_file() and ((folder / "objects").is_dir() or (folder / "commondir").is_file())


def _would_be_git_dir(folder: Path, written: Path) -> bool:
    if is_git_dir(folder):
        return True
    has_head = (folder / "HEAD").is_file() or written == folder / "HEAD"
    more = folder / "objects", folder / "commondir"
    return has_head and any(p.exists() or p == written or p in written.parents for p in more)


def git_dirs(roots: tuple[Path, ...]) -> list[Path]:
    """Every git folder in ``roots`` (links not followed, but for ``.git`` and
    ``commondir`` leading to a folder inside the roots)."""
    found: dict[str, Path] = {}
    for root in roots:
        _walk(root, roots, found)
    pending = list(found.values())
    while pending:
        target = _common_dir(pending.pop(), roots)
        if target is not None and str(target) not in found:
            found[str(target)] = target
            pending.append(target)
    return list(found.values())


def _walk(folder: Path, roots: tuple[Path, ...], found: dict[str, Path]) -> None:
    try:
        entries = {entry.name: entry for entry in os.scandir(folder)}
    except OSError:
        return
    head, objects, common = entries.get("HEAD"), entries.get("objects"), entries.get("commondir")
    if head is not None and (objects is not None or common is not None) and is_git_dir(folder):
        found.setdefault(str(folder), folder)
        for name in _NESTED:
            nested = entries.get(name)
            if nested is not None and nested.is_dir(follow_symlinks=False):
                _walk(folder / name, roots, found)
        return
    for entry in entries.values():
        if entry.name == ".git" and (entry.is_symlink() or entry.is_file(follow_symlinks=False)):
            target = _led_to(Path(entry.path), roots)
            if target is not None:
                found.setdefault(str(target), target)
        elif entry.is_dir(follow_symlinks=False):
            _walk(Path(entry.path), roots, found)


def _led_to(dot_git: Path, roots: tuple[Path, ...]) -> Path | None:
    """The folder a ``.git`` link or ``gitdir:`` file leads to, when it is inside the roots."""
    if dot_git.is_symlink():
        return _inside_roots(Path(os.path.realpath(dot_git)), roots)
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = dot_git.parent / text[len("gitdir:") :].strip()
    return _inside_roots(Path(os.path.realpath(target)), roots)


def _common_dir(git_dir: Path, roots: tuple[Path, ...]) -> Path | None:
    try:
        text = (git_dir / "commondir").read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return None
    return _inside_roots(Path(os.path.realpath(git_dir / text.strip())), roots)


def _inside_roots(path: Path, roots: tuple[Path, ...]) -> Path | None:
    inside = any(path == r or r in path.parents for r in roots)
    return path if inside and path.is_dir() else None


# -- their code-running parts ---------------------------------------------------------


def _parts(roots: tuple[Path, ...]) -> Iterator[Path]:
    for git_dir in git_dirs(roots):
        for name in (*_SETTINGS, "commondir"):
            if os.path.lexists(git_dir / name):
                yield git_dir / name
        hooks = git_dir / "hooks"
        if hooks.is_symlink():
            yield hooks
        else:
            yield from _hooks_in(hooks)
        custom = _hooks_path(git_dir, roots)
        if custom is not None:
            yield from _hooks_in(custom)


def _hooks_in(folder: Path) -> Iterator[Path]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if not entry.name.endswith((".sample", DISARMED)) and not entry.is_dir(
            follow_symlinks=False
        ):
            yield Path(entry.path)


def _hooks_path(git_dir: Path, roots: tuple[Path, ...]) -> Path | None:
    """The owner's ``core.hooksPath`` folder when it lies in the roots (husky's
    ``.husky/``): a command may write scripts there that the owner's git runs."""
    value = _git_config(git_dir / "config", "--get", "core.hooksPath")
    if not value or not value.strip():
        return None
    folder = Path(value.strip()).expanduser()
    if not folder.is_absolute():
        folder = (git_dir if _is_bare(git_dir) else git_dir.parent) / folder
    return _inside_roots(Path(os.path.realpath(folder)), roots)


def _is_bare(git_dir: Path) -> bool:
    return git_dir.name != ".git"


def _fingerprint(path: Path) -> tuple[str, int, int, int]:
    try:
        st = os.lstat(path)
    except OSError:
        return (str(path), 0, 0, 0)
    return (str(path), st.st_ino, st.st_ctime_ns, st.st_size)


# -- making them inert -----------------------------------------------------------------


def _make_inert(part: Path, roots: tuple[Path, ...]) -> str | None:
    if part.name in _SETTINGS and not part.is_symlink():
        return _keep_safe_keys(part)
    if part.name == "commondir" and _common_dir(part.parent, roots) is not None:
        return None  # leads to a folder in the roots, itself checked
    aside = part.with_name(part.name + DISARMED)
    os.replace(part, aside)
    return f"{part} renamed {aside.name}"


def _keep_safe_keys(config: Path) -> str | None:
    listed = _git_config(config, "--list", "-z")
    if listed is None:  # not even git can read it: nothing of it may stay
        aside = config.with_name(config.name + DISARMED)
        os.replace(config, aside)
        return f"{config} (unreadable) renamed {aside.name}"
    entries = [item.split("\n", 1) for item in listed.split("\0") if item]
    kept = [entry for entry in entries if _safe(entry[0])]
    if len(kept) == len(entries):
        return None
    dropped = sorted({entry[0] for entry in entries if not _safe(entry[0])})
    _write_config(config, kept)
    return f"{config} lost {', '.join(dropped)}"


def _safe(key: str) -> bool:
    section, _, rest = key.partition(".")
    subsection, _, name = rest.rpartition(".")
    allowed = SAFE_KEYS.get((section.lower(), bool(subsection)), frozenset())
    return name.lower() in allowed


def _write_config(config: Path, entries: list[list[str]]) -> None:
    lines: list[str] = []
    current: str | None = None
    for entry in entries:
        key = entry[0]
        section, _, rest = key.partition(".")
        subsection, _, name = rest.rpartition(".")
        header = f'[{section} "{_quoted(subsection)}"]' if subsection else f"[{section}]"
        if header != current:
            lines.append(header)
            current = header
        lines.append(f'\t{name} = "{_quoted(entry[1])}"' if len(entry) > 1 else f"\t{name}")
    tmp = config.with_name(f".{config.name}.hermes.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, config)


def _quoted(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return escaped.replace("\n", "\\n").replace("\t", "\\t")


def _git_config(config: Path, *args: str) -> str | None:
    """``git config --file`` on one file, includes not followed, run from ``/`` so no
    repository's own settings are read; None when git cannot read it."""
    if config.is_symlink() or not config.is_file():
        return None
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        result = subprocess.run(
            ["git", "config", "--file", str(config), "--no-includes", *args],
            cwd="/",
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull},
        )
        if result.returncode == 0 or (args[0] == "--get" and result.returncode == 1):
            return result.stdout
    return None
