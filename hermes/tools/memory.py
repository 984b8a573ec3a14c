"""The ``memory`` tool: the agent's lasting notes (MEMORY.md) and facts about the user (USER.md).

Both files live in ``memories/`` (0600) where Hermes Agent keeps them: under
HERMES_HOME for the terminal chat, or on a gateway under a folder of the user's own
(``memory_home``). They hold entries separated by a line holding only ``§``. Files an
older hermes kept in HERMES_HOME itself move there once (``move_old_memories``). Every
change is read-merge-write under a cross-process lock on ``memories/<FILE>.lock`` (Hermes
Agent's lock file too): the file is re-read after the lock is taken and the one change
applied to what is there now, so two processes (a chat and a background review, say, or
a Hermes Agent on the same home) never lose each other's entries. Each file has a
character budget (``memory.memory_char_limit``,
``memory.user_char_limit``); going over it is refused with a message that says how
full the file is and what to consolidate.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from filelock import FileLock

from hermes.config import ensure_home
from hermes.tools._fs import atomic_write_text
from hermes.tools.registry import Tool, ToolContext, ToolError, object_parameters
from hermes.tools.workspaces import JOB_SOURCE, KANBAN_SOURCE, per_user, unattended

DELIMITER = "\n§\n"
FILES = {"memory": "MEMORY.md", "user": "USER.md"}
LIMIT_KEYS = {"memory": "memory.memory_char_limit", "user": "memory.user_char_limit"}
FOLDER = "memories"
PREVIEW_CHARS = 80
UNATTENDED_REFUSALS = {
    JOB_SOURCE: "Refused: a scheduled job does not change the operator's memory, since nobody "
    "is there to approve it; put what should be remembered in the job's answer.",
    KANBAN_SOURCE: "Refused: a Kanban task does not change the profile's memory, since nobody "
    "is there to approve it; put what should be remembered in the task's result.",
}


def memory_dir(hermes_home: Path) -> Path:
    return Path(hermes_home) / FOLDER


def memory_home(hermes_home: Path, source: str, user_id: str | None, shared: bool) -> Path:
    """The folder holding the memory files of whoever is talking.

    Every gateway user (a chat platform's user, an API caller: ``workspaces.per_user``)
    has a folder of their own, so one user's facts never reach another's prompt. The
    operator's own surfaces (the terminal chat, a local web UI such as hermes-webui,
    scheduled jobs) and an operator who opted into one shared memory (``memory.shared``)
    use HERMES_HOME itself (its ``memories/``)."""
    if shared or not per_user(source):
        return Path(hermes_home)
    user = "u-" + quote(user_id or "anonymous", safe="")
    return Path(hermes_home) / "memories" / "users" / quote(source, safe="") / user


def memory_home_of(ctx: ToolContext) -> Path:
    return memory_home(ctx.hermes_home, ctx.source, ctx.user_id, bool(ctx.setting("memory.shared")))


def memory_path(hermes_home: Path, target: str) -> Path:
    return memory_dir(hermes_home) / FILES[target]


def move_old_memories(hermes_home: Path) -> list[str]:
    """Move MEMORY.md / USER.md from HERMES_HOME itself into ``memories/``, once.

    A file is moved only when ``memories/`` has none of that name yet; each move is said
    in one line on stderr. Returns the names moved.
    """
    home = Path(hermes_home)
    moved = []
    for name in FILES.values():
        old, new = home / name, memory_dir(home) / name
        if not old.is_file() or new.exists():
            continue
        try:
            new.parent.mkdir(mode=0o700, exist_ok=True)
            os.link(old, new)  # never replaces a file another process just wrote
            old.unlink()
            new.chmod(0o600)  # a state file (0600), whatever the old one was
        except OSError:
            continue  # a read-only home: read where it is, try again next time
        moved.append(name)
        print(f"hermes: moved {old} to {new}, where Hermes Agent keeps it.", file=sys.stderr)
    return moved


def read_entries(hermes_home: Path, target: str) -> list[str]:
    try:
        text = memory_path(hermes_home, target).read_text(encoding="utf-8")
    except FileNotFoundError:
        text = _old_place_text(hermes_home, target)
    return [entry.strip() for entry in text.split(DELIMITER) if entry.strip()]


def _old_place_text(hermes_home: Path, target: str) -> str:
    """A file still in HERMES_HOME itself (a home hermes could not move it in)."""
    try:
        return (Path(hermes_home) / FILES[target]).read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def read_memory_snapshot(hermes_home: Path) -> tuple[str, str]:
    """``(memory_text, user_text)`` as stored now, for assembling the system prompt."""
    return (
        DELIMITER.join(read_entries(hermes_home, "memory")),
        DELIMITER.join(read_entries(hermes_home, "user")),
    )


@dataclass(frozen=True)
class Change:
    """The outcome of one memory action: the entries after it and what to tell the model."""

    entries: list[str]
    message: str


def apply(
    hermes_home: Path, target: str, action: str, limit: int, content: str = "", old_text: str = ""
) -> str:
    """Apply one action to one file under the lock; returns the message for the model."""
    if target not in FILES:
        raise ToolError(
            f"unknown target '{target}'; use 'memory' (your notes) or 'user' (facts about the user)."
        )
    home = ensure_home(Path(hermes_home))
    move_old_memories(home)
    path = memory_path(home, target)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=30, mode=0o600):
        entries = read_entries(home, target)  # re-read under the lock: this is the merge
        change = _change(entries, action, _clean(content), old_text.strip(), target, limit)
        if change.entries != entries:
            text = DELIMITER.join(change.entries)
            atomic_write_text(path, text + "\n" if text else "")
    return change.message


def _change(
    entries: list[str], action: str, content: str, old_text: str, target: str, limit: int
) -> Change:
    if action == "add":
        if not content:
            raise ToolError("'content' is empty; give the entry to add.")
        if content in entries:
            return Change(
                entries, f"Already in {FILES[target]}; nothing added. {_usage(entries, limit)}"
            )
        return _within_limit(entries, [*entries, content], target, limit, "Added")
    if not old_text:
        raise ToolError(
            f"action '{action}' needs 'old_text': a piece of the entry to {action}, unique to it."
        )
    index = _find(entries, old_text, target)
    if action == "remove":
        updated = entries[:index] + entries[index + 1 :]
        return Change(updated, f"Removed from {FILES[target]}. {_usage(updated, limit)}")
    if not content:
        raise ToolError(
            "'content' is empty; give the new text of the entry (use action 'remove' to delete it)."
        )
    updated = [*entries[:index], content, *entries[index + 1 :]]
    return _within_limit(entries, updated, target, limit, "Replaced")


def _within_limit(
    before: list[str], after: list[str], target: str, limit: int, verb: str
) -> Change:
    size = _size(after)
    if size <= limit or size <= _size(before):  # shrinking an over-full file is always fine
        return Change(after, f"{verb} in {FILES[target]}. {_usage(after, limit)}")
    current = _size(before)
    listing = "\n".join(f"  - {_preview(e)} ({len(e)} chars)" for e in before)
    raise ToolError(
        f"{FILES[target]} is full: {current}/{limit} characters used, and this change would make it "
        f"{size} ({size - limit} over). Consolidate first: merge related entries into one shorter "
        "entry with action 'replace', or drop stale ones with action 'remove', then try again. "
        f"Current entries:\n{listing}"
    )


def _find(entries: list[str], old_text: str, target: str) -> int:
    hits = [i for i, entry in enumerate(entries) if old_text in entry]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        listing = "\n".join(f"  - {_preview(e)}" for e in entries) or "  (no entries)"
        raise ToolError(
            f"no entry in {FILES[target]} contains '{old_text}'. The entries are:\n{listing}"
        )
    listing = "\n".join(f"  - {_preview(entries[i])}" for i in hits)
    raise ToolError(
        f"'{old_text}' is in {len(hits)} entries of {FILES[target]}; give a longer piece of the one you mean:\n{listing}"
    )


def _clean(content: str) -> str:
    # An entry must not contain the delimiter line, or it would read back as two.
    lines = ["§ " if line.strip() == "§" else line for line in content.strip().splitlines()]
    return "\n".join(lines).strip()


def _size(entries: list[str]) -> int:
    return len(DELIMITER.join(entries))


def _usage(entries: list[str], limit: int) -> str:
    return f"Now {_size(entries)}/{limit} characters, {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}."


def _preview(entry: str) -> str:
    flat = " ".join(entry.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 3] + "..."


PARAMETERS = object_parameters(
    {
        "action": {
            "type": "string",
            "enum": ["add", "replace", "remove"],
            "description": "add a new entry, replace one, or remove one.",
        },
        "target": {
            "type": "string",
            "enum": ["memory", "user"],
            "description": "memory: your own notes (what works, project facts); user: facts about the user (preferences, context).",
        },
        "content": {
            "type": "string",
            "description": "For add and replace: the entry's text. Keep it short and durable.",
        },
        "old_text": {
            "type": "string",
            "description": "For replace and remove: a piece of the existing entry, unique to it.",
        },
    },
    required=["action", "target"],
)


def handle(args: dict[str, Any], ctx: ToolContext) -> str:
    if unattended(ctx.source):
        # A job's or a Kanban task's memory is the operator's, and text others wrote may
        # drive its turn: a line it wrote would instruct every later prompt, with nobody
        # there to approve.
        raise ToolError(UNATTENDED_REFUSALS[ctx.source])
    target = args["target"]
    limit = int(ctx.setting(LIMIT_KEYS[target]))
    return apply(
        memory_home_of(ctx),
        target,
        args["action"],
        limit,
        args.get("content") or "",
        args.get("old_text") or "",
    )


TOOL = Tool(
    name="memory",
    description=(
        "Keep lasting memory across conversations: add, replace or remove an entry in your notes "
        "(target 'memory') or in what you know about the user (target 'user'). Both are shown to "
        "you at the start of every conversation and have a size limit, so keep entries short."
    ),
    parameters=PARAMETERS,
    handler=handle,
    toolsets=("memory",),
)
