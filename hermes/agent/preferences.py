"""What the person chose for one chat: its requests and its display.

A chat starts from the configuration (``agent.reasoning_effort``, ``agent.service_tier``,
``display.*``) and its slash commands (/reasoning, /fast, /personality, /verbose) change
it for that chat only; the agent sends the request choices with every model call of its
turns (``request_parameters``) and the personality's prompt after the segment's system
prompt, never stored, so a resume without it works. The display choices are read by the
terminal chat, which shows the turns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes.config import REASONING_LEVELS, TOOL_PROGRESS_MODES, Config

# Hermes Agent 0.19's built-in personalities (its CLI's defaults); agent.personalities
# adds to them and a configured one of the same name wins.
BUILT_IN_PERSONALITIES: dict[str, str] = {
    "helpful": "You are a helpful, friendly AI assistant.",
    "concise": "You are a concise assistant. Keep responses brief and to the point.",
    "technical": "You are a technical expert. Provide detailed, accurate technical information.",
    "creative": "You are a creative assistant. Think outside the box and offer innovative "
    "solutions.",
    "teacher": "You are a patient teacher. Explain concepts clearly with examples.",
    "pirate": "Arrr! Ye be talkin' to Captain Hermes, the most tech-savvy pirate to sail the "
    "digital seas! Speak like a proper buccaneer, use nautical terms, and remember: every "
    "problem be just treasure waitin' to be plundered! Yo ho ho!",
    "shakespeare": "Hark! Thou speakest with an assistant most versed in the bardic arts. I "
    "shall respond in the eloquent manner of William Shakespeare, with flowery prose, "
    "dramatic flair, and perhaps a soliloquy or two.",
    "noir": "The rain hammered against the terminal like regrets on a guilty conscience. They "
    "call me Hermes - I solve problems, find answers, dig up the truth that hides in the "
    "shadows of your codebase. What's your story, pal?",
    "philosopher": "Greetings, seeker of wisdom. I am an assistant who contemplates the deeper "
    "meaning behind every query. Let us examine not just the 'how' but the 'why' of your "
    "questions.",
}

# Words that clear the personality (0.19's).
NO_PERSONALITY = ("none", "default", "neutral")


def personalities(config: Config) -> dict[str, Any]:
    """The personalities a chat offers: the built-in ones, then the configured ones."""
    configured = config.get("agent.personalities") or {}
    return {**BUILT_IN_PERSONALITIES, **{str(k).lower(): v for k, v in configured.items()}}


def personality_prompt(value: Any) -> str:
    """A personality's prompt: its text, or {system_prompt, tone, style} joined (0.19's)."""
    if not isinstance(value, dict):
        return str(value)
    parts = [str(value.get("system_prompt") or "")]
    if value.get("tone"):
        parts.append(f"Tone: {value['tone']}")
    if value.get("style"):
        parts.append(f"Style: {value['style']}")
    return "\n".join(part for part in parts if part)


def reasoning_level(value: Any) -> str | None:
    """A configured reasoning_effort as the level sent: YAML's false is ``none``; unset
    or empty is None (the endpoint's default)."""
    if value is False:
        return "none"
    level = str(value or "").strip().lower()
    if level in ("false", "disabled"):
        return "none"
    return level if level in REASONING_LEVELS else None


def is_fast(value: Any) -> bool:
    """Whether a configured service_tier asks for priority processing (0.19's words)."""
    return str(value or "").strip().lower() in ("fast", "priority", "on")


def tool_progress_mode(value: Any) -> str:
    """A configured display.tool_progress: YAML's bare ``off`` is false; true is ``all``."""
    if isinstance(value, bool):
        return "all" if value else "off"
    return value if value in TOOL_PROGRESS_MODES else "all"


@dataclass
class ChatPreferences:
    """One chat's choices; ``from_config`` gives the configured ones."""

    reasoning_effort: str | None = None  # sent as reasoning_effort; None: not sent
    fast: bool = False  # sent as service_tier "priority"
    personality: str | None = None
    personality_prompt: str | None = None  # sent after the system prompt, never stored
    show_reasoning: bool = False
    reasoning_full: bool = False
    tool_progress: str = "all"

    @classmethod
    def from_config(cls, config: Config) -> ChatPreferences:
        return cls(
            reasoning_effort=reasoning_level(config.get("agent.reasoning_effort")),
            fast=is_fast(config.get("agent.service_tier")),
            show_reasoning=bool(config.get("display.show_reasoning")),
            reasoning_full=bool(config.get("display.reasoning_full")),
            tool_progress=tool_progress_mode(config.get("display.tool_progress")),
        )

    def request_parameters(self) -> dict[str, Any]:
        """What every model request of this chat carries (a caller's own choice wins)."""
        chosen: dict[str, Any] = {}
        if self.reasoning_effort is not None:
            chosen["reasoning_effort"] = self.reasoning_effort
        if self.fast:
            chosen["service_tier"] = "priority"
        return chosen
