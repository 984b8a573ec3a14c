"""Slash commands in chat: the CLI's commands (``hermes.agent.commands``) with the same
meaning, plus what only a gateway has.

Four kinds:

* *immediate* (``/new``, ``/stop``, ``/help``) act at once, even while a turn runs:
  ``/stop`` interrupts it, ``/new`` points the chat at a fresh conversation (replies
  already queued still answer in the old one), ``/help`` lists what works here;
* *conversation* commands (``/compress``, ``/retry``, ``/undo``, ``/title``, ``/model``,
  ``/usage``, ``/tools``) act on the conversation, so they wait their turn in its lane
  like a message and run in the worker thread with the conversation's agent, through
  the CLI's own ``dispatch``;
* the gateway's *own* commands (``/background``, ``/agents``, ``/commands``,
  ``/restart``, ``/topic``, ``/sethome``) act on the chat at once (``own_commands.py``):
  a background task, what the chat has running, the list of commands, the gateway
  restarted, a Telegram topic's conversation, the platform's home channel;
* the terminal's ``/sessions``, ``/resume`` and ``/quit`` (they would show or switch to
  other people's conversations), ``/cron`` (scheduled jobs are the operator's, shared by
  every chat, so a chat does not manage them) and unknown commands get a one-line answer.

A line is a command when the CLI says so (``/etc/hosts is empty`` is a message);
Telegram's ``/cmd@BotName`` form is understood.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes.agent import AIAgent
from hermes.agent import commands as chat_commands

IMMEDIATE = ("new", "stop", "help")
CONVERSATION = ("compress", "retry", "undo", "title", "model", "usage", "tools")
OWN = ("background", "agents", "commands", "restart", "topic", "sethome")
TERMINAL_ONLY = ("sessions", "resume", "quit")
CRON_REFUSAL = (
    "Scheduled jobs are managed from the terminal (hermes cron, or /cron in hermes chat) "
    "or the API (/api/jobs), not from a chat."
)
ALIASES = {"reset": "new", "start": "help", "clear": "new"}

_GATEWAY_HELP = {
    "new": ("/new", "Start a new conversation in this chat (the current one stays saved)."),
    "stop": ("/stop", "Stop the reply being written; queued messages are still answered."),
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


def help_text(*, chat: bool = True) -> str:
    """What /help answers: in a messaging chat, or (``chat`` False) over the HTTP API,
    which has no chat for the gateway's own commands to act on."""
    return "\n".join(["Commands:", *help_lines(chat=chat)])


def help_lines(*, chat: bool = True) -> list[str]:
    """'/usage — what it does' for each command that works in a messaging chat."""
    lines = []
    for name in (*IMMEDIATE[:2], *CONVERSATION, *(OWN if chat else ()), "help"):
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
