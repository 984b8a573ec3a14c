"""Where a job's answer goes: ``telegram:CHAT``, ``discord:CHANNEL``, ``slack:CHANNEL``,
or ``local`` (stored only)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from hermes.errors import HermesError

PLATFORMS = ("telegram", "discord", "slack")


class TargetError(HermesError):
    """A delivery target hermes cannot deliver to."""


def check_target(text: str | None) -> str:
    """The target, checked; ``local`` when none is given."""
    target = (text or "local").strip()
    if target == "local":
        return target
    platform, _, chat = target.partition(":")
    if platform not in PLATFORMS or not chat.strip():
        raise TargetError(
            f"Invalid delivery target {target!r}: use 'local', or telegram:CHAT, "
            "discord:CHANNEL or slack:CHANNEL with the chat's id."
        )
    return f"{platform}:{chat.strip()}"


def split_target(target: str) -> tuple[str, str]:
    platform, _, chat = target.partition(":")
    return platform, chat


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
