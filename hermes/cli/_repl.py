"""The interactive chat: prompt_toolkit for input, rich for output.

``run_repl`` reads a line (history in $HERMES_HOME, multi-line paste, Esc Enter for a
new line, slash-command completion), runs slash commands through ``chat_commands`` and
messages as turns in a worker thread (``_worker``), and renders each turn with
``TurnView``: a spinner while the model thinks or a tool runs (naming the tool), the
answer streamed as Markdown as it arrives, one dim line when the context is
compressed. Ctrl-C stops the running turn and keeps the chat; Ctrl-D leaves.

A background process of this conversation that finishes (``_process_notices``) is
heard before each prompt and, while the prompt waits, within a second: one line, then
a turn on its notice, as if typed; a half-typed line comes back in the next prompt.

A line typed while a turn runs (Enter ends it; it is not echoed, so the live area stays
whole) is read at once: ``/steer``, ``/status``, ``/stop`` and ``/queue`` act then
(``/steer`` reaches the running turn); any other line waits and runs after the turn,
in the order typed, as ``/queue``'s prompt does.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prompt_toolkit import PromptSession
from prompt_toolkit import prompt as ask_line
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings
from rich.console import Console, Group
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment, Segments
from rich.spinner import Spinner
from rich.text import Text

import hermes.cron.chat_command  # noqa: F401 - registers /cron with the chat's commands
import hermes.gateway.platforms_command  # noqa: F401 - registers /platforms
from hermes.agent import commands as chat_commands
from hermes.agent.background import tasks_of
from hermes.agent.preferences import personalities
from hermes.cli import _clipboard
from hermes.cli._process_notices import ProcessNotices, notice_line
from hermes.cli._worker import Approvals, run_in_worker, sigint_raises
from hermes.config import Config, ensure_home
from hermes.errors import HermesError
from hermes.state.context.message import is_summary_row
from hermes.text import one_line, plural, retry_note, visible
from hermes.tools.processes.events import spool_event

try:
    import termios
except ImportError:  # not a POSIX terminal
    termios = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from hermes.agent import AIAgent

HISTORY_FILE = "chat_history"
PROMPT = "› "
THINKING = "Thinking…"
IDLE_LOOK = 1.0  # seconds between looks for a finished background process, at the prompt
UNANSWERED = "Your last message was not answered (the model call failed); /retry sends it again."
# The commands a line typed during a turn runs at once; any other line waits for the turn.
DURING_A_TURN = frozenset({"steer", "status", "stop", "queue"})


class TurnView:
    """Renders one running turn; its callbacks are called from the worker thread.

    Finished Markdown blocks (up to a blank line outside a code fence) are printed
    once, for good; only the block being written is re-rendered as text arrives, in
    a live area under them that also holds the spinner. The live area is redrawn by
    rich's refresh thread from ``self._renderable``, which is only ever replaced
    whole, so that thread never waits on this object's lock.
    """

    def __init__(self, console: Console, agent: AIAgent) -> None:
        self.console = console
        self.agent = agent
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._renderable: Any = Text("")
        self._text = ""  # the current block's Markdown source
        self._status: str | None = None
        self._events = True
        self._notes: list[str] = []
        self._compression_pending = False
        self._last_tool: Any = None  # the last tool call's name (/verbose's "new" mode)
        self.streamed = False

    # -- lifecycle (main thread)

    def begin(self, status: str = THINKING, *, events: bool = True) -> None:
        with self._lock:
            self._text, self._status, self._events, self.streamed = "", status, events, False
            self._last_tool = None
            self._live = Live(
                console=self.console,
                get_renderable=lambda: self._renderable,
                transient=True,
                refresh_per_second=12,
            )
            self._rebuild()
            self._live.start()

    def end(self, final: str | None = None) -> None:
        with self._lock:
            if self._live is None:
                return
            self._flush_notes()
            self._commit(all_of_it=True)
            if not self.streamed and final:
                self._print(Markdown(final))
                self.streamed = True
            self._status = None
            self._renderable = Text("")
            self._live.stop()
            self._live = None

    def pause(self) -> None:
        """Stop the live area (to ask the person something); ``resume`` restarts it."""
        with self._lock:
            if self._live is not None:
                self._commit(all_of_it=True)
                self._renderable = Text("")
                self._live.stop()

    def resume(self) -> None:
        with self._lock:
            if self._live is not None:
                self._live.start()
                self._rebuild()

    def set_status(self, status: str | None) -> None:
        with self._lock:
            self._status = status
            self._rebuild()

    def note(self, text: str) -> None:
        """One dim line above the live area now (main thread, during a turn)."""
        with self._lock:
            self._note(text)
            self._flush_notes()
            self._rebuild()

    # -- callbacks (worker thread)

    def on_text(self, chunk: str) -> None:
        with self._lock:
            if self._live is None:
                return
            self._flush_notes()
            self._text += chunk
            self.streamed = True
            self._status = None
            self._commit()
            self._rebuild()

    def on_event(self, kind: str, data: dict[str, Any]) -> None:
        with self._lock:
            if self._live is None or not self._events:
                return
            self._flush_notes()
            if kind == "tool_start":
                self._commit(all_of_it=True)
                if line := self._tool_line(data):
                    self._note(line)
                self._flush_notes()
                self._status = f"Running {data.get('name')}…"
            elif kind == "tool_end":
                if self.agent.preferences.tool_progress == "log":
                    mark = "✗ failed" if data.get("error") else "✓"
                    self._note(f"  {mark} {data.get('name')} ({data.get('seconds', 0):.1f}s)")
                self._status = THINKING
            elif kind == "compressing":
                self._commit(all_of_it=True)
                self._status = "Compressing the context…"
            elif kind == "compressed":
                # The outcome's token counts are filled in after this event; the line
                # is written at the next event, chunk or the end of the turn.
                self._compression_pending = True
                self._status = THINKING
            elif kind == "compression_skipped":
                reason = str(data.get("reason") or "")
                if reason and not reason.startswith("nothing to compress"):
                    self._note(f"context not compressed: {reason}")
                self._status = THINKING
            elif kind == "turn_waiting":
                self._status = "Waiting for another turn on this conversation… (Ctrl-C stops)"
            elif kind == "tools_waiting":
                names = ", ".join(str(n) for n in data.get("servers") or ())
                self._status = f"Starting MCP servers ({names}): their tools are not known yet…"
            elif kind == "moved":
                self._note(f"this conversation moved on to segment {data.get('session_id')}")
            self._rebuild()

    def _tool_line(self, data: dict[str, Any]) -> str | None:
        """The line a tool call gets, as /verbose chose (off, new, all, verbose, log)."""
        mode, name = self.agent.preferences.tool_progress, data.get("name")
        last, self._last_tool = self._last_tool, name
        if mode == "off" or (mode == "new" and name == last):
            return None
        if mode == "verbose":
            return f"⚙ {name} {_arguments_whole(data.get('arguments'))}"
        return f"⚙ {name} {_arguments_preview(data.get('arguments'))}"

    # -- rendering (under the lock)

    def _note(self, text: str) -> None:
        self._notes.append(text)

    def _flush_notes(self) -> None:
        if self._compression_pending:
            self._compression_pending = False
            self._notes.append(chat_commands.compression_line(self.agent))
        for note in self._notes:
            self._print(Text(visible(note), style="dim"))
        self._notes.clear()

    def _commit(self, *, all_of_it: bool = False) -> None:
        """Print the finished blocks of the current text for good."""
        cut = len(self._text) if all_of_it else _last_block_end(self._text)
        if cut <= 0:
            return
        block, self._text = self._text[:cut], self._text[cut:]
        if block.strip():
            self._print(Markdown(visible(block.strip("\n"))))
            if not all_of_it:
                self._print(Text(""))

    def _print(self, renderable: Any) -> None:
        self.console.print(renderable)

    def _rebuild(self) -> None:
        parts: list[Any] = []
        if self._text.strip():
            parts.append(self._tail(Markdown(self._text)))
        if self._status:
            parts.append(Spinner("dots", Text(self._status, style="dim")))
        self._renderable = Group(*parts)
        if self._live is not None and self._live.is_started:
            self._live.refresh()

    def _tail(self, markdown: Markdown) -> Segments:
        """The last lines of the block that fit the screen (all of it is printed at the end)."""
        options = self.console.options
        lines = self.console.render_lines(markdown, options, pad=False)
        keep = max(3, self.console.size.height - 4)
        segments: list[Segment] = []
        for line in lines[-keep:]:
            segments.extend(line)
            segments.append(Segment.line())
        if segments:
            segments.pop()
        return Segments(segments)


def _last_block_end(text: str) -> int:
    """End of the last finished Markdown block: a blank line outside a code fence."""
    end, fenced, position = 0, False, 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not stripped and not fenced and line.endswith("\n") and position < len(text):
            end = position
    return end


def _arguments_whole(arguments: Any) -> str:
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return visible(str(arguments))
    return visible(json.dumps(parsed, ensure_ascii=False, indent=2)) if parsed else ""


REASONING_LINES = 10  # the reasoning shown after an answer, unless /reasoning full


def reasoning_recap(result: Any, *, whole: bool) -> str | None:
    """The model's reasoning in a turn (its answers' ``reasoning``), for /reasoning show."""
    texts = [
        str(m["reasoning"]).strip()
        for m in result.messages
        if m.get("role") == "assistant" and m.get("reasoning") and str(m["reasoning"]).strip()
    ]
    if not texts:
        return None
    lines = "\n\n".join(texts).splitlines()
    if whole or len(lines) <= REASONING_LINES:
        return "\n".join(lines)
    hidden = len(lines) - REASONING_LINES
    more = f"… {plural(hidden, 'more line')} (/reasoning full shows them)"
    return "\n".join([*lines[:REASONING_LINES], more])


def _arguments_preview(arguments: Any) -> str:
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return one_line(str(arguments), 80)
    if isinstance(parsed, dict) and len(parsed) == 1:
        (value,) = parsed.values()
        return one_line(str(value), 80)
    return one_line(json.dumps(parsed, ensure_ascii=False), 80) if parsed else ""


# -- input ------------------------------------------------------------------------------


class SlashCompleter(Completer):
    """Completes command names after a leading slash, then a command's first word
    (``/cron pa`` -> ``pause``; ``/personality`` takes the personalities ``config``
    offers)."""

    def __init__(self, config: Config | None = None) -> None:
        self.config = config

    def get_completions(self, document: Any, complete_event: Any) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/"):
            return
        if " " in text:
            name, _, typed = text[1:].partition(" ")
            found = chat_commands.lookup(name)
            if found is None or " " in typed:
                return
            words = found.subcommands
            if found.name == "personality" and self.config is not None:
                words = ("none", *personalities(self.config))
            for word in words:
                if word.startswith(typed.lower()) and word != typed.lower():
                    yield Completion(word, start_position=-len(typed))
            return
        for name, cmd in chat_commands.COMMANDS.items():
            if name.startswith(text[1:]) and not cmd.gateway_only:
                yield Completion("/" + name, start_position=-len(text), display_meta=cmd.help)


def _key_bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    return bindings


@contextmanager
def _quiet_terminal() -> Iterator[None]:
    """While a turn runs: no echo of typed keys or ^C, and Ctrl-C flushes no output.

    Echoed keys would land inside the live area and the kernel's flush on SIGINT
    would drop half an escape sequence; both scramble the screen. A line typed
    meanwhile is read when Enter ends it (``_typed_lines``); a half-typed one stays
    for the next prompt.
    """
    try:
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (AttributeError, OSError, ValueError, getattr(termios, "error", OSError)):
        yield
        return
    quiet = list(saved)
    # ISIG: Ctrl-C is a signal during the turn whatever mode the prompt left behind (a
    # prompt ended from its background task may leave the terminal raw, where ^C is a
    # character nobody reads and the turn could not be stopped).
    # ICANON: a line typed meanwhile reaches ``_typed_lines`` whole, once Enter ends it.
    quiet[3] = (quiet[3] & ~(termios.ECHO | termios.ECHOCTL)) | (
        termios.NOFLSH | termios.ISIG | termios.ICANON
    )
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def _typed_lines() -> list[str]:
    """The whole lines typed since the last look, without waiting (during a turn the
    terminal hands over a line once Enter ends it); none when stdin is no terminal."""
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd):
            return []
        lines = []
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:  # Ctrl-D on an empty line: nothing to run
                break
            lines.extend(chunk.decode("utf-8", errors="replace").splitlines())
        return lines
    except (OSError, ValueError):
        return []


def _history_path() -> Path:
    path = ensure_home() / HISTORY_FILE
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    return path


# -- the loop ---------------------------------------------------------------------------


class Repl:
    """One interactive chat over one agent."""

    def __init__(self, agent: AIAgent, console: Console | None = None) -> None:
        self.agent = agent
        self.console = console or Console(highlight=False)
        self.view = TurnView(self.console, agent)
        self.approvals = Approvals(self._ask_approval)
        self.notices = ProcessNotices(agent)
        self.background = tasks_of(agent)  # what /background started, to show when done
        self._heard = False  # the prompt was ended for a finished process
        self.waiting: deque[str] = deque()  # lines to run after the turn, in order
        agent.connect(
            stream_callback=self.view.on_text,
            event_callback=self.view.on_event,
            approve=self.approvals.approve,
            on_retry=self._on_retry,
        )
        self.session: PromptSession[str] = PromptSession(
            history=FileHistory(str(_history_path())),
            completer=SlashCompleter(agent.config),
            complete_while_typing=True,
            key_bindings=_key_bindings(),
            prompt_continuation=lambda width, line, soft: ".".rjust(width - 1) + " ",
        )

    def run(self) -> None:
        self._banner()
        typed = ""  # a half-typed line, given back after a process's notice
        while True:
            try:
                self._hear_processes()  # after each turn (and on resume)
                self._show_background()
                line = self._next_waiting() if self.waiting else self._prompt(typed)
            except KeyboardInterrupt:
                typed = ""
                continue  # Ctrl-C at the prompt clears the line
            except EOFError:
                break
            typed = ""
            if line is None:
                typed = self.session.default_buffer.text
                continue
            if not line.strip():
                continue
            try:
                if not self._handle(line):
                    break
            except KeyboardInterrupt:
                # A Ctrl-C that lands outside a running turn (a slash command, the
                # instant a turn ends) stops that step, never the chat.
                self.console.print(Text("Interrupted.", style="yellow"))
        self._await_background()
        self.agent.end_conversation("shutdown")
        self._goodbye()

    def _await_background(self) -> None:
        """Leaving while /background tasks run: wait for their answers (a started task
        was promised one), unless the person presses Ctrl-C, which stops them; each
        prompt is in its own stored conversation either way."""
        running = self.background.running()
        if not running:
            return
        many = (
            f"{len(running)} background tasks are" if len(running) > 1 else "A background task is"
        )
        # The notice inside too: a Ctrl-C may land while it is still being written. SIGINT
        # raises here whatever the parent left it (ignored, under a test runner's worker).
        try:
            with sigint_raises():
                self.console.print(
                    Text(f"{many} still running: waiting for the answer (Ctrl-C stops them "
                         "and quits).", style="yellow")
                )  # fmt: skip
                for task in running:
                    while not task.finished.wait(0.2):  # short waits: Ctrl-C is heard at once
                        pass
        except KeyboardInterrupt:
            self.background.stop(wait=2.0)
            for task in self.background.running():  # its model call did not end in time
                self.console.print(Text(task.report_left(), style="yellow"))
        self._show_background()

    def _prompt(self, typed: str) -> str | None:
        """The person's next line; None when a background process of this conversation
        finished while the prompt waited (what they had typed is in the buffer)."""
        self._heard = False
        line = self.session.prompt(PROMPT, default=typed, pre_run=self._listen_while_idle)
        return None if self._heard else line

    def _next_waiting(self) -> str:
        """A line typed during the last turn (or /queue's prompt), shown as if typed now."""
        line = self.waiting.popleft()
        self.console.print(Text(f"{PROMPT}{one_line(line, 200)}", style="dim"))
        return line

    def _during_turn(self, interrupted: bool) -> None:
        """Between the waits of a running turn (main thread): its approval questions,
        and the lines typed meanwhile."""
        self.approvals.service(interrupted)
        for line in _typed_lines():
            if line.strip():
                self._typed_during_turn(line)

    def _typed_during_turn(self, line: str) -> None:
        name = chat_commands.parse(line)[0] if chat_commands.is_command(line) else ""
        spec = chat_commands.lookup(name) if name else None
        if spec is None or spec.name not in DURING_A_TURN:
            self.waiting.append(line)
            self.view.note(f"after this turn: {one_line(line, 70)}")
            return
        reply = chat_commands.dispatch(self.agent, line)
        if reply.rerun:  # /queue's prompt, or a /steer the turn ended before taking
            self.waiting.append(reply.rerun)
        self.view.note(reply.text)

    def _listen_while_idle(self) -> None:
        # A task of the prompt's own event loop: it ends with the prompt, and ending
        # the prompt from there needs no hop between threads.
        self.session.app.create_background_task(self._listen())

    async def _listen(self) -> None:
        app = self.session.app
        while True:
            await asyncio.sleep(IDLE_LOOK)
            if self.background.has_unshown() or await asyncio.to_thread(self.notices.waiting):
                break
        if not app.is_done:  # the person's Enter, in this same loop, comes first
            self._heard = True
            app.exit(result="")

    def _hear_processes(self) -> None:
        """Each finished background process of this conversation: one line, then a turn
        on its notice, the text a gateway's turn gets (``CompletionEvent.describe``)."""
        while heard := self.notices.take():
            for done, event in enumerate(heard):
                try:
                    self.console.print(Text(notice_line(event), style="cyan"))
                    self.turn(event.describe())
                except BaseException:
                    for untold in heard[done + 1 :]:  # stopped (Ctrl-C): the rest waits
                        spool_event(self.agent.hermes_home, untold)
                    raise

    def _show_background(self) -> None:
        """The answers of the /background tasks finished since the prompt last waited."""
        for task in self.background.take_finished():
            self.console.print(Text(visible(task.report()), style="cyan"))
            self.console.print()

    def _handle(self, line: str) -> bool:
        """Run one line; False means leave the chat."""
        if chat_commands.is_command(line):
            return self.chat_commands(line)
        self.turn(line)
        return True

    def turn(self, text: str) -> None:
        self.view.begin()
        try:
            with _quiet_terminal():
                outcome = run_in_worker(
                    lambda: self.agent.run(text),
                    interrupt=self.agent.interrupt,
                    on_interrupt=lambda: self.view.set_status("Interrupting…"),
                    service=self._during_turn,
                )
        except HermesError as exc:
            self.view.end()
            self.console.print(Text(str(exc), style="red"))
            return
        except BaseException:
            self.view.end()
            raise
        result = outcome.value
        self.view.end(result.answer if result is not None else None)
        chosen = self.agent.preferences
        if result is not None and chosen.show_reasoning:
            recap = reasoning_recap(result, whole=chosen.reasoning_full)
            if recap:
                self.console.print(Text("reasoning:\n" + visible(recap), style="dim italic"))
        if outcome.interrupted or (result is not None and result.interrupted):
            self.console.print(Text("Interrupted.", style="yellow"))
        if result is not None and result.pending_steer:
            # The turn answered without another tool call: the steer waits its turn
            # after what was typed before it, as 0.19 queues it.
            self.waiting.append(result.pending_steer)
        self.console.print()

    def chat_commands(self, line: str) -> bool:
        """Run a slash command; False means leave the chat."""
        name, _ = chat_commands.parse(line)
        if name == "compress":  # calls the summary model: spinner, and Ctrl-C works
            self.view.begin("Compressing the context…", events=False)
            try:
                reply = run_in_worker(
                    lambda: chat_commands.dispatch(self.agent, line), interrupt=self.agent.interrupt
                ).value
            finally:
                self.view.end()
        else:
            reply = chat_commands.dispatch(self.agent, line)
        if reply is None:
            return True
        if "clipboard" in reply.data:  # /copy: the terminal takes it (OSC 52)
            _clipboard.copy(reply.data["clipboard"], self.console.file)
        if reply.text:
            self.console.print(Text(reply.text, style="" if reply.ok else "yellow"))
        if reply.exit:
            return False
        if reply.rerun:
            self.turn(reply.rerun)
        return True

    def _on_retry(self, number: int, of: int, delay: float, why: str) -> None:
        self.view.set_status(retry_note(number, of, delay, why))

    def _ask_approval(self, command: str, reason: str) -> bool:
        self.view.pause()
        try:
            # Shown, never interpreted: an escape sequence in a `#` comment must not
            # make the prompt show another command than the one `y` runs.
            self.console.print(
                Text(f"The agent wants to run a command that {visible(reason)}:", style="yellow")
            )
            self.console.print(Text(f"  {visible(command)}", style="bold"))
            answer = ask_line("Run it? [y/N] ")
            return answer.strip().lower() in ("y", "yes")
        finally:
            self.view.resume()

    def _banner(self) -> None:
        agent = self.agent
        if agent.session_id:
            title = agent.binding.title or agent.binding.conversation_id
            where = f"resumed {title}"
        else:
            where = "new conversation"
        keys = "/help for commands · Ctrl-C stops a turn · Ctrl-D leaves"
        self.console.print(Text(f"hermes · {agent.model} · {where} · {keys}", style="dim"))
        if agent.session_id:
            self._last_exchange()

    def _last_exchange(self) -> None:
        """On resume: the last question and answer, and whether the last one failed."""
        db, session_id = self.agent.binding.session_db, self.agent.session_id
        if db is None or session_id is None:  # an agent without a store has no past
            return
        # The live segment's rows, but a compaction summary (role 'user', asking nothing);
        # a segment holding only the summary shows the conversation's last exchange.
        rows = [m for m in db.get_messages(session_id) if not is_summary_row(m)]
        if not rows:
            rows = db.get_conversation_messages(session_id)
        messages = [m for m in rows if m["role"] in ("user", "assistant") and m.get("content")]
        if not messages:
            return
        last = messages[-1]
        if last["role"] == "user":
            self.console.print(Text(f"you: {one_line(last['content'], 100)}", style="dim"))
            self.console.print(Text(UNANSWERED, style="yellow"))
            return
        question = next((m for m in reversed(messages) if m["role"] == "user"), None)
        if question is not None:
            self.console.print(Text(f"you: {one_line(question['content'], 100)}", style="dim"))
        self.console.print(Text(f"hermes: {one_line(last['content'], 200)}", style="dim"))

    def _goodbye(self) -> None:
        if self.agent.binding.conversation_id:
            resume = f"hermes chat --resume {self.agent.binding.conversation_id}"
            self.console.print(Text(f"Saved. Continue with: {resume}", style="dim"))


def run_repl(agent: AIAgent) -> None:
    Repl(agent).run()
