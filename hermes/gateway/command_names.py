"""The names a messaging platform accepts for a slash command.

Telegram and Discord cap a command's name at 32 characters; Telegram takes only
``a-z``, ``0-9`` and ``_``, Slack also ``-`` and reserves a few names of its own. These
rules turn any command, plugin or skill name into one the platform takes, and keep
the names of one menu distinct after shortening.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

NAME_LIMIT = 32  # Telegram's, Discord's and Slack's longest command name

# Slack's own commands: an app cannot register them (they stay reachable as
# ``/hermes <command>``).
SLACK_RESERVED = frozenset(
    {
        "me",
        "status",
        "away",
        "dnd",
        "shrug",
        "remind",
        "msg",
        "feed",
        "who",
        "collapse",
        "expand",
        "leave",
        "join",
        "open",
        "search",
        "topic",
        "mute",
        "pro",
        "shortcuts",
    }
)
SLACK_MAX_SLASHES = 50  # an app's slash commands at most

_TELEGRAM_INVALID = re.compile(r"[^a-z0-9_]")
_UNDERSCORES = re.compile(r"_{2,}")
_SLACK_INVALID = re.compile(r"[^a-z0-9_\-]")


def telegram_name(raw: str) -> str:
    """``My-Skill+v2`` -> ``my_skillv2``; empty when nothing valid is left."""
    name = _TELEGRAM_INVALID.sub("", raw.lower().replace("-", "_"))
    return _UNDERSCORES.sub("_", name).strip("_")


def slack_name(raw: str) -> str:
    """Lower case, only ``a-z0-9_-``, no leading or trailing ``-``/``_``, 32 at most."""
    return _SLACK_INVALID.sub("", raw.lower()).strip("-_")[:NAME_LIMIT]


def clamp_names(entries: Sequence[tuple[str, ...]], reserved: set[str]) -> list[tuple[str, ...]]:
    """The entries (``name, description, ...``) with names of 32 characters at most.

    A name cut to 32 that meets a taken one (``reserved`` or an earlier entry) ends in
    a digit 0-9 instead; with all ten taken, or a short name already taken, the entry
    is left out. What follows the name travels unchanged.
    """
    used = set(reserved)
    kept: list[tuple[str, ...]] = []
    for name, *rest in entries:
        if len(name) > NAME_LIMIT:
            candidates = [name[:NAME_LIMIT]] + [f"{name[: NAME_LIMIT - 1]}{d}" for d in range(10)]
            name = next((c for c in candidates if c not in used), "")
            if not name:
                continue
        if name in used:
            continue
        used.add(name)
        kept.append((name, *rest))
    return kept
