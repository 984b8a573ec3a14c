"""The chat's commands for work beside it: ``/background`` and ``/agents``.

``/background PROMPT`` answers a prompt in a conversation and agent of its own
(``hermes.agent.background``) while the chat goes on; ``/agents`` shows what this chat
has running: its own agent, its background tasks and the background processes its
tools started. In a messaging chat the gateway runs both itself (it reports a task's
answer as a message to the chat): what they show is written here, once, for both.

The gateway's own commands (``/commands``, ``/restart``, ``/topic``, ``/sethome``) are
registered here too, ``gateway_only``, so every surface knows them; the terminal refuses
them before their handler.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.agent.background import BackgroundTask, background_agent, elapsed, tasks_of
from hermes.agent.commands import Reply, command, runs_on_the_gateway
from hermes.text import one_line

if TYPE_CHECKING:
    from hermes.agent import AIAgent
    from hermes.tools.processes.store import ProcessRecord

BACKGROUND_USAGE = (
    "Usage: /background PROMPT (for example: /background Summarize today's notes). "
    "It runs in a conversation of its own and its answer shows here when done."
)
SHOWN = 12  # rows of each list /agents shows, as 0.19


@command(
    "background",
    "/background <prompt>",
    "Answer a prompt apart, in a conversation of its own.",
    aliases=("bg", "btw"),
)
def _background(agent: AIAgent, arg: str) -> Reply:
    if not arg.strip():
        return Reply(BACKGROUND_USAGE, ok=False)
    if agent.binding.session_db is None:
        return Reply("/background needs the state store, and this chat has none.", ok=False)
    task = tasks_of(agent).start(arg.strip(), lambda: background_agent(agent))
    return Reply(started_text(task), data={"task_id": task.task_id})


@command("agents", "/agents", "Show what this chat has running.", aliases=("tasks",))
def _agents(agent: AIAgent, arg: str) -> Reply:
    conversation = agent.binding.conversation_id
    own = f"idle · model {agent.model}" + (f" · {conversation}" if conversation else "")
    processes = running_processes(agent.hermes_home, conversation)
    return Reply(agents_text(own, tasks_of(agent).running(), processes))


# The messaging chat's own commands: the gateway runs them (hermes.gateway.own_commands).
# Registered here so every surface lists them; the terminal refuses them before any
# handler runs.
GATEWAY_ONLY: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("commands", "/commands [page]", "List every command of this chat, a page at a time.",
     {"category": "Info"}),
    ("restart", "/restart",
     "Restart the gateway once the replies being written are done (its admins only).", {}),
    ("topic", "/topic [off|help|session-id]",
     "In a Telegram private chat: show this topic's conversation, or continue one of yours here.",
     {}),
    ("sethome", "/sethome",
     "Make this chat the home channel, where scheduled jobs answer (its admins only).",
     {"aliases": ("set-home",)}),
)  # fmt: skip
for _name, _usage, _help, _more in GATEWAY_ONLY:
    command(_name, _usage, _help, gateway_only=True, **_more)(runs_on_the_gateway)


def started_text(task: BackgroundTask) -> str:
    return (
        f'Background task #{task.number} started: "{task.preview}" (task {task.task_id}). '
        "Carry on chatting: its answer shows here when it is done."
    )


def agents_text(
    own: str, tasks: Sequence[BackgroundTask], processes: Sequence[ProcessRecord]
) -> str:
    """What /agents shows: this chat's agent, its running background tasks and processes."""
    lines = [f"This chat's agent: {own}", "", f"Background tasks running: {len(tasks)}"]
    lines += [
        f"  #{t.number} {t.task_id} · {elapsed(t.started_at)} · {t.preview}" for t in tasks[:SHOWN]
    ]
    if len(tasks) > SHOWN:
        lines.append(f"  ... and {len(tasks) - SHOWN} more")
    lines += ["", f"Background processes running: {len(processes)}"]
    for record in processes[:SHOWN]:
        command = one_line(record.command, 90)
        lines.append(f"  {record.id} · {elapsed(record.started_at)} · {command}")
    if len(processes) > SHOWN:
        lines.append(f"  ... and {len(processes) - SHOWN} more")
    return "\n".join(lines)


def running_processes(home: Path, conversation_id: str | None) -> list[ProcessRecord]:
    """The background processes the tools of this conversation started, still running."""
    from hermes.tools.processes.store import ProcessStore

    if conversation_id is None:
        return []
    return [
        r
        for r in ProcessStore(home).all()
        if not r.finished and r.conversation_id == conversation_id
    ]
