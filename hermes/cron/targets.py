"""Where a job's answer goes: ``telegram:CHAT``, ``discord:CHANNEL``, ``slack:CHANNEL``,
a platform alone (``telegram``: its home channel, the chat where an admin sent
``/sethome``, looked up when the answer is delivered), or ``local`` (stored only).

Home channels are kept in ``$HERMES_HOME/.env`` under Hermes Agent 0.19's names
(``TELEGRAM_HOME_CHANNEL``, ...), so 0.19's tools read them too."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from hermes.config import dotenv_values, set_dotenv_value
from hermes.errors import HermesError

PLATFORMS = ("telegram", "discord", "slack")
HOME_CHANNEL_ENV = {platform: f"{platform.upper()}_HOME_CHANNEL" for platform in PLATFORMS}


class TargetError(HermesError):
    """A delivery target hermes cannot deliver to."""


def check_target(text: str | None) -> str:
    """The target, checked; ``local`` when none is given."""
    target = (text or "local").strip()
    if target == "local" or target in PLATFORMS:
        return target
    platform, _, chat = target.partition(":")
    if platform not in PLATFORMS or not chat.strip():
        raise TargetError(
            f"Invalid delivery target {target!r}: use 'local', telegram:CHAT, "
            "discord:CHANNEL or slack:CHANNEL with the chat's id, or a platform alone for "
            "its home channel (/sethome in a chat sets it)."
        )
    return f"{platform}:{chat.strip()}"


def split_target(target: str) -> tuple[str, str]:
    """(platform, chat); the chat is "" for a platform's home channel."""
    platform, _, chat = target.partition(":")
    return platform, chat


def home_channel(home: Path, platform: str) -> str | None:
    """The chat id of ``platform``'s home channel (``.env``, else the environment)."""
    name = HOME_CHANNEL_ENV.get(platform)
    if name is None:
        return None
    return dotenv_values(home).get(name) or os.environ.get(name) or None


def set_home_channel(home: Path, platform: str, chat_id: str) -> None:
    set_dotenv_value(HOME_CHANNEL_ENV[platform], chat_id, home)


def home_chat(home: Path, platform: str) -> str:
    """The home channel a job's answer goes to; TargetError while it has none."""
    chat = home_channel(home, platform)
    if chat is None:
        raise TargetError(
            f"{platform} has no home channel yet: an admin sends /sethome in the chat that "
            "should get these answers."
        )
    return chat


# A delivery still pending this long after its answer was made is reported (`hermes cron
# runs`, `hermes doctor`) with the reason: a retry backoff is shorter at first.
WAITING_AFTER = 300.0


def configured_platforms(config: Any) -> set[str]:
    """The chat platforms ``gateway.platforms`` enables in this home's config."""
    raw = config.get("gateway.platforms") or {}
    if not isinstance(raw, Mapping):
        return set()
    return {
        name
        for name, options in raw.items()
        if name in PLATFORMS
        and not (isinstance(options, Mapping) and options.get("enabled") is False)
    }


def why_undelivered(
    target: str, configured: Collection[str], serving: Collection[str] | None = None
) -> str | None:
    """Why no gateway of this home delivers to ``target`` (None: one would, or ``local``).
    ``serving``: the platforms running gateways serve now (None: unknown)."""
    if target == "local":
        return None
    platform, _ = split_target(target)
    if platform not in configured:
        return (
            f"no gateway serves {platform}: config.yaml has no gateway.platforms.{platform}, "
            "so its answers wait in the outbox until a gateway with it runs"
        )
    if serving is not None and platform not in serving:
        return (
            f"no running gateway serves {platform} now; its answers wait in the outbox until "
            "`hermes gateway run` starts with it"
        )
    return None
