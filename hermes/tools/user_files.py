"""The one way hermes's own process reads a file for a user: beneath a root, no links.

The context files of a workspace (``AGENTS.md``, ``.hermes.md``), its project skills
(``.hermes/skills/``) and a job's folder are read by hermes itself, outside the sandbox
and with the host's authority, when a conversation or a run starts. A user can make
any of them a link (``ln -s ~/.hermes/.env AGENTS.md``: the kernel lets a link point
at a path the sandbox hides), so a read that followed it would hand the model, and the
user, what the view hides. Every such read goes through ``UserFiles``:

- each step of the path is opened from the folder before it with ``O_NOFOLLOW``, so a
  symbolic link, as the file or as any folder on the way, is refused;
- a file with more than one hard link is refused: it may be a secret linked into the
  workspace from a folder the view hides (a hard link cannot be told from its target);
- what the view (``guards.view``) hides as a secret inside the root (``$HERMES_HOME``
  in a workspace holding it, ``terminal.hidden_paths``, another user's workspace) is
  refused.

Each refusal is a ``RefusedRead`` whose message is one sentence. ``tests/test_user_reads.py``
checks that the prompt builder, the skills loader and the scheduler open no workspace
file any other way.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from hermes.redaction import redact
from hermes.tools.guards import view

if TYPE_CHECKING:
    from hermes.config import Config
    from hermes.tools.registry import ToolContext

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class RefusedRead(OSError):
    """A read hermes will not do for a user; the message is one sentence."""


class UserFiles:
    """The files under ``root`` as the user of ``ctx`` may have hermes read them.

    ``ctx`` is whose view applies (None: no view, links and hard links still refused).
    Paths are relative to ``root``; ``..`` never leaves it.
    """

    def __init__(self, root: Path, ctx: ToolContext | None = None) -> None:
        self.root = Path(root)
        self._ctx = ctx
        self._table: list[view.Rule] | None = None

    def text(
        self, relative: str | PurePosixPath, *, limit: int | None = None, scrub: bool = True
    ) -> str:
        """The text of the file (decoded as UTF-8, bad bytes replaced), at most ``limit``
        characters, every secret hermes knows scrubbed (``redaction``) unless not
        ``scrub`` (a file to change and write back). FileNotFoundError when it is missing, RefusedRead when refused."""
        with self._opened_file(relative) as fd, os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read() if limit is None else handle.read(limit * 4)
        text = data.decode("utf-8", errors="replace")
        text = text if limit is None else text[:limit]
        return redact(text) if scrub else text

    def is_file(self, relative: str | PurePosixPath) -> bool:
        """Whether ``relative`` is a file hermes may read (no link, not hidden)."""
        try:
            with self._opened_file(relative):
                return True
        except OSError:
            return False

    def walk_beneath(
        self, relative: str | PurePosixPath
    ) -> Iterator[tuple[PurePosixPath, list[str], list[str]]]:
        """``os.walk`` of the folder ``relative``, links never followed (a linked folder
        or file is left out): (folder relative to the root, its folders, its files).
        Prune by editing the folder list in place. Nothing when the folder is missing."""
        parts = self._parts(relative)
        try:
            top = self._open_folder(parts)
        except OSError:
            return
        try:
            walked = os.fwalk(".", dir_fd=top, follow_symlinks=False)
            for folder, dirs, files, fd in walked:
                here = PurePosixPath(*parts, folder)
                dirs[:] = [d for d in dirs if _is_folder(d, fd) and not self._hidden(here / d)]
                files[:] = [f for f in files if _is_plain_file(f, fd)]
                yield here, dirs, files
        finally:
            os.close(top)

    def path(self, relative: str | PurePosixPath) -> Path:
        """Where ``relative`` is, for messages (never open it by this path)."""
        return self.root.joinpath(*self._parts(relative))

    @contextlib.contextmanager
    def _opened_file(self, relative: str | PurePosixPath) -> Iterator[int]:
        parts = self._parts(relative)
        if not parts:
            raise IsADirectoryError(f"{self.root} is a folder, not a file.")
        folder = self._open_folder(parts[:-1])
        try:
            fd = _step(folder, parts[-1], _FILE, self.path(relative))
        finally:
            os.close(folder)
        try:
            _check_file(fd, self.path(relative))
            yield fd
        finally:
            os.close(fd)

    def _open_folder(self, parts: tuple[str, ...]) -> int:
        """The folder ``parts`` beneath the root, opened one step at a time."""
        path = self.root.joinpath(*parts)
        if self._hidden(PurePosixPath(*parts)):
            raise RefusedRead(f"Refused: hermes does not read {path} for you: {self._why(parts)}.")
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        for index, name in enumerate(parts):
            try:
                fd_next = _step(fd, name, _DIRECTORY, self.root.joinpath(*parts[: index + 1]))
            finally:
                os.close(fd)
            fd = fd_next
        return fd

    def _parts(self, relative: str | PurePosixPath) -> tuple[str, ...]:
        parts = PurePosixPath(relative).parts
        if any(part in ("..", "/") for part in parts):
            raise RefusedRead(f"Refused: {relative} is not inside {self.root}.")
        return tuple(part for part in parts if part != ".")

    def _hidden(self, relative: PurePosixPath) -> bool:
        return self._rule(relative) is not None

    def _why(self, parts: tuple[str, ...]) -> str:
        rule = self._rule(PurePosixPath(*parts))
        return f"it {rule.why}" if rule is not None else "it is hidden from your tools"

    def _rule(self, relative: PurePosixPath) -> view.Rule | None:
        """The view's rule hiding ``relative``, or None when it is not hidden."""
        if self._ctx is None:
            return None
        if self._table is None:
            self._table = view.rules(self._ctx)
        # No links were followed to get here, so the path is where it says it is. Only
        # what the view hides as a secret counts (hermes's home, credentials, the store,
        # terminal.hidden_paths, other users' workspaces): the terminal chat's working
        # directory may lie in the home or /tmp, outside its tools.workspace.
        rule = view.rule_for(view.real(self.root) / relative, self._table)
        return rule if rule.access == view.HIDDEN and rule.mount == view.HIDE else None


def workspace_files(
    hermes_home: Path, cwd: Path, config: Config | None, source: str, user_id: str | None
) -> UserFiles:
    """The files of the workspace ``cwd`` as the view of ``source``/``user_id`` lets
    hermes read them for that user."""
    from hermes.tools.registry import ToolContext

    ctx = ToolContext(
        hermes_home=hermes_home, config=config, cwd=cwd, source=source, user_id=user_id
    )
    return UserFiles(cwd, ctx)


def _step(folder: int, name: str, flags: int, path: Path) -> int:
    try:
        return os.open(name, flags, dir_fd=folder)
    except OSError as exc:
        if _is_link(folder, name):
            raise RefusedRead(
                f"Refused: {path} is a symbolic link, which hermes never follows for you; "
                "make it a plain file or folder."
            ) from None
        raise exc from None


def _check_file(fd: int, path: Path) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise RefusedRead(f"Refused: {path} is not a plain file.")
    if info.st_nlink > 1:
        raise RefusedRead(
            f"Refused: {path} has other hard links, so it may be a file from outside your "
            "workspace; copy it instead of linking it."
        )


def _is_link(folder: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _is_folder(name: str, folder: int) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _is_plain_file(name: str, folder: int) -> bool:
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1
