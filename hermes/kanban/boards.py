"""Boards as a collection: display metadata in ``board.json`` beside each board, creating,
listing and removing boards. The slug is the board's identity (its folder); the metadata is
for people only."""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

from hermes.kanban import db
from hermes.kanban.paths import (
    DEFAULT_BOARD,
    board_dir,
    boards_root,
    clear_current_board,
    get_current_board,
    kanban_db_path,
    normalize_slug,
)


def board_metadata_path(board: str | None = None) -> Path:
    return board_dir(board) / "board.json"


def display_name(slug: str) -> str:
    """``atm10-server`` reads as ``Atm10 Server``."""
    words = [w.capitalize() for w in slug.replace("_", "-").split("-") if w]
    return " ".join(words) or slug


def read_board_metadata(board: str | None = None) -> dict[str, Any]:
    """``board.json`` over defaults; never raises on a missing or broken file."""
    slug = normalize_slug(board) or DEFAULT_BOARD
    meta: dict[str, Any] = {
        "slug": slug,
        "name": display_name(slug),
        "description": "",
        "icon": "",
        "color": "",
        "default_workdir": None,
        "created_at": None,
        "archived": False,
    }
    with contextlib.suppress(OSError, ValueError):
        stored = json.loads(board_metadata_path(slug).read_text(encoding="utf-8"))
        if isinstance(stored, dict):
            meta.update(stored)
    meta["slug"] = slug  # the folder is the identity, whatever the file claims
    meta["db_path"] = str(kanban_db_path(slug))
    return meta


# 0.19's signature kept whole: hermes-webui and 0.19's CLI pass these keywords.
def write_board_metadata(
    board: str | None,
    *,
    name: str | None = None,
    description: str | None = None,
    icon: str | None = None,
    color: str | None = None,
    archived: bool | None = None,
    default_workdir: str | None = None,
) -> dict[str, Any]:
    """Update the fields given, keep the rest; ``created_at`` is set on first write."""
    slug = normalize_slug(board) or DEFAULT_BOARD
    meta = read_board_metadata(slug)
    meta.pop("db_path", None)
    if name is not None:
        meta["name"] = str(name).strip() or display_name(slug)
    for key, value in (("description", description), ("icon", icon), ("color", color)):
        if value is not None:
            meta[key] = str(value)
    if archived is not None:
        meta["archived"] = bool(archived)
    if default_workdir is not None:
        meta["default_workdir"] = str(default_workdir) or None
    meta["created_at"] = meta.get("created_at") or int(time.time())
    path = board_metadata_path(slug)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    meta["db_path"] = str(kanban_db_path(slug))
    return meta


# 0.19's signature kept whole (``write_board_metadata``'s fields): hermes-webui passes them.
def create_board(
    slug: str,
    *,
    name: str | None = None,
    description: str | None = None,
    icon: str | None = None,
    color: str | None = None,
    default_workdir: str | None = None,
) -> dict[str, Any]:
    """Create a board (its metadata and database); an existing one is returned as it is."""
    normed = normalize_slug(slug)
    if not normed:
        raise ValueError("board slug is required")
    meta = write_board_metadata(
        normed,
        name=name,
        description=description,
        icon=icon,
        color=color,
        default_workdir=default_workdir,
    )
    db.init_db(board=normed)
    return meta


def list_boards(*, include_archived: bool = True) -> list[dict[str, Any]]:
    """``default`` first, then every folder under ``boards/`` that is a board, by name."""
    entries = [read_board_metadata(DEFAULT_BOARD)]
    root = boards_root()
    folders = sorted(root.iterdir(), key=lambda p: p.name.lower()) if root.is_dir() else []
    for folder in folders:
        try:
            slug = normalize_slug(folder.name)
        except ValueError:
            continue  # not a board's folder (``_archived``, strays)
        if not slug or slug == DEFAULT_BOARD or not folder.is_dir():
            continue
        if not ((folder / "kanban.db").exists() or (folder / "board.json").exists()):
            continue
        meta = read_board_metadata(slug)
        if include_archived or not meta.get("archived"):
            entries.append(meta)
    return entries


def remove_board(slug: str, *, archive: bool = True) -> dict[str, Any]:
    """Move a board to ``boards/_archived/<slug>-<time>/`` (or delete it with
    ``archive=False``); ``default`` cannot be removed."""
    normed = normalize_slug(slug)
    if not normed:
        raise ValueError("board slug is required")
    if normed == DEFAULT_BOARD:
        raise ValueError("the 'default' board cannot be removed")
    folder = board_dir(normed)
    if not folder.exists():
        raise ValueError(f"board {normed!r} does not exist")
    if get_current_board() == normed:
        clear_current_board()
    db.forget(folder / "kanban.db")
    if not archive:
        shutil.rmtree(folder)
        return {"slug": normed, "action": "deleted", "new_path": ""}
    archived = boards_root() / "_archived"
    archived.mkdir(parents=True, exist_ok=True)
    stamp = int(time.time())
    target = archived / f"{normed}-{stamp}"
    suffix = 0
    while target.exists():
        suffix += 1
        target = archived / f"{normed}-{stamp}-{suffix}"
    folder.rename(target)
    return {"slug": normed, "action": "archived", "new_path": str(target)}
