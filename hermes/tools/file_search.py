"""The ``search_files`` tool: find text in files (regex or literal) or files by name (glob).

Content search uses ripgrep when ``rg`` is on PATH (fast, and it also honours
.gitignore) and a pure-Python walk otherwise. Both skip .git, node_modules, .venv and
binary files, and both stop at ``limit`` results with a note saying more exist.

Both see what a sandboxed command sees (the one view, ``guards/view.py``): the search root must
be readable there, and no match nor name is shown from a hidden path. ripgrep runs in
the sandbox when there is one, and always with a command's environment (without
hermes's secrets, ``guards/environment.py``): a search of ``/proc/self/environ`` is refused,
and would find only rg's own scrubbed environment.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hermes.tools.files import is_binary
from hermes.tools.guards import sandbox
from hermes.tools.guards.environment import command_environment
from hermes.tools.guards.protected import authorize_read, visibility
from hermes.tools.registry import Tool, ToolContext, ToolError, object_parameters

SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
MATCH_CHARS = 300  # of one matching line
MAX_FILE_BYTES = 10 * 1024 * 1024  # larger files are data, not code to grep

PARAMETERS = object_parameters(
    {
        "pattern": {
            "type": "string",
            "description": "Content mode: a regular expression (or plain text with literal=true). Name mode: a glob such as '*.py' or 'test_*'.",
        },
        "mode": {
            "type": "string",
            "enum": ["content", "name"],
            "description": "Search inside files (content, default) or by file name (name).",
        },
        "path": {
            "type": "string",
            "description": "Folder or file to search, relative to the working directory (default '.').",
        },
        "literal": {
            "type": "boolean",
            "description": "Content mode: treat pattern as plain text, not a regex.",
        },
        "ignore_case": {"type": "boolean", "description": "Match regardless of case."},
        "include": {
            "type": "string",
            "description": "Content mode: only search files whose name matches this glob, e.g. '*.py'.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"Most results to return (default {DEFAULT_LIMIT}).",
        },
    },
    required=["pattern"],
)


def handle(args: dict[str, Any], ctx: ToolContext) -> str:
    pattern: str = args["pattern"]
    if not pattern:
        raise ToolError("'pattern' is empty; give the text, regex or glob to look for.")
    root = ctx.resolve_path(args.get("path") or ".")
    authorize_read(root, ctx)
    if not root.exists():
        raise ToolError(f"{root} does not exist; give a folder or file inside {ctx.cwd}.")
    limit = int(args.get("limit") or DEFAULT_LIMIT)

    visible = visibility(ctx)  # no match from a hidden file, not even its count

    if args.get("mode") == "name":
        results = _limited(
            _find_names(root, pattern, bool(args.get("ignore_case")), ctx.cwd, visible), limit
        )
        what = f"files named like '{pattern}'"
    else:
        results = _limited(_content_matches(root, pattern, args, ctx, visible), limit)
        what = f"'{pattern}'" if args.get("literal") else f"/{pattern}/"
    return _format(results, limit, what, root)


Visible = Callable[[Path], bool]


def _limited(found: Iterator[str], limit: int) -> list[str]:
    results = []
    for item in found:
        results.append(item)
        if len(results) > limit:  # one more than asked says "there is more"
            break
    return results


def _format(results: list[str], limit: int, what: str, root: Path) -> str:
    if not results:
        return (
            f"No matches for {what} in {root} (.git, node_modules, .venv and similar folders, "
            "binary files and files over 10 MB were skipped)."
        )
    shown = results[:limit]
    lines = [f"Matches for {what} in {root}:", *shown]
    if len(results) > limit:
        lines.append(
            f"[Results cut at {limit}; more exist. Narrow the pattern or path, or raise limit.]"
        )
    return "\n".join(lines)


def _content_matches(
    root: Path, pattern: str, args: dict[str, Any], ctx: ToolContext, visible: Visible
) -> Iterator[str]:
    cwd = ctx.cwd
    literal, ignore_case, include = (
        bool(args.get("literal")),
        bool(args.get("ignore_case")),
        args.get("include"),
    )
    rg = shutil.which("rg")
    if rg:
        command = [*_sandbox_prefix(ctx), rg, *_rg_options(literal, ignore_case, include)]
        command += ["-e", pattern, "--", str(root)]
        return _ripgrep(command, cwd, command_environment(ctx), visible)
    flags = re.IGNORECASE if ignore_case else 0
    try:
        regex = re.compile(re.escape(pattern) if literal else pattern, flags)
    except re.error as exc:
        raise ToolError(
            f"invalid regular expression: {exc}. Fix it, or set literal=true to search for the text as is."
        ) from exc
    return _python_grep(root, regex, include, cwd, visible)


def _python_grep(
    root: Path, regex: re.Pattern[str], include: str | None, cwd: Path, visible: Visible
) -> Iterator[str]:
    for path in _walk_files(root, visible):
        if include and not fnmatch.fnmatch(path.name, include):
            continue
        try:
            if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES or is_binary(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, start=1):
                    if regex.search(line):
                        yield f"{_shown_path(path, cwd)}:{number}: {_clip(line.rstrip())}"
        except OSError:
            continue  # unreadable or vanished mid-walk: not the model's concern


def _sandbox_prefix(ctx: ToolContext) -> list[str]:
    """The bwrap argv when commands are sandboxed here (rg then sees the one view)."""
    return sandbox.command_prefix(ctx, ctx.cwd) if sandbox.mode_of(ctx).sandboxed else []


def _rg_options(literal: bool, ignore_case: bool, include: str | None) -> list[str]:
    options = [
        "--line-number",
        "--no-heading",
        "--color=never",
        "--hidden",
        "--sort=path",
        f"--max-filesize={MAX_FILE_BYTES}",
    ]
    options += [arg for skipped in sorted(SKIP_DIRS) for arg in ("-g", f"!{skipped}")]
    if literal:
        options.append("--fixed-strings")
    if ignore_case:
        options.append("--ignore-case")
    if include:
        options += ["-g", include]
    return options


def _ripgrep(command: list[str], cwd: Path, env: dict[str, str], visible: Visible) -> Iterator[str]:
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        for raw in proc.stdout:
            path, _, rest = raw.decode("utf-8", errors="replace").rstrip("\n").partition(":")
            number, _, text = rest.partition(":")
            if not visible(cwd / path):
                continue
            yield f"{_shown_path(Path(path), cwd)}:{number}: {_clip(text)}"
        error = proc.stderr.read().decode("utf-8", errors="replace").strip()
        if proc.wait() == 2 and error and "regex" in error.lower():
            raise ToolError(
                f"invalid regular expression: {error.splitlines()[-1]}. Fix it, or set literal=true."
            )
    finally:
        if proc.poll() is None:
            proc.kill()  # the caller stopped reading: it has enough results
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def _find_names(
    root: Path, pattern: str, ignore_case: bool, cwd: Path, visible: Visible
) -> Iterator[str]:
    if not any(ch in pattern for ch in "*?["):
        pattern = f"*{pattern}*"  # a bare word means "names containing it"
    if ignore_case:
        pattern = pattern.lower()
    base = root if root.is_dir() else root.parent
    for path in _walk_files(root, visible, with_dirs=True):
        subject = str(path.relative_to(base)) if "/" in pattern else path.name
        if fnmatch.fnmatchcase(subject.lower() if ignore_case else subject, pattern):
            yield _shown_path(path, cwd) + ("/" if path.is_dir() else "")


def _walk_files(root: Path, visible: Visible, *, with_dirs: bool = False) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and visible(Path(folder, d)))
        if with_dirs:
            yield from (Path(folder, d) for d in dirs)
        yield from (Path(folder, f) for f in sorted(files) if visible(Path(folder, f)))


def _shown_path(path: Path, cwd: Path) -> str:
    absolute = path if path.is_absolute() else cwd / path
    try:
        return str(absolute.relative_to(cwd))
    except ValueError:
        return str(absolute)


def _clip(text: str) -> str:
    return text if len(text) <= MATCH_CHARS else text[:MATCH_CHARS] + " ..."


TOOL = Tool(
    name="search_files",
    description=(
        "Search files: by content (regex, or plain text with literal=true) or by name (glob, "
        "mode='name'). Skips .git, node_modules, .venv and binary files."
    ),
    parameters=PARAMETERS,
    handler=handle,
    toolsets=("files",),
)
