"""File tools: ``read_file``, ``write_file`` and ``patch`` (``search_files`` is in file_search.py).

Paths are relative to ``ctx.cwd`` unless absolute. Reads show line numbers and stop at a
size cap with a note saying how to read on; writes are atomic (a crash never leaves half
a file) and keep an existing file's mode; ``patch`` replaces an exact text and, when
that text is missing or ambiguous, says what it found instead.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes.tools._fs import FolderMovedError, atomic_write_text, folder_opened_as
from hermes.tools.guards.protected import authorize_file_write, authorize_read
from hermes.tools.registry import Tool, ToolContext, ToolError, object_parameters
from hermes.tools.text_encoding import sniff

READ_CHAR_LIMIT = 50_000
LINE_CHAR_LIMIT = 2_000
COUNT_LINES_UP_TO_BYTES = 20 * 1024 * 1024  # past this, do not read to the end just to count


def is_binary(path: Path) -> bool:
    return sniff(path).binary


def _existing_file(
    ctx: ToolContext, raw: str, authorize: Callable[[Path, ToolContext], None]
) -> Path:
    """The text file ``raw`` names, once ``authorize`` allows it: nothing about a path the
    tool may not touch (whether it exists, its size, its neighbours) is said before."""
    path = ctx.resolve_path(raw)
    authorize(path, ctx)
    if path.is_dir():
        raise ToolError(
            f"{path} is a directory, not a file. Use search_files to list what is in it."
        )
    if not path.exists():
        raise ToolError(f"file not found: {path}.{_near_names(path)}")
    if not path.is_file():  # a FIFO or a device would block the turn on open
        raise ToolError(
            f"{path} is not a regular file (a pipe, socket or device); these tools read files only."
        )
    if is_binary(path):
        raise ToolError(
            f"{path} is a binary file ({path.stat().st_size} bytes); these tools handle text only."
        )
    return path


def _near_names(path: Path) -> str:
    if not path.parent.is_dir():
        return f" Its folder {path.parent} does not exist either."
    names = [p.name for p in path.parent.iterdir()]
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    return f" Did you mean: {', '.join(close)}?" if close else ""


# read_file ---------------------------------------------------------------------------

READ_PARAMETERS = object_parameters(
    {
        "path": {
            "type": "string",
            "description": "File to read, relative to the working directory or absolute.",
        },
        "start_line": {
            "type": "integer",
            "minimum": 1,
            "description": "First line to show (1-based, default 1).",
        },
        "end_line": {
            "type": "integer",
            "minimum": 1,
            "description": "Last line to show, inclusive (default: the end).",
        },
    },
    required=["path"],
)


def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path = _existing_file(ctx, args["path"], authorize_read)
    start = int(args.get("start_line") or 1)
    end = int(args["end_line"]) if args.get("end_line") else None
    if end is not None and end < start:
        raise ToolError(f"end_line ({end}) is before start_line ({start}).")
    count_all = path.stat().st_size <= COUNT_LINES_UP_TO_BYTES
    shown: list[str] = []
    used = 0
    stopped_at: int | None = None  # the last line shown when the size cap stopped us
    total = 0  # -1: not counted, the file is too big to read to the end for that
    encoding = sniff(path)
    with open(path, encoding=encoding.codec, errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            total = number
            if number >= start and (end is None or number <= end) and stopped_at is None:
                entry = _numbered(number, line.rstrip("\n"))
                if not shown or used + len(entry) <= READ_CHAR_LIMIT:
                    shown.append(entry)
                    used += len(entry) + 1
                    continue
                stopped_at = number - 1
            if not count_all and (stopped_at is not None or (end is not None and number > end)):
                total = -1
                break
    result = _read_result(path, start, shown, stopped_at, total)
    return f"{result}\n{encoding.note()}" if encoding.note() else result


def _numbered(number: int, text: str) -> str:
    if len(text) > LINE_CHAR_LIMIT:
        text = text[:LINE_CHAR_LIMIT] + f" ... [line cut: {len(text)} characters]"
    return f"{number:6d}\t{text}"


def _read_result(
    path: Path, start: int, shown: list[str], stopped_at: int | None, total: int
) -> str:
    of_total = "" if total < 0 else f" of {total}"
    if total == 0:
        return f"{path} is empty (0 lines)."
    if not shown:
        raise ToolError(f"start_line {start} is past the end of {path}, which has {total} lines.")
    last = start + len(shown) - 1
    header = f"{path} (lines {start}-{last}{of_total})"
    body = "\n".join(shown)
    if stopped_at is not None:
        body += (
            f"\n[Stopped at line {stopped_at} to stay under {READ_CHAR_LIMIT} characters. "
            f"Call read_file with start_line={stopped_at + 1} to read on.]"
        )
    return f"{header}\n{body}"


# write_file --------------------------------------------------------------------------

WRITE_PARAMETERS = object_parameters(
    {
        "path": {
            "type": "string",
            "description": "File to write, relative to the working directory or absolute.",
        },
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    required=["path", "content"],
)


def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path = ctx.resolve_path(args["path"])
    content: str = args["content"]
    authorize_file_write(path, ctx)  # first: nothing is said of a path it may not touch
    if path.is_dir():
        raise ToolError(f"{path} is a directory; give a file path.")
    existed = path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_checked(path, content, ctx)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {path}: {len(content)} characters, {lines} lines."


def _write_checked(path: Path, text: str, ctx: ToolContext) -> None:
    """Write ``text`` to the file ``path`` names and only there. Through a symlink, not
    over it (replacing the link would silently unlink its target), so the target is
    checked once the links are resolved, and written inside its folder as opened and seen
    to be that folder: a link a background command swaps into the path meanwhile cannot
    send the write elsewhere."""
    target = path.resolve()
    authorize_file_write(target, ctx)
    try:
        with folder_opened_as(target.parent) as folder:
            name = Path(target.name) if folder is not None else target
            atomic_write_text(name, text, mode=None, dir_fd=folder)
    except FolderMovedError as exc:
        raise ToolError(
            f"Refused: {path} changed while it was being written ({exc}); check it and try again."
        ) from exc


# patch -------------------------------------------------------------------------------

PATCH_PARAMETERS = object_parameters(
    {
        "path": {
            "type": "string",
            "description": "File to edit, relative to the working directory or absolute.",
        },
        "old": {
            "type": "string",
            "description": "The exact text to replace, including indentation; include enough lines to be unique.",
        },
        "new": {"type": "string", "description": "The text to put in its place."},
        "replace_all": {
            "type": "boolean",
            "description": "Replace every occurrence instead of requiring exactly one.",
        },
    },
    required=["path", "old", "new"],
)


def patch(args: dict[str, Any], ctx: ToolContext) -> str:
    path = _existing_file(ctx, args["path"], authorize_file_write)
    old: str = args["old"]
    new: str = args["new"]
    if old == "":
        raise ToolError(
            "'old' is empty; give the exact text to replace (use write_file to write a whole file)."
        )
    if old == new:
        raise ToolError("'old' and 'new' are the same; nothing would change.")
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); patch edits UTF-8 files only."
        ) from exc
    if old not in text and "\r\n" in text:
        # The model writes \n; a Windows-style file has \r\n. Same text, same intent.
        old, new = _crlf(old), _crlf(new)
    count = text.count(old)
    if count == 0:
        raise ToolError(_missing_message(path, text, old))
    if count > 1 and not args.get("replace_all"):
        lines = _match_lines(text, old)
        raise ToolError(
            f"'old' matches {count} places in {path} (lines {', '.join(map(str, lines[:20]))}). "
            "Include more surrounding lines in 'old' so it matches exactly one, "
            "or set replace_all=true to change them all."
        )
    lines = _match_lines(text, old)
    updated = text.replace(old, new)
    _write_checked(path, updated, ctx)
    where = ", ".join(map(str, lines[:20]))
    return f"Patched {path}: replaced {count} occurrence{'s' if count > 1 else ''} (line{'s' if count > 1 else ''} {where})."


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _match_lines(text: str, old: str) -> list[int]:
    lines, start = [], 0
    while (at := text.find(old, start)) != -1:
        lines.append(text.count("\n", 0, at) + 1)
        start = at + len(old)
    return lines


def _missing_message(path: Path, text: str, old: str) -> str:
    message = f"'old' was not found in {path}."
    if _squash(old) and _squash(old) in _squash(text):
        message += " The text is there but with different whitespace or indentation."
    closest = _closest_lines(text.splitlines(), old)
    if closest:
        message += f" The closest lines are:\n{closest}\n"
    else:
        message += " Nothing in the file looks similar. "
    return message + "Copy 'old' exactly as the file has it (read_file shows it), then try again."


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _closest_lines(lines: list[str], old: str) -> str:
    """The window of the file most like ``old``, numbered, or "" if nothing is close."""
    old_lines = old.splitlines() or [old]
    probe = next((line.strip() for line in old_lines if line.strip()), "")
    if not probe or not lines:
        return ""
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(probe)
    scored = []
    for index, line in enumerate(lines):
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() >= 0.4 and matcher.quick_ratio() >= 0.4:
            scored.append((matcher.ratio(), index))
    if not scored:
        return ""
    # Judge the best few starting lines by the whole window, not one line alone.
    span = len(old_lines)
    offset = next(i for i, line in enumerate(old_lines) if line.strip())
    best_score, best = 0.0, 0
    for _, index in sorted(scored, reverse=True)[:5]:
        first = max(0, index - offset)
        window = "\n".join(lines[first : first + span])
        score = difflib.SequenceMatcher(None, window, old, autojunk=False).ratio()
        if score > best_score:
            best_score, best = score, first
    if best_score < 0.5:
        return ""
    first, last = max(0, best - 1), min(len(lines), best + span + 1)
    return "\n".join(f"{n + 1:6d}\t{lines[n]}" for n in range(first, last))


READ_TOOL = Tool(
    name="read_file",
    description=(
        "Read a text file with line numbers; optionally only lines start_line..end_line. "
        f"Shows up to {READ_CHAR_LIMIT} characters at a time and says where to continue."
    ),
    parameters=READ_PARAMETERS,
    handler=read_file,
    toolsets=("files",),
)

# Each tool declared as its own Tool value (as every tool module does): name, description and
# schema are what the model reads.
WRITE_TOOL = Tool(
    name="write_file",
    description="Write a whole file (created with its folders if missing, replaced atomically if present).",
    parameters=WRITE_PARAMETERS,
    handler=write_file,
    toolsets=("files",),
)

PATCH_TOOL = Tool(
    name="patch",
    description=(
        "Edit a file by replacing an exact piece of text ('old') with new text. 'old' must match "
        "exactly one place (include surrounding lines) unless replace_all=true."
    ),
    parameters=PATCH_PARAMETERS,
    handler=patch,
    toolsets=("files",),
)
