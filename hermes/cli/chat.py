"""`hermes chat`: the interactive chat, or one question with `-q`.

This module decides what to run (which endpoint, key, model and conversation) and
runs one-shot questions; the interactive loop lives in ``_repl`` and the slash
commands in ``hermes.agent.commands``. The agent, rich and prompt_toolkit are imported only here,
inside the command, so `hermes --help` never pays for them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from hermes.cli._env import find_api_key, missing_key_message, needs_key
from hermes.cli._options import LATEST, continue_option, resume_option
from hermes.cli._store import opened_store, resolve_conversation
from hermes.config import Config, ensure_home, load_config
from hermes.errors import HermesError
from hermes.redaction import install_log_scrubber
from hermes.text import retry_note, visible

if TYPE_CHECKING:
    from hermes.agent import AIAgent
    from hermes.state import SessionDB

INTERRUPTED_EXIT = 130  # what a shell reports for a program stopped by Ctrl-C
CHAT_LOG_HANDLER = "hermes-chat"  # names our log handler so a second setup adds none

# Keys of the turn result that `--json` prints (the transcript itself is left out:
# `hermes sessions export` is the way to get it).
YOLO_HELP = (
    "Run dangerous commands without asking, for this run only (writes to protected files "
    "still ask, secrets stay unreadable, terminal.mode allowlist still applies)."
)
YOLO_NOTE = "--yolo: dangerous commands run without asking in this run."

JSON_KEYS = ("session_id", "iterations", "prompt_tokens", "completion_tokens", "compressions")


@click.command()
@click.option(
    "-q",
    "--query",
    metavar="TEXT",
    help="Ask once and print only the answer ('-' reads the question from stdin).",
)
@click.option("--json", "as_json", is_flag=True, help="With -q: print the result as JSON.")
@click.option(
    "-s",
    "--system",
    metavar="TEXT",
    help="Extra instructions for the model in this run, after hermes's own "
    "system prompt (not stored with the conversation).",
)
@click.option("-m", "--model", help="The model for this run (default: model.default).")
@click.option("--base-url", help="The endpoint for this run (default: model.base_url).")
@continue_option
@resume_option
@click.option(
    "--read-only",
    "read_only",
    is_flag=True,
    help="Show a conversation (-c, -r or the latest) without writing; sends nothing.",
)
@click.option("--yolo", is_flag=True, help=YOLO_HELP)
def chat(
    query: str | None,
    as_json: bool,
    system: str | None,
    model: str | None,
    base_url: str | None,
    continue_: bool | str | None,
    resume: str | None,
    read_only: bool,
    yolo: bool = False,
) -> None:
    """Chat with the agent; with -q, answer one question and exit."""
    if as_json and query is None:
        raise click.UsageError("--json works with -q: hermes chat -q 'question' --json")
    if continue_ and resume:
        raise click.UsageError("Use either -c/--continue or --resume, not both.")
    if isinstance(continue_, str) and continue_ != LATEST:
        resume, continue_ = continue_, None  # `-c TITLE` resumes by title, as `hermes -c TITLE`
    continue_ = bool(continue_)
    if read_only:
        _browse(resume, sending=query is not None)
        return
    config = load_config()
    _refuse_a_read_only_store(config)
    _log_to_file()
    from hermes.tools.guards.sandbox import say_once

    say_once(config.get("terminal.sandbox"))  # no sandbox: said once, at start
    if base_url is None and query is None and _no_model_yet(config.get("model.base_url")):
        config = _first_run_setup()
    base_url = base_url or config.get("model.base_url")
    api_key = _require_key(base_url)
    piped = None
    if query is None and not sys.stdin.isatty():
        query, piped = "-", sys.stdin.read()  # `echo question | hermes chat` asks once, like -q -
        if not piped.strip() and (resume or continue_):
            _resume_without_terminal(continue_, resume)
            return
    text = _read_query(query, piped) if query is not None else None
    with opened_store(read_only=False, create=True) as db:
        tip = _pick_conversation(db, continue_, resume)
        agent = _make_agent(
            config,
            db,
            api_key=api_key,
            base_url=base_url,
            model=model,
            interactive=text is None,
            system=system,
            yolo=yolo,
        )
        if yolo:
            click.echo(YOLO_NOTE, err=True)
        try:
            if tip is not None:
                from hermes.agent.commands import bind_conversation

                bind_conversation(agent, tip, model=model)
            if text is not None:
                try:
                    _ask_once(agent, text, as_json)
                finally:
                    from hermes.agent import plugin_hooks

                    plugin_hooks.finalize(agent, "shutdown")  # as 0.19's single query
            else:
                from hermes.cli._repl import run_repl

                run_repl(agent)
        finally:
            agent.client.close()


def _log_to_file() -> None:
    """Warnings and info go to $HERMES_HOME/logs/chat.log, not over the chat screen.

    The person learns what matters from the chat itself (a failed compression names
    its model there); the log keeps the detail. HERMES_DEBUG=1 also prints it.
    """
    import logging
    from logging.handlers import RotatingFileHandler

    root = logging.getLogger()
    if any(h.get_name() == CHAT_LOG_HANDLER for h in root.handlers):
        return
    try:
        folder = ensure_home() / "logs"
        folder.mkdir(mode=0o700, exist_ok=True)
        path = folder / "chat.log"
        if not path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        handler: logging.Handler = RotatingFileHandler(
            path, maxBytes=2_000_000, backupCount=2, encoding="utf-8"
        )
    except (OSError, HermesError):
        # A read-only HERMES_HOME: warnings go to stderr rather than nowhere.
        handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.set_name(CHAT_LOG_HANDLER)
    install_log_scrubber()
    root.addHandler(handler)
    debug = bool(os.environ.get("HERMES_DEBUG"))
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
    logging.getLogger("hermes").setLevel(logging.DEBUG if debug else logging.INFO)
    if debug and isinstance(handler, RotatingFileHandler):  # else stderr has it already
        root.addHandler(logging.StreamHandler())
    if isinstance(handler, RotatingFileHandler):
        from hermes.logs import log_to_files

        log_to_files(folder.parent)  # Hermes Agent's agent.log and errors.log, for dashboards


def _refuse_a_read_only_store(config: Config) -> None:
    """A store hermes cannot write: say so before any question is sent and lost."""
    from hermes.state.diagnose import read_only
    from hermes.state.location import store_location

    location = store_location(config=config)
    path = location.path
    found = read_only(path) if path is not None and path.exists() else None
    if found is not None:
        raise HermesError(
            f"{found.problem} `hermes chat` can only read it here: browse with "
            "`hermes chat --read-only` (-c or -r ID), or make the folder writable."
        )


def _browse(resume: str | None, *, sending: bool) -> None:
    """`chat --read-only`: show the conversation as `sessions show` does; send nothing."""
    from hermes.cli.sessions import _transcript, _write_stream

    with opened_store(read_only=True) as db:
        tip = resolve_conversation(db, resume) if resume else _latest(db)
        _write_stream(_transcript(db, db.get_segments(tip)), sys.stdout)
    if sending:
        raise HermesError("Not sent: `hermes chat --read-only` only shows conversations.")


def _latest(db: SessionDB) -> str:
    latest = db.list_conversations(limit=1, source="cli") or db.list_conversations(limit=1)
    if not latest:
        raise HermesError("No conversation to show yet.")
    return str(latest[0]["tip_id"])


def _require_key(base_url: str) -> str | None:
    """The API key; without one, the default hosted endpoint is refused before any
    request (any other is tried keyless, as `hermes models` does)."""
    key, _ = find_api_key()
    if key is None and needs_key(base_url):
        raise HermesError(missing_key_message(base_url))
    return key


def _no_model_yet(base_url: str) -> bool:
    """No key, and an endpoint that needs one: the person has not set hermes up."""
    return find_api_key()[0] is None and needs_key(base_url)


def _first_run_setup() -> Config:
    """On a terminal, a first `hermes` walks through `hermes setup`, then chats."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return load_config()  # _require_key then says what to do, in one sentence
    from hermes.cli.config_cmd import setup

    click.echo(
        "hermes has no model to talk to yet. Give it an OpenAI-compatible endpoint: "
        "OpenRouter or OpenAI with an API key, or a local one (Ollama, llama.cpp, vLLM: "
        "e.g. http://localhost:11434/v1) that needs no key."
    )
    click.get_current_context().invoke(setup)
    return load_config()


def _resume_without_terminal(continue_: bool, resume: str | None) -> None:
    """`hermes --resume ID` with no terminal and nothing piped in: as in Hermes Agent 0.19,
    the conversation is found and left as it was, and the command succeeds (exit 0). A
    conversation that does not exist is still an error."""
    with opened_store(read_only=True) as db:
        tip = _pick_conversation(db, continue_, resume)
    if tip is not None:
        click.echo(
            f"Nothing was asked (no terminal, and nothing on stdin): conversation {tip} "
            "is unchanged. Resume it in a terminal, or pipe a question in.",
            err=True,
        )


def _read_query(query: str, piped: str | None = None) -> str:
    if query == "-":
        text = sys.stdin.read() if piped is None else piped
    else:
        text = query
    if not text.strip():
        raise click.UsageError("Nothing to ask: the question is empty.")
    return text.strip("\n") if query == "-" else text


def _pick_conversation(db: SessionDB, continue_: bool, resume: str | None) -> str | None:
    if resume:
        return resolve_conversation(db, resume)
    if not continue_:
        return None
    latest = db.list_conversations(limit=1, source="cli")
    if not latest:
        raise HermesError("No conversation to continue yet; start one with `hermes chat`.")
    return str(latest[0]["tip_id"])


def _make_agent(
    config: Config,
    db: SessionDB,
    *,
    api_key: str | None,
    base_url: str,
    model: str | None,
    interactive: bool,
    system: str | None = None,
    yolo: bool = False,
    source: str = "cli",
) -> AIAgent:
    from hermes.agent import AIAgent

    return AIAgent(
        api_key=api_key,
        base_url=base_url,
        model=model,
        config=config,
        session_db=db,
        source=source,
        quiet_mode=not interactive,
        interactive=interactive,
        ephemeral_system_prompt=system,
        yolo=yolo,
    )


# -- one question -----------------------------------------------------------------------


def _ask_once(agent: AIAgent, text: str, as_json: bool) -> None:
    """Run one turn; stdout gets only the answer (or the JSON result)."""
    from hermes.cli._worker import run_in_worker

    streamed, write = _stream_to_terminal() if not as_json else (None, None)
    agent.connect(
        stream_callback=write,
        event_callback=_progress_to_stderr if sys.stderr.isatty() else _waiting_to_stderr,
        on_retry=_retry_to_stderr,
    )
    outcome = run_in_worker(
        lambda: agent.run(text),
        interrupt=agent.interrupt,
        on_interrupt=lambda: click.echo("\nInterrupting…", err=True),
    )
    result = outcome.value
    answer = result.answer if result is not None else None
    interrupted = outcome.interrupted or (result is not None and result.interrupted)
    if as_json:
        from hermes.compat.agent import one_shot_document

        payload = one_shot_document(
            answer,
            **{k: getattr(result, k, None) for k in JSON_KEYS},
            conversation_id=agent.binding.conversation_id,
            model=agent.model,
            interrupted=interrupted,
        )
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    elif streamed is not None and streamed["any"]:
        click.echo("")  # end the streamed line
    elif answer:
        click.echo(answer)
    if interrupted:
        click.echo("Interrupted.", err=True)
        raise SystemExit(INTERRUPTED_EXIT)


def _stream_to_terminal() -> tuple[dict[str, bool] | None, Callable[[str], None] | None]:
    """On a terminal the answer streams as it comes (the state says whether any did,
    the callback writes it); into a pipe it is written once."""
    if not sys.stdout.isatty():
        return None, None
    state = {"any": False}

    def write(chunk: str) -> None:
        state["any"] = True
        sys.stdout.write(visible(chunk))
        sys.stdout.flush()

    return state, write


def _progress_to_stderr(kind: str, data: dict[str, Any]) -> None:
    if kind == "tool_start":
        click.echo(click.style(f"[running {data.get('name')}]", dim=True), err=True)
    elif kind == "compressed":
        click.echo(click.style("[context compressed]", dim=True), err=True)
    else:
        _waiting_to_stderr(kind, data)


def _waiting_to_stderr(kind: str, data: dict[str, Any]) -> None:
    """Said even into a pipe: otherwise a waiting chat looks hung."""
    if kind == "turn_waiting":
        message = "[waiting for another turn on this conversation… Ctrl-C stops]"
        click.echo(click.style(message, dim=True), err=True)
    elif kind == "tools_waiting":
        names = ", ".join(str(n) for n in data.get("servers") or ())
        click.echo(click.style(f"[starting MCP servers: {names}…]", dim=True), err=True)


def _retry_to_stderr(number: int, of: int, delay: float, why: str) -> None:
    click.echo(click.style(retry_note(number, of, delay, why), dim=True), err=True)
