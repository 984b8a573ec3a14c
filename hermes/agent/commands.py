"""Slash commands of a chat, with no terminal in sight.

``dispatch(agent, line)`` runs one command against an ``AIAgent`` bound to a
``SessionDB`` and returns a ``Reply``: the text to show, and what the surface should
do next (leave, or run a message as a new turn for ``/retry``). Nothing here prints,
prompts or knows about rich or prompt_toolkit, so the gateway can offer the very same
commands with the very same meaning.

A line is a command when it starts with ``/`` and its first word holds no other
slash, so a message that starts with a path (``/etc/hosts is empty``) is a message.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes import redaction
from hermes.agent.binding import existing
from hermes.errors import HermesError
from hermes.state.lookup import rename_conversation, resolve_conversation, token_usage
from hermes.text import one_line, plural, table, when

if TYPE_CHECKING:
    from hermes.agent import AIAgent
    from hermes.state.store import SessionDB


@dataclass(frozen=True)
class Reply:
    """What a command did. ``ok`` False means it was refused or failed."""

    text: str = ""
    ok: bool = True
    exit: bool = False  # /quit: the surface should leave the chat
    rerun: str | None = None  # /retry: the surface should run this message as a new turn
    data: dict[str, Any] = field(default_factory=dict)


Handler = Callable[["AIAgent", str], Reply]


@dataclass(frozen=True)
class CommandSpec:
    """A slash command the chat knows: its name, usage line, help and handler.

    ``category`` is the /help group (Hermes Agent 0.19's: Session, Configuration,
    Tools & Skills, Info, Exit). A ``cli_only`` command means nothing in a messaging chat
    (the gateway answers it in words) unless the config key ``config_gate`` is true; a
    ``gateway_only`` one means nothing in the terminal (its handler is the gateway's).
    """

    name: str
    usage: str
    help: str
    handler: Handler
    subcommands: tuple[str, ...] = ()  # the words its first argument takes, for completion
    aliases: tuple[str, ...] = ()
    category: str = "Session"
    cli_only: bool = False
    gateway_only: bool = False
    config_gate: str | None = None  # a dotted config key that offers a cli_only one on the gateway


COMMANDS: dict[str, CommandSpec] = {}
ALIASES: dict[str, str] = {}  # another name -> the command's own name

# Words people type out of habit elsewhere, for the suggestion only.
_HABITS = {
    "q": "quit",
    "bye": "quit",
    "clear": "new",
    "rename": "title",
    "history": "sessions",
    "continue": "resume",
    "cost": "usage",
    "tokens": "usage",
    "summarize": "compress",
    "compact": "compress",
    "?": "help",
}


def command(
    name: str,
    usage: str,
    help: str,
    subcommands: tuple[str, ...] = (),
    *,
    aliases: tuple[str, ...] = (),
    category: str = "Session",
    cli_only: bool = False,
    gateway_only: bool = False,
    config_gate: str | None = None,
) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        for other in (name, *aliases):
            taken = COMMANDS.get(ALIASES.get(other, other))
            if taken is not None and taken.name != name:
                raise ValueError(f"/{other} is already the command /{taken.name}")
        COMMANDS[name] = CommandSpec(
            name, usage, help, handler, subcommands, aliases, category, cli_only,
            gateway_only, config_gate,
        )  # fmt: skip
        ALIASES.update(dict.fromkeys(aliases, name))
        return handler

    return register


def lookup(name: str) -> CommandSpec | None:
    """The command ``name`` (its own name or an alias, any case) names; None if none."""
    name = name.lower()
    return COMMANDS.get(ALIASES.get(name, name))


def is_command(line: str) -> bool:
    text = line.strip()
    if not text.startswith("/"):
        return False
    word = text.split(maxsplit=1)[0]
    return "/" not in word[1:]


def parse(line: str) -> tuple[str, str]:
    """('name', 'the rest') of a command line."""
    parts = line.strip()[1:].split(maxsplit=1)
    return (parts[0].lower() if parts else ""), (parts[1].strip() if len(parts) > 1 else "")


def dispatch(agent: AIAgent, line: str) -> Reply:
    """Run the slash command ``line``; a HermesError becomes a failed Reply."""
    name, arg = parse(line)
    found = lookup(name)
    if found is None:
        plugins = getattr(agent, "plugins", None)
        if plugins is not None and plugins.command(name) is not None:
            return Reply(plugins.run_command(name, arg) or "")
        return Reply(unknown_message(name), ok=False)
    if found.gateway_only:
        return Reply(
            f"/{found.name} works in a messaging chat (the gateway) only. Type /help to see "
            "the commands here.",
            ok=False,
        )
    try:
        return found.handler(agent, arg)
    except HermesError as exc:
        return Reply(str(exc), ok=False)


def runs_on_the_gateway(agent: AIAgent, arg: str) -> Reply:
    """The handler of a gateway-only command: the gateway runs its own, and ``dispatch``
    refuses the command in the terminal before any handler runs."""
    return Reply("This command works in a messaging chat only.", ok=False)


def unknown_message(name: str) -> str:
    if not name:
        return "Type a command after the slash; /help lists them."
    guess = _HABITS.get(name) or next(iter(difflib.get_close_matches(name, COMMANDS, 1, 0.5)), None)
    hint = f" Did you mean /{guess}?" if guess else ""
    return f"Unknown command /{name}.{hint} Type /help to see the commands."


# -- binding the agent to a conversation ----------------------------------------------


def start_new(agent: AIAgent, title: str | None = None) -> None:
    """Point the agent at a conversation that starts with its next message."""
    agent.start_new_conversation(title)


# End reasons that close a conversation for good: a reset of a messaging chat (the
# user's /reset, or the operator's idle/daily policy), which Hermes Agent 0.19's own
# recovery never reopens either. Any other end (a terminal closed: cli_close, user_exit;
# a program left the chat: agent_close, resumed_other, new_session, ...) is taken back by
# an explicit resume, as 0.19's --resume takes it back.
CLOSED_FOR_GOOD = frozenset(
    {"session_reset", "idle", "daily", "suspended", "resume_pending_expired"}
)


def bind_conversation(agent: AIAgent, tip: str, *, model: str | None = None) -> dict[str, Any]:
    """Continue the conversation whose tip is ``tip``; restore the model it used.

    ``model`` (a ``--model`` given for this run) wins over the stored one and is
    recorded on the segment, so the next resume restores it. Returns the tip's row.
    """
    db = _store(agent)
    segment = existing(db.get_session(tip), tip)
    if segment["ended_at"] is not None and segment["end_reason"] != "compression":
        if segment["end_reason"] in CLOSED_FOR_GOOD:
            raise HermesError(
                f"Conversation {segment['conversation_id']} was ended ({segment['end_reason']}) "
                "and takes no more messages; start a new one."
            )
        db.reopen_session(tip)
        segment = existing(db.get_session(tip), tip)
    root = segment["conversation_id"]
    agent.continue_conversation(tip, root, existing(db.get_session(root), root)["title"])
    wanted = model or segment["model"]
    if wanted and (wanted != agent.model or wanted != segment["model"]):
        agent.set_model(wanted)
    return segment


def compression_line(agent: AIAgent, outcome: Any = None) -> str:
    """'segment N → N+1, tokens ~before → ~after' for the last rotation."""
    outcome = outcome or agent.window.last_compression
    if outcome is None:
        return "compressed"
    db = agent.binding.session_db
    parent = db.get_session(outcome.parent_id) if (db and outcome.parent_id) else None
    child = db.get_session(outcome.child_id) if (db and outcome.child_id) else None
    where = (
        f"segment {parent['segment_index']} → {child['segment_index']}"
        if parent and child
        else "compressed"
    )
    if outcome.tokens_before is None or outcome.tokens_after is None:
        return where
    return f"{where}, tokens ~{outcome.tokens_before:,} → ~{outcome.tokens_after:,}"


# -- the commands -----------------------------------------------------------------------


@command(
    "new",
    "/new [title]",
    "Start a new conversation (the current one stays saved).",
    aliases=("reset",),
)
def _new(agent: AIAgent, arg: str) -> Reply:
    previous = agent.binding.conversation_id
    start_new(agent, arg or None)
    titled = f" '{arg}'" if arg else ""
    back = f" Resume the previous one with /resume {previous}." if previous else ""
    return Reply(f"Started a new conversation{titled}.{back}", data={"previous": previous})


@command("compress", "/compress [focus]", "Compress the context now, optionally around a topic.")
def _compress(agent: AIAgent, arg: str) -> Reply:
    if agent.session_id is None or not agent.binding.load_history():
        return Reply("Nothing to compress yet: the conversation is empty.", ok=False)
    agent.client.clear_interrupt()  # a Ctrl-C that stopped the last turn must not stop this
    outcome = agent.compress_now(arg or None)
    data = {"outcome": outcome}
    if outcome.rotated:
        return Reply(f"Compressed: {compression_line(agent, outcome)}.{_grew(outcome)}", data=data)
    if outcome.holder:
        return Reply(
            f"Not compressed: another process holds the compression lease ({outcome.holder}); "
            "try again when it has finished.",
            ok=False,
            data=data,
        )
    reason = (outcome.reason or "").rstrip(".")
    if reason.startswith("nothing to compress"):
        return Reply("Nothing to compress yet: the conversation is too short.", ok=False, data=data)
    if outcome.tokens_after is not None:
        return Reply(
            f"Compressed in memory: ~{outcome.tokens_before:,} → ~{outcome.tokens_after:,} "
            f"tokens.{_grew(outcome)}",
            data=data,
        )
    return Reply(
        f"Not compressed: {reason or 'no reason given'}. The conversation is unchanged.",
        ok=False,
        data=data,
    )


def _grew(outcome: Any) -> str:
    """A note when the summary is no shorter than what it replaced (a short chat): the
    numbers alone read as if something was saved."""
    before, after = outcome.tokens_before, outcome.tokens_after
    if before is None or after is None or after < before:
        return ""
    return (
        " The summary is longer than this short conversation was, so nothing was saved; "
        "compressing pays off on long conversations."
    )


@command("retry", "/retry", "Undo the last turn and send its message again.")
def _retry(agent: AIAgent, arg: str) -> Reply:
    if agent.session_id is None:
        return Reply("Nothing to retry yet.", ok=False)
    undone = agent.undo(1)
    user = next((m for m in undone if m["role"] == "user"), None)
    if user is None or not user.get("content"):
        return Reply("Nothing to retry in this segment.", ok=False)
    return Reply(f"Retrying: {one_line(user['content'], 70)}", rerun=user["content"])


@command("undo", "/undo [N]", "Undo the last N turns (kept in the history, marked undone).")
def _undo(agent: AIAgent, arg: str) -> Reply:
    try:
        turns = int(arg) if arg else 1
    except ValueError:
        turns = 0
    if turns < 1:
        return Reply("Usage: /undo [N], where N is how many turns to undo (1 or more).", ok=False)
    if agent.session_id is None:
        return Reply("Nothing to undo yet.", ok=False)
    undone = agent.undo(turns)
    if not undone:
        return Reply("Nothing to undo in this segment.", ok=False)
    count = sum(1 for m in undone if m["role"] == "user")
    return Reply(
        f"Undid {plural(count, 'turn')} ({plural(len(undone), 'message')}); they stay in the "
        "history marked undone and will not come back on resume.",
        data={"undone": [m["id"] for m in undone]},
    )


@command("title", "/title TEXT", "Set the conversation's title (shows it without TEXT).")
def _title(agent: AIAgent, arg: str) -> Reply:
    if not arg:
        current = _root(agent)["title"] if agent.session_id else agent.binding.title
        return Reply(
            f"Title: {current}"
            if current
            else "This conversation has no title yet; set one with /title TEXT."
        )
    if agent.session_id is None:
        agent.set_title(arg)
        return Reply(f"The new conversation will be titled '{arg}'.")
    rename_conversation(_store(agent), agent.session_id, arg)
    agent.set_title(arg)
    return Reply(f"Title set to '{arg}'.")


def endpoint(agent: AIAgent) -> str:
    """The model endpoint as a chat may see it: a password in its URL (a proxy's basic
    auth) masked, since a messaging chat's user is not the operator."""
    return redaction.mask_url(agent.base_url)


@command(
    "model",
    "/model NAME",
    "Switch the model for this conversation (shows it without NAME).",
    category="Configuration",
)
def _model(agent: AIAgent, arg: str) -> Reply:
    if not arg:
        return Reply(f"Model: {agent.model} at {endpoint(agent)}")
    offered = _offered_models(agent)
    if offered and arg not in offered:
        close = difflib.get_close_matches(arg, offered, n=3)
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        return Reply(
            f"The endpoint {endpoint(agent)} does not offer '{arg}'; the model stays "
            f"{agent.model}.{hint} (`hermes models` lists what it offers.)",
            ok=False,
        )
    agent.set_model(arg)
    unchecked = "" if offered else " (the endpoint lists no models, so it was not checked)"
    return Reply(f"Model set to {arg}; a resume of this conversation will use it too.{unchecked}")


def _offered_models(agent: AIAgent) -> list[str]:
    """What the endpoint lists; empty when it cannot say (then nothing is refused)."""
    lister = getattr(agent.client, "list_models", None)  # a scripted model has none
    if lister is None:
        return []
    try:
        return [str(name) for name in lister()]
    except Exception:  # an endpoint without a listing, or unreachable: do not block
        return []


# /sessions and /resume would show or switch to other people's conversations in a
# messaging chat, so they are the terminal's.
@command("sessions", "/sessions", "List recent conversations.", cli_only=True)
def _sessions(agent: AIAgent, arg: str) -> Reply:
    rows = _store(agent).list_conversations(limit=10)
    if not rows:
        return Reply("No saved conversations yet.")
    body = [
        (
            "*" if r["conversation_id"] == agent.binding.conversation_id else "",
            r["conversation_id"],
            one_line(r["title"] or "(untitled)", 36),
            r["message_count"],
            when(r["last_active_at"]),
            r["source"],
        )
        for r in rows
    ]
    text = table(("", "ID", "TITLE", "MESSAGES", "LAST ACTIVE", "SOURCE"), body)
    return Reply(text + "\nResume one with /resume ID or /resume TITLE.", data={"rows": rows})


@command(
    "resume",
    "/resume ID",
    "Continue a saved conversation (by any segment id or title).",
    cli_only=True,
)
def _resume(agent: AIAgent, arg: str) -> Reply:
    if not arg:
        return Reply("Usage: /resume ID or /resume TITLE (see /sessions).", ok=False)
    db = _store(agent)
    tip = resolve_conversation(db, arg)
    segment = bind_conversation(agent, tip)
    messages = list(db.iter_conversation_messages(tip))
    undone = sum(1 for m in messages if m["undone"])
    count = len(messages) - undone
    title = f"'{agent.binding.title}'" if agent.binding.title else segment["conversation_id"]
    apart = f" (and {undone} undone)" if undone else ""
    return Reply(
        f"Resumed {title}: {plural(count, 'message')}{apart}, segment {segment['segment_index']}, "
        f"model {agent.model}.",
        data={"session_id": tip},
    )


@command(
    "usage", "/usage", "Tokens used by this segment and by the whole conversation.", category="Info"
)
def _usage(agent: AIAgent, arg: str) -> Reply:
    if agent.session_id is None:
        return Reply("No tokens used yet: the conversation is empty.")
    db, session_id = agent.binding.bound()
    usage = token_usage(db, session_id)
    seg, conv = usage["segment"], usage["conversation"]
    segments = len(db.get_segments(session_id))
    context = agent.window.estimate_tokens(agent.binding.load_history())
    compressor = agent.window.compressor
    return Reply(
        f"This segment: {seg['input']:,} input / {seg['output']:,} output tokens.\n"
        f"Whole conversation ({plural(segments, 'segment')}): {conv['input']:,} input / "
        f"{conv['output']:,} output tokens.\n"
        f"Context now: ~{context:,} of {compressor.context_length:,} tokens "
        f"(compresses at ~{compressor.threshold_tokens:,}).",
        data=usage,
    )


@command("help", "/help", "Show available commands", category="Info")
def _help(agent: AIAgent, arg: str) -> Reply:
    rows = [(_short_usage(c), _with_aliases(c)) for c in COMMANDS.values() if not c.gateway_only]
    keys = "Enter sends, Esc Enter adds a line, Ctrl-C stops a turn, Ctrl-D leaves."
    return Reply(table(("COMMAND", ""), rows) + "\n" + keys)


@command(
    "quit",
    "/quit",
    "Leave the chat (the conversation stays saved).",
    aliases=("exit",),
    category="Exit",
    cli_only=True,
)
def _quit(agent: AIAgent, arg: str) -> Reply:
    return Reply(exit=True)


def _short_usage(spec: CommandSpec) -> str:
    """The usage column of /help: a long usage (0.19's full syntax) as '/name [...]', so
    one command does not widen every row; the command itself answers with the whole."""
    return spec.usage if len(spec.usage) <= 20 else f"/{spec.name} [...]"


def _with_aliases(spec: CommandSpec) -> str:
    """The help text and the command's other names ('(also /reset)'); a spelling with
    '_' for '-' (/reload_mcp) is no news."""
    others = [a for a in spec.aliases if a.replace("_", "-") != spec.name]
    if not others:
        return spec.help
    return f"{spec.help} (also {', '.join('/' + a for a in others)})"


def _root(agent: AIAgent) -> dict[str, Any]:
    db, session_id = agent.binding.bound()
    return db.get_segments(session_id)[0]


def _store(agent: AIAgent) -> SessionDB:
    """The agent's store, for commands that read or write saved conversations."""
    if agent.binding.session_db is None:
        raise HermesError("This command needs the state store, and this agent has none.")
    return agent.binding.session_db


# The chat's other commands live in rooms of their own and register themselves on import;
# importing them here gives every surface the whole set. (At the end: they import this.)
# Loaded by name, as a registry loads its rooms: they import this module, which is the
# way the dependency points (tests/test_import_cycles.py).
COMMAND_ROOMS = (
    "hermes.agent.commands_tools",  # /tools, /skills, /reload-mcp, /debug, /update, /version
    "hermes.agent.commands_turns",  # /status, /stop, /queue, /steer, /copy
    "hermes.agent.commands_settings",  # /reasoning, /fast, /personality, /verbose, /voice, ...
    "hermes.agent.commands_background",  # /background, /agents; the gateway's own commands
    "hermes.agent.commands_info",  # /whoami, /profile
)
for _room in COMMAND_ROOMS:
    importlib.import_module(_room)
