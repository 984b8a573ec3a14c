"""The one view of the file system every tool has: what is writable, read-only, hidden.

One ordered table (``rules``) says it, and both kinds of tool use it: the sandbox turns
each rule into a bubblewrap mount, in order (``sandbox.command_prefix``), and the file
tools look a path up in it (``rule_for``). The rule that applies to a path is the last
one whose path holds it, as the last mount over a path is the one a command sees, so
the two cannot disagree. From first to last:

- the whole system, read-only (terminal chat); for a gateway user, an API principal, a
  job or a webhook route an allow-list instead: nothing of the host, then ``/usr``,
  ``/bin``, ``/sbin``, ``/lib*`` and ``/etc`` read-only (``SYSTEM_PATHS``);
  ``/dev``, ``/proc`` and ``/tmp`` are the command's own
  (so the file tools, which run in hermes's process, see none of the host's);
- the user's home, hidden (an empty read-only folder): nothing of it is seen but
- what ``terminal.readable_paths`` lists (read-only) and the writable roots: the
  workspace and ``terminal.writable_paths`` (never ``/``; a root that holds the home
  makes its existing entries writable, never a new file at its top);
- hermes's own install, read-only even inside a writable root (not in an allow-list);
- start-up and settings files (``~/.bashrc``, ``~/.gitconfig``, ``~/.config/systemd/``,
  ``~/.local/bin/``, ...) and a repository's ``.git/config``, ``hooks/`` and ``info/``,
  read-only whether or not they exist, so no host shell, desktop, systemd or git ever
  runs what a tool wrote;
- every profile's home (``hermes_homes``), a SQLite store configured elsewhere,
  credential stores, daemon sockets, ``terminal.hidden_paths`` and, in an allow-list,
  the system's own secrets (``SYSTEM_SECRETS``): hidden;
- on a gateway, every user's workspace hidden but the user's own (``workspaces``),
  which is writable even where it lies in ``$HERMES_HOME/workspaces``; likewise a Kanban
  worker's scratch folder, its working directory in the profiles' root.
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import hermes
from hermes import profiles
from hermes.tools import workspaces

if TYPE_CHECKING:
    from hermes.tools.registry import ToolContext

WRITE, READ, HIDDEN = "write", "read", "hidden"

# How the sandbox makes a rule so (see sandbox.command_prefix). EMPTY is an empty root
# (bubblewrap's own), SYSTEM a part of the system bound read-only (a link stays a link).
RO, RW, HIDE, LOCK, HOME, TMP, PROC, DEV = "ro", "rw", "hide", "lock", "home", "tmp", "proc", "dev"
EMPTY, SYSTEM = "empty", "system"

# What a gateway user's, an API principal's, a job's or a webhook route's turns see of
# the host besides their workspace: the system, read-only, and nothing else.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Secrets of the system itself, hidden from those turns even in /etc.
SYSTEM_SECRETS = (
    *("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-"),
    *("/etc/sudoers", "/etc/sudoers.d", "/etc/ssl/private"),
)

# Files and folders of the user's home that hold credentials: hidden even where the home
# is readable or writable (an operator's readable_paths, a workspace that holds them).
CREDENTIALS = (
    # Keys, key rings and password stores.
    *(".ssh", ".gnupg", ".local/share/keyrings", ".password-store", ".vault-token"),
    # Cloud and container logins.
    *(".aws", ".azure", ".kube", ".docker", ".config/gcloud", ".terraform.d"),
    # Tokens for git hosts, package registries and databases.
    *(".netrc", ".git-credentials", ".config/git/credentials", ".config/gh", ".config/hub"),
    *(".pypirc", ".npmrc", ".yarnrc", ".cargo/credentials.toml", ".pgpass"),
    # Histories, which hold what was typed: passwords among them.
    *(".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history"),
    *(".node_repl_history", ".lesshst", ".viminfo"),
)
# Files a shell reads at start.
STARTUP_FILES = (
    *(".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile"),
    *(".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout"),
    *(".kshrc", ".cshrc", ".tcshrc", ".inputrc"),
)
# Files and folders something on the host runs or obeys without asking: git, systemd,
# the desktop's autostart, a shell's PATH, fish, X sessions, login environment.
SETTINGS = (
    *(".gitconfig", ".config/git", ".ssh/rc"),
    *(".config/systemd", ".config/autostart", ".config/environment.d", ".pam_environment"),
    *(".local/bin", ".config/fish", ".config/user-dirs.dirs"),
    *(".xprofile", ".xinitrc", ".xsessionrc", ".xsession"),
)
SYSTEM_STARTUP = ("/etc/profile.d", "/etc/profile", "/etc/bash.bashrc", "/etc/environment")
# The parts of a repository's .git that make host git run code: its settings
# (core.fsmonitor, core.hooksPath, aliases, filters), its hooks, info/ (attributes).
GIT_LOCKED = ("config", "hooks", "info")
_GIT_SEARCH_DEPTH = 3  # repositories this deep in a writable root get a read-only .git
_NOT_SEARCHED = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".tox", ".git"})
_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/postgresql", "/var/run/postgresql")
_STORE_SUFFIXES = ("", "-wal", "-shm", "-journal", ".turns")


@dataclass(frozen=True)
class Rule:
    """Under ``path``, tools may ``access`` (WRITE, READ or HIDDEN); ``mount`` is how the
    sandbox does it; ``why`` completes "Refused: <path> ..." when a tool may not."""

    path: Path
    access: str
    mount: str
    why: str


def real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def workspace_problem(ctx: ToolContext) -> str | None:
    """Why the working directory cannot be the workspace (the home, ``/``), or None.

    ``tools.workspace``, set, is the operator's explicit choice and always stands, and a
    gateway user's or a job's workspace is the folder the gateway chose for them."""
    if ctx.setting("tools.workspace") or workspaces.confined(ctx.source):
        return None
    cwd = real(ctx.cwd)
    if cwd == Path("/") or cwd == real(Path.home()):
        where = "/" if cwd == Path("/") else f"your home folder ({cwd})"
        return (
            f"Refused: the workspace would be {where}, which would open all of it to tools; "
            "start hermes in a project folder, or set tools.workspace in config.yaml."
        )
    return None


def workspace(ctx: ToolContext) -> Path:
    """The folder tools may write: a gateway user's own, else ``tools.workspace`` if set,
    else the working directory (``workspaces.workspace``)."""
    return workspaces.workspace(ctx)


def rules(ctx: ToolContext) -> list[Rule]:
    """The table, in mount order (later rules win inside their path)."""
    home = real(Path.home())
    allow_list = workspaces.confined(ctx.source)
    found = _system_rules() if allow_list else [Rule(Path("/"), READ, RO, _OUTSIDE)]
    found += [
        Rule(Path("/dev"), HIDDEN, DEV, "is a device, which these tools do not open"),
        Rule(Path("/proc"), HIDDEN, PROC, "is in /proc, which tools never read"),
        Rule(
            Path("/tmp"),
            HIDDEN,
            TMP,
            "is outside the workspace, in the host's /tmp, which tools do not see "
            "(each command has a private /tmp)",
        ),
    ]
    writable = _writable_roots(ctx)
    around_home = [root for root in writable if inside(home, root)]
    found += [Rule(root, WRITE, RW, "") for root in around_home]
    found += _home_rules(home, bool(around_home))
    found += [
        Rule(p, READ, RO, "is in terminal.readable_paths, which tools may read but not change")
        for p in _configured(ctx, "terminal.readable_paths")
    ]
    found += [Rule(root, WRITE, RW, "") for root in writable if root not in around_home]
    if not allow_list:  # an allow-list view shows none of it
        found += [
            Rule(p, READ, RO, "is part of hermes's own install, which tools never change")
            for p in _install()
        ]
    lock = "is a start-up or settings file that tools can neither create nor change"
    # Only where it could otherwise be seen: a lock must not open a hidden ~/.gitconfig.
    found += [
        Rule(p, READ, LOCK, lock)
        for p in _locked(home, writable)
        if rule_for(p, found).access != HIDDEN
    ]
    found += _hidden(ctx, home)
    found += _user_rules(ctx, home, lock)
    return found


_OUTSIDE = "is outside the workspace and terminal.writable_paths"


def _system_rules() -> list[Rule]:
    """The allow-list view's start: nothing of the host, then the system read-only."""
    why = (
        "is outside your workspace: tools on this surface see only the system and the "
        "workspace (and what the operator lists in terminal.readable_paths)"
    )
    found = [Rule(Path("/"), HIDDEN, EMPTY, why)]
    return found + [
        Rule(Path(p), READ, SYSTEM, "is part of the system, which tools may read but not change")
        for p in SYSTEM_PATHS
        if os.path.lexists(p)
    ]


def _user_rules(ctx: ToolContext, home: Path, lock: str) -> list[Rule]:
    """On a gateway: every user's workspace hidden, then the user's own bound back
    (it may lie in ``$HERMES_HOME/workspaces``, hidden above), its repositories' .git
    locked again over it."""
    found = []
    others = workspaces.others(ctx)
    if others is not None:
        why = "is another user's workspace, which tools never see"
        found.append(Rule(real(others), HIDDEN, HIDE, why))
    own = workspaces.carved_out(ctx)
    if own is not None:
        mine = real(own)
        found.append(Rule(mine, WRITE, RW, ""))
        found += [Rule(p, READ, LOCK, lock) for p in _locked(home, [mine]) if inside(p, mine)]
    return found


def rule_for(path: Path, table: list[Rule]) -> Rule:
    """The rule that applies to ``path`` (links resolved), as a command in the sandbox sees it."""
    target = real(path)
    return next(rule for rule in reversed(table) if inside(target, rule.path))


def _home_rules(home: Path, writable: bool) -> list[Rule]:
    if home == Path("/"):
        return []  # a user without a home of their own: the table still hides the rest
    if not writable:
        why = (
            "is in your home folder, which tools do not see outside the workspace and "
            "terminal.readable_paths"
        )
        return [Rule(home, HIDDEN, HOME, why)]
    # A writable root holds the home: its entries stay writable, but nothing new appears
    # at its top (a new ~/.bash_profile would take over every login shell).
    top = Rule(home, READ, HOME, "would be a new file at the top of your home folder")
    # A link among them is left out: it would open its target, wherever that is.
    entries = [entry for entry in _entries(home) if not entry.is_symlink()]
    return [top, *(Rule(entry, WRITE, RW, "") for entry in entries)]


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def writable_roots(ctx: ToolContext) -> list[Path]:
    """Every folder a command may write in: the workspace, ``terminal.writable_paths``
    and a gateway user's own workspace carved out of a hidden folder."""
    roots = _writable_roots(ctx)
    own = workspaces.carved_out(ctx)
    return _unique([*roots, real(own)] if own is not None else roots)


def _writable_roots(ctx: ToolContext) -> list[Path]:
    roots = [] if workspace_problem(ctx) else [real(workspace(ctx))]
    roots += _configured(ctx, "terminal.writable_paths")
    # / would make the whole system writable; nothing inside a hermes home is a root.
    homes = hermes_homes(ctx)
    return _unique(r for r in roots if r != Path("/") and not any(inside(r, h) for h in homes))


def _install() -> list[Path]:
    package = real(Path(hermes.__file__).parent)
    paths = [package, Path(sys.prefix), Path(sys.base_prefix)]
    paths += [Path(p) for p in site.getsitepackages()]
    paths.append(Path(site.getusersitepackages()))
    if (package.parent / ".git").exists():
        paths.append(package.parent)  # a checkout: its code and hooks run as hermes
    return _unique(paths)


def _locked(home: Path, writable: list[Path]) -> list[Path]:
    paths = [real(home / name) for name in (*STARTUP_FILES, *SETTINGS)]
    paths += [real(Path(p)) for p in SYSTEM_STARTUP]
    for root in writable:
        for git in _repositories(root):
            paths += [git] if git.is_file() else [git / name for name in GIT_LOCKED]
    return _unique(paths)


def _repositories(root: Path, depth: int = _GIT_SEARCH_DEPTH) -> Iterator[Path]:
    """The ``.git`` folders (or gitlink files) of the repositories in ``root``, a few levels deep."""
    git = root / ".git"
    if os.path.lexists(git):
        yield git
    if depth == 0:
        return
    for entry in _entries(root):
        if entry.name not in _NOT_SEARCHED and entry.is_dir() and not entry.is_symlink():
            yield from _repositories(entry, depth - 1)


def _hidden(ctx: ToolContext, home: Path) -> list[Rule]:
    found = [Rule(p, HIDDEN, HIDE, _HERMES_HOME) for p in hermes_homes(ctx)]
    found += [
        Rule(
            real(home / name),
            HIDDEN,
            HIDE,
            f"holds login credentials (~/{name}) and is never readable by tools",
        )
        for name in CREDENTIALS
    ]
    found += [
        Rule(p, HIDDEN, HIDE, "is hermes's store and is never readable by tools")
        for p in store_files(ctx)
    ]
    found += [
        Rule(p, HIDDEN, HIDE, "is a Kanban board's database and is never readable by tools")
        for p in kanban_boards()
    ]
    found += [
        Rule(real(Path(p)), HIDDEN, HIDE, "is a daemon's socket, hidden from tools")
        for p in _SOCKETS
    ]
    found += [
        Rule(p, HIDDEN, HIDE, "is listed in terminal.hidden_paths")
        for p in _configured(ctx, "terminal.hidden_paths")
    ]
    if workspaces.confined(ctx.source):
        found += [
            Rule(Path(p), HIDDEN, HIDE, "holds the system's own secrets, never readable by tools")
            for p in SYSTEM_SECRETS
        ]
    return found


def hermes_homes(ctx: ToolContext) -> list[Path]:
    """Hermes's home and every profile's: this one, the folder holding the default home
    and ``profiles/`` (wherever ``HERMES_HOME`` puts it), and ``~/.hermes``."""
    own = Path(ctx.hermes_home)
    around = profiles.root({"HERMES_HOME": str(own)})
    homes = _unique(real(p) for p in (own, around, profiles.native_root()))
    # Only the outermost: a home hidden inside the root's already hidden (empty) folder has
    # no place to be mounted, and bubblewrap would refuse every command.
    return [h for h in homes if not any(o != h and inside(h, o) for o in homes)]


_HERMES_HOME = "is in hermes's home, which holds its secrets and is never readable by tools"


def store_files(ctx: ToolContext) -> list[Path]:
    """A SQLite store configured outside HERMES_HOME, and the files beside it."""
    url = ctx.setting("state.url")
    if not url or "://" in str(url) or "=" in str(url):
        return []
    base = real(Path(str(url)).expanduser())
    return [Path(f"{base}{suffix}") for suffix in _STORE_SUFFIXES]


def kanban_boards() -> list[Path]:
    """The files of Kanban boards kept outside hermes's homes (``HERMES_KANBAN_DB``, or
    under ``HERMES_KANBAN_HOME``: hermes/kanban/paths.py): a task's text must not reach
    other tasks through them. In the default place they lie in the hidden root already."""
    boards = []
    if db := os.environ.get("HERMES_KANBAN_DB", "").strip():
        boards.append(real(Path(db).expanduser()))
    if root := os.environ.get("HERMES_KANBAN_HOME", "").strip():
        base = real(Path(root).expanduser())
        boards += [base / "kanban.db", *sorted((base / "kanban" / "boards").glob("*/kanban.db"))]
    return _unique(Path(f"{board}{suffix}") for board in boards for suffix in _STORE_SUFFIXES)


def _configured(ctx: ToolContext, key: str) -> list[Path]:
    return _unique(real(Path(str(p)).expanduser()) for p in ctx.setting(key) or [])


def _unique(paths: Iterable[Path]) -> list[Path]:
    seen: dict[str, Path] = {}
    for path in paths:
        seen.setdefault(str(path), path)
    return list(seen.values())
