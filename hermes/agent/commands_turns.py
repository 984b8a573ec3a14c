"""The chat's commands about its turns: /status, /stop, /queue, /steer and /copy.

Their 0.19 meanings: ``/status`` shows the conversation, model, tokens and context,
whether a turn runs and what waits; ``/stop`` stops the background processes the chat
started (a messaging chat's ``/stop`` also stops the reply being written: the gateway
does that part); ``/queue`` runs a prompt after the running turn, without interrupting
it; ``/steer`` slips guidance into the running turn after its next tool call; ``/copy``
puts an answer on the terminal's clipboard (the terminal writes it, with OSC 52).

Where no turn runs, ``/queue`` and ``/steer`` send their prompt as an ordinary message
(``Reply.rerun``), as 0.19 does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes import redaction
from hermes.agent.commands import Reply, command
from hermes.state.history import EMPTY_ANSWER_NOTE
from hermes.state.lookup import token_usage
from hermes.text import one_line, plural
from hermes.tools.processes import background
from hermes.tools.processes.store import ProcessRecord

if TYPE_CHECKING:
    from hermes.agent import AIAgent
    from hermes.state.store import SessionDB


@dataclass(frozen=True)
class StatusFacts:
    """What /status tells beside what the store holds: the surface knows these."""

    model: str
    endpoint: str
    running: bool  # a turn of this conversation runs now
    queued: int = 0  # messages waiting for their turn
    context: tuple[int, int, int] | None = None  # tokens now, the window, the threshold
    processes: int = 0  # background processes of this chat still running


def status_text(db: SessionDB | None, session_id: str | None, facts: StatusFacts) -> str:
    """The /status report of the conversation whose live segment is ``session_id``."""
    lines = []
    if db is None or session_id is None or db.get_session(session_id) is None:
        lines.append("Conversation: new (nothing stored yet).")
    else:
        segments = db.get_segments(session_id)
        root, tip = segments[0], next(s for s in segments if s["id"] == session_id)
        title = f" '{root['title']}'" if root["title"] else " (untitled)"
        lines.append(
            f"Conversation: {tip['conversation_id']}{title}, segment {tip['segment_index']} "
            f"({session_id}), {plural(len(segments), 'segment')}."
        )
        usage = token_usage(db, session_id)
        seg, conv = usage["segment"], usage["conversation"]
        lines.append(
            f"Tokens: {seg['input']:,} input / {seg['output']:,} output in this segment; "
            f"{conv['input']:,} / {conv['output']:,} in the whole conversation."
        )
    lines.append(f"Model: {facts.model} at {redaction.mask_url(facts.endpoint)}.")
    if facts.context is not None:
        now, window, threshold = facts.context
        share = f" ({now * 100 // window}%)" if window else ""
        lines.append(
            f"Context: ~{now:,} of {window:,} tokens{share}, compresses at ~{threshold:,}."
        )
    turn = "a turn is running" if facts.running else "no turn is running"
    waiting = f"{plural(facts.queued, 'message')} queued" if facts.queued else "nothing queued"
    lines.append(f"Now: {turn}, {waiting}, {_processes(facts.processes)} running.")
    return "\n".join(lines)


def _processes(count: int) -> str:
    return f"{count} background process{'' if count == 1 else 'es'}"


def chat_processes(agent: AIAgent) -> tuple[set[str], int | None]:
    """Whose background processes this chat's /stop stops: its conversation's, and in
    the terminal every one this hermes process started (0.19 stops them all)."""
    ids = {i for i in (agent.binding.conversation_id, agent.session_id) if i}
    return ids, (os.getpid() if agent.source == "cli" else None)


@command("status", "/status", "Show the conversation, model, tokens, context and what runs.")
def _status(agent: AIAgent, arg: str) -> Reply:
    running = agent.steering.open
    compressor = agent.window.compressor
    if running:  # the turn's thread owns the history: the provider's last figure
        now = compressor.last_prompt_tokens or 0
    else:
        now = agent.window.estimate_tokens(agent.binding.load_history() if agent.session_id else [])
    ids, owner = chat_processes(agent)
    facts = StatusFacts(
        model=agent.model,
        endpoint=agent.base_url,
        running=running,
        context=(now, compressor.context_length, compressor.threshold_tokens),
        processes=len(background.running_of(agent.hermes_home, ids, owner_pid=owner)),
    )
    return Reply(status_text(agent.binding.session_db, agent.session_id, facts))


@command("stop", "/stop", "Stop the background processes this chat started.")
def _stop(agent: AIAgent, arg: str) -> Reply:
    ids, owner = chat_processes(agent)
    stopped = background.kill_running(
        agent.hermes_home, ids, owner_pid=owner, event_bus=agent.event_bus
    )
    return Reply(stopped_text(stopped), data={"stopped": [r.id for r in stopped]})


def stopped_text(stopped: list[ProcessRecord]) -> str:
    if not stopped:
        return "No background processes are running."
    names = "; ".join(f"{r.id} ({one_line(r.command, 40)})" for r in stopped)
    return f"Stopped {_processes(len(stopped))}: {names}."


QUEUE_USAGE = "Usage: /queue <prompt> (runs after the current turn, without interrupting it)."
STEER_USAGE = "Usage: /steer <prompt> (joins the running turn after its next tool call)."


@command(
    "queue",
    "/queue <prompt>",
    "Send a prompt after the current turn, without interrupting it.",
    aliases=("q",),
)
def _queue(agent: AIAgent, arg: str) -> Reply:
    if not arg:
        return Reply(QUEUE_USAGE, ok=False)
    # The surface runs it as the next turn: at once when none runs (the terminal reads
    # a line typed during a turn after that turn; the gateway puts it in the lane).
    return Reply(f"Queued: {one_line(arg, 70)}", rerun=arg)


@command("steer", "/steer <prompt>", "Guide the running turn after its next tool call.")
def _steer(agent: AIAgent, arg: str) -> Reply:
    if not arg:
        return Reply(STEER_USAGE, ok=False)
    if agent.steer(arg):
        return Reply(steered_text(arg))
    return Reply(f"No turn is running; sending it as a message: {one_line(arg, 60)}", rerun=arg)


def steered_text(prompt: str) -> str:
    return f"Steering the running turn after its next tool call: {one_line(prompt, 60)}"


COPY_USAGE = "Usage: /copy [number], where number counts the answers from the first (1)."


@command(
    "copy",
    "/copy [number]",
    "Copy the last answer (or answer number N) to the clipboard.",
    category="Info",
    cli_only=True,
)
def _copy(agent: AIAgent, arg: str) -> Reply:
    answers = _answers(agent)
    if not answers:
        return Reply("Nothing to copy yet: no answer in this conversation.", ok=False)
    if arg:
        try:
            number = int(arg)
        except ValueError:
            return Reply(COPY_USAGE, ok=False)
        if not 1 <= number <= len(answers):
            return Reply(f"There is no answer {arg}: use 1 to {len(answers)}.", ok=False)
    else:
        number = len(answers)
    text = answers[number - 1]
    return Reply(
        f"Copied answer {number} of {len(answers)} ({plural(len(text), 'character')}) to "
        f"the clipboard: {one_line(text, 50)}",
        data={"clipboard": text},
    )


def _answers(agent: AIAgent) -> list[str]:
    """The conversation's answers (assistant messages with text), oldest first; an
    undone turn's are not among them."""
    db, session_id = agent.binding.session_db, agent.session_id
    if db is None or session_id is None:
        return []
    return [
        m["content"]
        for m in db.iter_conversation_messages(session_id)
        if m["role"] == "assistant"
        and not m["undone"]
        and isinstance(m["content"], str)
        and m["content"].strip()
        and m["content"] != EMPTY_ANSWER_NOTE
    ]
