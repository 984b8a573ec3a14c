"""Where a job's answer goes: ``telegram:CHAT``, ``discord:CHANNEL``, ``slack:CHANNEL``,
or ``local`` (stored only)."""

from __future__ import annotations

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
