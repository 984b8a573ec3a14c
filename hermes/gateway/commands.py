"""Slash commands in chat: ``/new``, ``/stop``, ``/compress``, ``/retry``, ``/undo``,
``/title``, ``/model``, ``/usage``, ``/help``.

Two kinds. *Immediate* commands act at once, even while a turn runs: ``/stop``
interrupts it, ``/new`` points the chat at a fresh conversation (replies already
queued still answer in the old one), ``/help`` lists the commands. The others act on
the conversation itself and so wait their turn in its lane like any message; their
handlers here run in the turn's worker thread with the conversation's agent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

IMMEDIATE = frozenset({"new", "reset", "stop", "help", "start"})

HELP: dict[str, str] = {
    "new": "start a new conversation in this chat",
    "stop": "stop the reply being written (queued messages still get answered)",
    "compress": "compress the conversation now; add a topic to focus the summary on",
    "retry": "answer your last message again",
    "undo": "forget the last turn (or the last N: /undo 2)",
    "title": "show or set the conversation's title",
    "model": "show or change the model of this conversation",
    "usage": "tokens used and how full the context is",
    "help": "this list",
}
ALIASES = {"reset": "new", "start": "help"}

# "/cmd", "/cmd args", and Telegram's "/cmd@BotName args".
_COMMAND = re.compile(r"^/([A-Za-z_]+)(?:@\S+)?(?:\s+(.*))?$", re.DOTALL)


@dataclass(frozen=True)
class Command:
    name: str
    argument: str = ""

    @property
    def immediate(self) -> bool:
        return self.name in IMMEDIATE


def parse(text: str) -> Command | None:
    """The command ``text`` is, or None for an ordinary message (unknown '/x' included)."""
    match = _COMMAND.match(text.strip())
    if match is None:
        return None
    name = match.group(1).lower()
    name = ALIASES.get(name, name)
    if name not in HELP:
        return None
    return Command(name=name, argument=(match.group(2) or "").strip())


def help_text() -> str:
    lines = ["Commands:"]
    lines.extend(f"/{name} — {text}" for name, text in HELP.items())
    return "\n".join(lines)


# -- conversation commands (worker thread, with the conversation's agent) --------------

Handler = Callable[[Any, str], str]


def run(command: Command, agent: Any) -> str:
    """Run a conversation command with ``agent``; returns the reply for the chat."""
    handler = _HANDLERS.get(command.name)
    if handler is None:
        return help_text()
    return handler(agent, command.argument)


def _compress(agent: Any, focus: str) -> str:
    outcome = agent.compress_now(focus or None)
    if outcome.rotated:
        return (
            f"Compressed the conversation: ~{outcome.tokens_before or 0} -> "
            f"~{outcome.tokens_after or 0} tokens."
        )
    return f"Nothing was compressed: {outcome.reason or 'nothing to compress yet'}."


def _retry(agent: Any, _: str) -> str:
    undone = agent.undo(1)
    asked = next((m for m in undone if m.get("role") == "user"), None)
    if asked is None or not isinstance(asked.get("content"), str):
        return "There is nothing to retry yet."
    result = agent.run_conversation(asked["content"])
    return result.get("final_response") or "(no answer)"


def _undo(agent: Any, argument: str) -> str:
    turns = int(argument) if argument.isdigit() and int(argument) > 0 else 1
    undone = agent.undo(turns)
    count = sum(1 for m in undone if m.get("role") == "user")
    if not count:
        return "There is nothing to undo."
    return f"Forgot the last {count} turn{'s' if count != 1 else ''}."


def _title(agent: Any, title: str) -> str:
    db, root = agent.session_db, agent.conversation_id or agent.session_id
    if not title:
        segment = db.get_session(root) if root else None
        current = segment.get("title") if segment else None
        return f"Title: {current}" if current else "This conversation has no title yet."
    db.set_title(root, title[:200])
    return f"Title set: {title[:200]}"


def _model(agent: Any, model: str) -> str:
    if not model:
        return f"Model: {agent.model}"
    agent.set_model(model)
    return f"Model set to {model} for this conversation."


def _usage(agent: Any, _: str) -> str:
    db = agent.session_db
    segments = db.get_segments(agent.session_id)
    spent_in = sum(int(s.get("input_tokens") or 0) for s in segments)
    spent_out = sum(int(s.get("output_tokens") or 0) for s in segments)
    context = agent.estimate_tokens(agent.load_history())
    window = agent.context_compressor.context_length
    share = 100 * context / window if window else 0
    return (
        f"Tokens used: {spent_in} in, {spent_out} out, over {len(segments)} segment(s).\n"
        f"Context now: ~{context} of {window} tokens ({share:.0f}%); model {agent.model}."
    )


_HANDLERS: dict[str, Handler] = {
    "compress": _compress,
    "retry": _retry,
    "undo": _undo,
    "title": _title,
    "model": _model,
    "usage": _usage,
}
