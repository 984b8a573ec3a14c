"""The chat's settings commands: /reasoning, /fast, /personality, /verbose, /voice and
/codex-runtime, as Hermes Agent 0.19 defines them.

Each changes this chat's ``ChatPreferences`` (hermes/agent/preferences.py): what its
model requests carry, the personality sent after the system prompt, how the terminal
shows reasoning and tool calls. ``--global`` also writes the choice to config.yaml, so
new chats start with it; only the terminal chat may (a messaging chat's user does not
own the operator's configuration). hermes has no voice mode and one runtime, so /voice
and /codex-runtime say so in words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes.agent.commands import Reply, command, endpoint
from hermes.agent.preferences import (
    NO_PERSONALITY,
    personalities,
    personality_prompt,
)
from hermes.config import REASONING_LEVELS, TOOL_PROGRESS_MODES, save_value
from hermes.text import one_line

if TYPE_CHECKING:
    from hermes.agent import AIAgent

REASONING_USAGE = (
    f"Usage: /reasoning [{'|'.join(REASONING_LEVELS)}|show|hide|full|clamp] [--global]"
)
FAST_USAGE = "Usage: /fast [normal|fast|status] [--global]"
VOICE_USAGE = "Usage: /voice [on|off|tts|status]"
RUNTIME_USAGE = "Usage: /codex-runtime [auto|codex_app_server]"
NO_VOICE = (
    "hermes has no speech-to-text or text-to-speech, so voice mode cannot be turned on; "
    "type your messages instead."
)


def _scope(arg: str) -> tuple[str, bool]:
    """(the argument without its scope flags, whether --global was given)."""
    words = arg.lower().split()
    rest = " ".join(w for w in words if w not in ("--global", "--session"))
    return rest, "--global" in words


def _in_terminal(agent: AIAgent) -> bool:
    return agent.source == "cli"


def _applied(agent: AIAgent, key: str, value: Any, is_global: bool, what: str) -> Reply:
    """The reply for a choice made: for this chat, or saved to config.yaml with --global."""
    if not is_global:
        hint = " (add --global to keep it for new chats)" if _in_terminal(agent) else ""
        return Reply(f"{what} for this chat{hint}.")
    if not _in_terminal(agent):
        return Reply(
            f"{what} for this chat. --global changes the operator's config.yaml, which "
            "only the terminal chat (hermes chat) may do.",
            ok=False,
        )
    try:
        path = save_value(key, value, agent.config.path)
    except OSError as exc:
        return Reply(
            f"{what} for this chat, but {agent.config.path} could not be written "
            f"({exc.strerror}); check its permissions.",
            ok=False,
        )
    return Reply(f"{what}, and saved to {path} for new chats.")


@command(
    "reasoning",
    "/reasoning [level|show|hide|full|clamp] [--global]",
    "Set the model's reasoning effort, or show or hide its reasoning.",
    (*REASONING_LEVELS, "show", "hide", "on", "off", "full", "clamp", "--global"),
    category="Configuration",
)
def _reasoning(agent: AIAgent, arg: str) -> Reply:
    chosen = agent.preferences
    word, is_global = _scope(arg)
    if not word:
        effort = chosen.reasoning_effort or "the model's default (none sent)"
        shown = "off"
        if chosen.show_reasoning:
            shown = "on, whole" if chosen.reasoning_full else "on, first 10 lines"
        return Reply(f"Reasoning effort: {effort}.\nReasoning display: {shown}.\n{REASONING_USAGE}")
    if word in ("show", "on", "hide", "off", "full", "all", "clamp", "collapse", "short"):
        if not _in_terminal(agent):
            return Reply(
                "Only the terminal chat (hermes chat) shows the model's reasoning; here "
                "/reasoning LEVEL sets its effort.",
                ok=False,
            )
        if word in ("show", "on", "hide", "off"):
            chosen.show_reasoning = word in ("show", "on")
            state = "on" if chosen.show_reasoning else "off"
            return _applied(
                agent, "display.show_reasoning", chosen.show_reasoning, is_global,
                f"Reasoning display {state}",
            )  # fmt: skip
        chosen.reasoning_full = word in ("full", "all")
        how = "whole" if chosen.reasoning_full else "clamped to its first 10 lines"
        note = "" if chosen.show_reasoning else " (it is hidden: /reasoning show shows it)"
        return _applied(
            agent, "display.reasoning_full", chosen.reasoning_full, is_global,
            f"Reasoning shown {how}{note}",
        )  # fmt: skip
    if word not in REASONING_LEVELS:
        return Reply(f"Unknown reasoning setting '{word}'. {REASONING_USAGE}", ok=False)
    chosen.reasoning_effort = word
    return _applied(
        agent, "agent.reasoning_effort", word, is_global,
        f"Reasoning effort set to {word}: the model's requests carry reasoning_effort={word}",
    )  # fmt: skip


@command(
    "fast",
    "/fast [normal|fast|status] [--global]",
    "Ask for priority processing (service_tier priority), or normal again.",
    ("normal", "fast", "status", "on", "off", "--global"),
    category="Configuration",
)
def _fast(agent: AIAgent, arg: str) -> Reply:
    chosen = agent.preferences
    word, is_global = _scope(arg)
    if word in ("", "status"):
        state = "fast (service_tier priority)" if chosen.fast else "normal"
        return Reply(f"Priority processing: {state}.\n{FAST_USAGE}")
    if word in ("fast", "on"):
        chosen.fast = True
        return _applied(
            agent, "agent.service_tier", "fast", is_global,
            "Fast mode on: the model's requests ask for service_tier priority (the "
            "endpoint may bill it higher, or ignore it)",
        )  # fmt: skip
    if word in ("normal", "off"):
        chosen.fast = False
        return _applied(agent, "agent.service_tier", "normal", is_global, "Fast mode off")
    return Reply(f"Unknown fast mode '{word}'. {FAST_USAGE}", ok=False)


@command(
    "personality",
    "/personality [name]",
    "Give this chat a personality (lists them without a name; none clears it).",
    category="Configuration",
)
def _personality(agent: AIAgent, arg: str) -> Reply:
    chosen = agent.preferences
    offered = personalities(agent.config)
    name = arg.strip().lower()
    if not name:
        current = chosen.personality or "none"
        rows = [f"  none — no personality{'  (current)' if current == 'none' else ''}"]
        for key, value in offered.items():
            mark = "  (current)" if key == current else ""
            rows.append(f"  {key} — {one_line(_preview(value), 60)}{mark}")
        listing = "\n".join(rows)
        return Reply(
            f"Personalities (agent.personalities in config.yaml adds yours):\n{listing}\n"
            "Usage: /personality NAME",
            data={"personalities": ["none", *offered]},
        )
    if name in NO_PERSONALITY:
        chosen.personality = chosen.personality_prompt = None
        return Reply("Personality cleared: the model gets the system prompt alone.")
    if name not in offered:
        names = ", ".join(("none", *offered))
        return Reply(f"Unknown personality '{name}'. Available: {names}.", ok=False)
    chosen.personality, chosen.personality_prompt = name, personality_prompt(offered[name])
    return Reply(
        f'Personality set to {name} for this chat: "{one_line(chosen.personality_prompt, 60)}"'
    )


def _preview(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("description") or value.get("system_prompt") or "")
    return str(value)


_PROGRESS_LABELS = {
    "off": "off: no tool lines, just the answer",
    "new": "new: a line for each tool unlike the one before",
    "all": "all: a line for every tool call",
    "verbose": "verbose: every tool call with its whole arguments",
    "log": "log: every tool call, and how each ended and how long it took",
}


@command(
    "verbose",
    "/verbose",
    "Cycle how tool calls show: off, new, all, verbose, log.",
    category="Configuration",
    cli_only=True,
    config_gate="display.tool_progress_command",
)
def _verbose(agent: AIAgent, arg: str) -> Reply:
    chosen = agent.preferences
    modes = list(TOOL_PROGRESS_MODES)
    current = modes.index(chosen.tool_progress) if chosen.tool_progress in modes else 2
    chosen.tool_progress = modes[(current + 1) % len(modes)]
    return Reply(f"Tool progress: {_PROGRESS_LABELS[chosen.tool_progress]}.")


@command(
    "voice",
    "/voice [on|off|tts|status]",
    "Voice mode (hermes has none: status and off say so).",
    ("on", "off", "tts", "status"),
    category="Configuration",
)
def _voice(agent: AIAgent, arg: str) -> Reply:
    word = arg.strip().lower()
    if word == "status":
        return Reply("Voice mode: off. hermes has no speech-to-text or text-to-speech.")
    if word == "off":
        return Reply("Voice mode is off (it is never on: hermes has no voice mode).")
    if word in ("", "on", "tts"):
        return Reply(NO_VOICE, ok=False)
    return Reply(f"Unknown voice setting '{word}'. {VOICE_USAGE}", ok=False)


@command(
    "codex-runtime",
    "/codex-runtime [auto|codex_app_server]",
    "Show the model runtime (hermes has one: its OpenAI-compatible client).",
    ("auto", "codex_app_server"),
    aliases=("codex_runtime",),
    category="Configuration",
)
def _codex_runtime(agent: AIAgent, arg: str) -> Reply:
    word = arg.strip().lower()
    if word in ("", "auto", "off", "status"):
        return Reply(
            f"Runtime: auto. hermes sends every model's turns to {endpoint(agent)} through its "
            "OpenAI-compatible chat completions client; it has no other runtime."
        )
    if word in ("codex_app_server", "codex-app-server", "on"):
        return Reply(
            "hermes has no codex app-server runtime: every model runs through its "
            "OpenAI-compatible endpoint, so the runtime stays auto.",
            ok=False,
        )
    return Reply(f"Unknown runtime '{word}'. {RUNTIME_USAGE}", ok=False)
