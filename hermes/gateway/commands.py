"""Slash commands in chat: the CLI's commands (``hermes.agent.commands``) with the same
meaning, plus what only a gateway has.

Four kinds:

* *immediate* (``/new``, ``/stop``, ``/help``, ``/status``, ``/steer``) act at once,
  even while a turn runs: ``/stop`` interrupts it and stops the conversation's
  background processes, ``/new`` points the chat at a fresh conversation (replies
  already queued still answer in the old one), ``/help`` lists what works here,
  ``/status`` tells what the conversation is and what runs, ``/steer`` hands the running
  turn guidance it takes after its next tool call (with no turn running, it is a message);
* *as a message* (``/queue``): its prompt goes to the conversation's lane as an ordinary
  message, after what runs and waits there, interrupting nothing;
* *conversation* commands (``/compress``, ``/retry``, ``/undo``, ``/title``, ``/model``,
  ``/usage``, the settings ``/reasoning``, ``/fast``, ``/personality``, ``/voice``,
  ``/codex-runtime``, and ``/reload-mcp``, ``/debug``, ``/update``, ``/version``) act on
  the conversation or its agent, so they wait their turn in its lane like a message and
  run in the worker thread with the conversation's agent, through the CLI's own
  ``dispatch`` (the agent kept for the conversation keeps the settings);
* the terminal's ``/sessions``, ``/resume``, ``/quit`` and ``/verbose`` (the first would
  show or switch to other people's conversations; a chat shows no tool lines), ``/cron``
  (scheduled jobs are the operator's, shared by every chat, so a chat does not manage
  them), ``/tools``, ``/skills`` and ``/platforms`` (they change or show the operator's
  profile) and unknown commands get a one-line answer;
* the gateway's *own* commands (``/background``, ``/agents``, ``/commands``,
  ``/restart``, ``/topic``, ``/sethome``) act on the chat at once (``own_commands.py``):
  a background task, what the chat has running, the list of commands, the gateway
  restarted, a Telegram topic's conversation, the platform's home channel.

A line is a command when the CLI says so (``/etc/hosts is empty`` is a message);
Telegram's ``/cmd@BotName`` form is understood.
"""

from __future__ import annotations

from dataclasses import dataclass

import hermes.gateway.platforms_command  # noqa: F401 - /platforms, refused here in words
from hermes.agent import AIAgent
from hermes.agent import commands as chat_commands
from hermes.agent.commands_turns import QUEUE_USAGE, STEER_USAGE, steered_text

IMMEDIATE = ("new", "stop", "help", "status", "steer")
AS_MESSAGE = ("queue",)
CONVERSATION: tuple[str, ...] = (
    "compress", "retry", "undo", "title", "model", "usage",
    # hermes/agent/commands_settings.py: this conversation's agent keeps what they set
    "reasoning", "fast", "personality", "voice", "codex-runtime",
    # the install's and the MCP servers', which 0.19 offers in a messaging chat too
    "reload-mcp", "debug", "update", "version",
)  # fmt: skip
OWN = ("background", "agents", "commands", "restart", "topic", "sethome")
TERMINAL_ONLY = ("sessions", "resume", "quit")
CRON_REFUSAL = (
    "Scheduled jobs are managed from the terminal (hermes cron, or /cron in hermes chat) "
    "or the API (/api/jobs), not from a chat."
)
ALIASES = {"reset": "new", "start": "help", "clear": "new"}

_GATEWAY_HELP = {
    "new": ("/new", "Start a new conversation in this chat (the current one stays saved)."),
    "stop": (
        "/stop",
        "Stop the reply being written and this chat's background processes; queued "
        "messages are still answered.",
    ),
    "help": ("/help", "Show this list."),
}


@dataclass(frozen=True)
class Command:
    name: str
    argument: str = ""

    @property
    def immediate(self) -> bool:
        return self.name in IMMEDIATE

    @property
    def conversational(self) -> bool:
        return self.name in CONVERSATION

    @property
    def as_message(self) -> bool:
        return self.name in AS_MESSAGE

    @property
    def own(self) -> bool:
        return self.name in OWN

    @property
    def line(self) -> str:
        return f"/{self.name} {self.argument}".rstrip()


def parse(text: str) -> Command | None:
    """The command ``text`` is, or None for an ordinary message."""
    if not chat_commands.is_command(text):
        return None
    name, argument = chat_commands.parse(text)
    name = name.split("@", 1)[0]  # /new@MyBot in Telegram groups
    name = ALIASES.get(name) or chat_commands.ALIASES.get(name, name)
    return Command(name=name, argument=argument)


_PROMPT_USAGE = {"queue": QUEUE_USAGE, "steer": STEER_USAGE}


def steered(prompt: str) -> str:
    """What /steer answers when the running turn took ``prompt``."""
    return steered_text(prompt)


def missing_prompt(command: Command) -> str | None:
    """The usage line of /queue or /steer sent without its prompt; None otherwise."""
    return None if command.argument else _PROMPT_USAGE.get(command.name)


def help_text(*, chat: bool = True) -> str:
    """What /help answers: in a messaging chat, or (``chat`` False) over the HTTP API,
    which has no chat for the gateway's own commands to act on."""
    return "\n".join(["Commands:", *help_lines(chat=chat)])


def help_lines(*, chat: bool = True) -> list[str]:
    """'/usage — what it does' for each command that works in a messaging chat."""
    lines = []
    for name in (
        "new",
        "stop",
        "status",
        "queue",
        "steer",
        *CONVERSATION,
        *(OWN if chat else ()),
        "help",
    ):
        usage, text = _GATEWAY_HELP.get(name) or (
            chat_commands.COMMANDS[name].usage,
            chat_commands.COMMANDS[name].help,
        )
        lines.append(f"{usage} — {text}")
    return lines


def is_built_in(name: str) -> bool:
    """A command of hermes's chat (the gateway runs it, or refuses it in words)."""
    return name in chat_commands.COMMANDS or name in IMMEDIATE or name in ALIASES


def refusal(command: Command) -> str:
    """The answer to a command the gateway does not run."""
    if command.name == "cron":
        return CRON_REFUSAL
    if command.own:  # asked over the HTTP API: there is no chat to act on
        return f"/{command.name} works in a messaging chat (Telegram, Discord, Slack) only."
    spec = chat_commands.COMMANDS.get(command.name)
    if command.name in TERMINAL_ONLY or (spec is not None and spec.cli_only):
        return (
            f"/{command.name} works in the terminal chat only. Type /help to see the commands here."
        )
    if command.name in chat_commands.COMMANDS:
        return f"/{command.name} is not available here. Type /help to see the commands."
    return chat_commands.unknown_message(command.name)


@dataclass(frozen=True)
class CommandOutcome:
    """What a conversation command did: its text, or a message to run as a turn."""

    text: str
    rerun: str | None = None


def run(command: Command, agent: object) -> CommandOutcome:
    """Run a conversation command with the conversation's agent (worker thread). The
    chat's commands work on hermes's own agent; another ``ConversationAgent`` (a
    factory's own) answers turns only."""
    if not command.conversational:
        return CommandOutcome(refusal(command))
    if not isinstance(agent, AIAgent):
        return CommandOutcome(f"/{command.name} is not available with this gateway's agent.")
    reply = chat_commands.dispatch(agent, command.line)
    return CommandOutcome(reply.text, rerun=reply.rerun)
