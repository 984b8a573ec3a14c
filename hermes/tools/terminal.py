"""The ``terminal`` tool: run a shell command in the working directory.

A foreground command runs in the sandbox (``guards/sandbox.py``) to completion, or until its
timeout, the user's /stop or an output flood (then its whole process tree is killed),
and returns its exit code and output, capped at ``terminal.output_limit`` characters
with the head and tail kept. ``background=true`` starts it as a tracked
process instead (see ``processes/background.py``) and returns its id at once; it is ended after
``terminal.background_timeout`` seconds (or the model's shorter ``timeout``) unless the
user set that to 0 for processes that must keep running. Dangerous commands go through
``approval.authorize`` first, in both modes. A limit a command hits is said in one
sentence after its output (``_limit_note``).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from hermes.state.errors import StateError
from hermes.tools._output import read_capped
from hermes.tools.guards import approval, git_inert
from hermes.tools.guards.disk import remove_scratch
from hermes.tools.guards.launch import Launch, launch_for
from hermes.tools.guards.limits import ProcessGroupCap
from hermes.tools.processes import background, watch
from hermes.tools.registry import Tool, ToolContext, ToolError
from hermes.tools.workspaces import confined, workspace

log = logging.getLogger(__name__)

KILL_GRACE_SECONDS = 1.0
_POLL_SECONDS = 0.1
_TIMED_OUT, _STOPPED, _FLOODED = "timed out", "stopped", "flooded"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The shell command to run (bash)."},
        "timeout": {
            "type": "number",
            "minimum": 1,
            "description": "Seconds before a foreground command is killed (default: terminal.timeout "
            "from config); with background=true, seconds before the process is ended (default "
            "and most: terminal.background_timeout).",
        },
        "background": {
            "type": "boolean",
            "description": "Start it as a background process and return its id at once; "
            "use for servers, watchers and anything long. Manage it with the process tool.",
        },
        "notify_on_complete": {
            "type": "boolean",
            "description": "With background=true: send one message to this conversation when it ends. "
            "The right choice for anything with an end (tests, builds); not with watch_patterns.",
        },
        "watch_patterns": {
            "type": "array",
            "items": {"type": "string"},
            "description": "With background=true: strings to watch for in its output; a line holding "
            f"one sends a message to this conversation, at most one every {watch.WATCH_MIN_INTERVAL_SECONDS}s "
            f"per process (after {watch.WATCH_STRIKE_LIMIT} intervals in a row with dropped matches they "
            "are switched off and you get one message when it ends instead). Only for rare signals "
            "of long-lived processes, e.g. ['Application startup complete'] of a server; never "
            "with notify_on_complete (then they are ignored).",
        },
        "workdir": {
            "type": "string",
            "description": "Directory to run in, relative to the current one (default: the current one).",
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}


def handle(args: dict[str, Any], ctx: ToolContext) -> str:
    command = args["command"].strip()
    if not command:
        raise ToolError("the command is empty; pass the shell command to run in 'command'.")
    cwd = ctx.resolve_path(args["workdir"]) if args.get("workdir") else ctx.cwd
    if not cwd.is_dir():
        raise ToolError(f"the working directory {cwd} does not exist.")
    refusal = approval.authorize(command, ctx, cwd)
    if refusal:
        return refusal
    if args.get("background"):
        _room_for_background(ctx)
    how = launch_for(ctx, cwd)
    if args.get("background"):
        limit = background_limit(ctx, args.get("timeout"))
        notify = bool(args.get("notify_on_complete"))
        patterns = [p for p in args.get("watch_patterns") or [] if p.strip()]
        return _start_background(command, cwd, notify, patterns, ctx, how, limit)
    timeout = float(args.get("timeout") or ctx.setting("terminal.timeout"))
    limit = int(ctx.setting("terminal.output_limit"))
    result = run_command(
        command,
        cwd,
        timeout,
        limit,
        how,
        cancel=ctx.cancel,
        record=(ctx.hermes_home, _conversation_of(ctx)),
    )
    for flag in ("notify_on_complete", "watch_patterns"):
        if args.get(flag):
            result += (
                f"\n({flag} only applies with background=true; this command already finished.)"
            )
    return result


def run_command(
    command: str,
    cwd: Path,
    timeout: float,
    output_limit: int,
    how: Launch,
    cancel: threading.Event | None = None,
    record: tuple[Path, str | None] | None = None,
) -> str:
    """Run ``command`` in the foreground as ``how`` says; its exit code and output.

    It ends at its timeout, when ``cancel`` is set (the user's /stop) or when its output
    passes ``how.limits.max_output_bytes``; then its whole process tree is killed. With
    ``record`` (HERMES_HOME, conversation id) it is noted in the process store while it
    runs, so a later start ends it if this process dies first (``end_orphaned``).
    """
    noted = _note(command, record) if record else None
    if noted:
        how = replace(how, env={**how.env, background.RUN_MARKER: noted})
    try:
        return _run(command, cwd, timeout, output_limit, how, cancel, record, noted)
    finally:
        if record and noted:
            background.forget_foreground(record[0], noted)


def _run(
    command: str,
    cwd: Path,
    timeout: float,
    output_limit: int,
    how: Launch,
    cancel: threading.Event | None,
    record: tuple[Path, str | None] | None,
    noted: str | None,
) -> str:
    # Output goes to a file, not a pipe: a command that leaves a child running in the
    # background (`server &`) would hold a pipe open and hang us until that child ends.
    cap = ProcessGroupCap(how.limits.max_processes, how.limits.max_memory_bytes)
    git_before = git_inert.baseline(how.writable_roots)
    try:
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(
                how.argv(command),
                cwd=cwd,
                env=how.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so a timeout kills all of it
                preexec_fn=cap.preexec(how.limits),
            )
            try:
                if noted and record:
                    background.started(record[0], noted, proc.pid)
                code, ending = _wait(proc, out, timeout, how, cancel)
            except BaseException:
                _kill_group(proc)  # Ctrl-C in the REPL must not leave the command running
                raise
            if ending is not None:
                code = _kill_group(proc)
            out.seek(0)
            output = read_capped(out, output_limit)
            out_of_memory = cap.memory_exceeded()
    finally:
        cap.close()  # whatever it left behind (a setsid child) ends with it
        remove_scratch(how.scratch)
        disarmed = git_inert.disarm(git_before)
    return (
        _format(code, output, ending, timeout, how.limits.max_output_bytes)
        + _limit_note(code, output, ending, how, out_of_memory)
        + git_inert.note(disarmed)
    )


def _wait(
    proc: subprocess.Popen[bytes],
    out: IO[bytes],
    timeout: float,
    how: Launch,
    cancel: threading.Event | None,
) -> tuple[int, str | None]:
    """Wait for ``proc``: its exit code, and why it must be stopped (None: it ended;
    a disk limit's own sentence when one was passed)."""
    max_output = how.limits.max_output_bytes
    deadline = time.monotonic() + timeout
    while True:
        try:
            return proc.wait(
                timeout=min(_POLL_SECONDS, max(0.0, deadline - time.monotonic()))
            ), None
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= deadline:
            return -1, _TIMED_OUT
        if cancel is not None and cancel.is_set():
            return -1, _STOPPED
        if os.fstat(out.fileno()).st_size > max_output:
            return -1, _FLOODED
        passed = how.disk_watch.passed() if how.disk_watch else None
        if passed:
            return -1, passed


def _note(command: str, record: tuple[Path, str | None]) -> str | None:
    try:
        return background.record_foreground(record[0], command, record[1])
    except OSError as exc:  # the command still runs; only a crash would leave it behind
        log.warning("could not record the running command %r: %s", command, exc)
        return None


def _format(code: int, output: str, ending: str | None, timeout: float, max_output: int) -> str:
    body = output.rstrip("\n") if output.strip() else "(no output)"
    if ending == _TIMED_OUT:
        return (
            f"Timed out after {timeout:g}s; the command was killed (exit code {code}). "
            "For long-running commands use background=true and the process tool, or pass a "
            f"larger timeout.\nOutput before the timeout:\n{body}"
        )
    if ending == _STOPPED:
        return f"Stopped by the user; the command was killed (exit code {code}).\nOutput before the stop:\n{body}"
    if ending not in (None, _FLOODED):  # a disk limit, said in its own sentence
        return f"{ending} Exit code {code}.\nOutput before it was killed:\n{body}"
    if ending == _FLOODED:
        return (
            f"Killed: the command wrote more than {max_output // (1024 * 1024)} MB of output "
            f"(terminal.max_output_mb); exit code {code}. Write large output to a file and "
            f"read parts of it.\nOutput before it was killed:\n{body}"
        )
    return f"Exit code: {code}\n{body}"


_MB = 1024 * 1024
_SIGXFSZ_EXIT = 128 + signal.SIGXFSZ
_OUT_OF_MEMORY = ("MemoryError", "Cannot allocate memory", "out of memory", "bad_alloc")


def _limit_note(
    code: int, output: str, ending: str | None, how: Launch, out_of_memory: bool = False
) -> str:
    """One sentence naming the limit the command's output says it hit, or ""."""
    if ending is not None:
        return ""
    limits = how.limits
    if out_of_memory:
        return (
            f"\n[The command was stopped at its memory limit: its processes together may use "
            f"at most {limits.max_memory_bytes // _MB} MB (terminal.max_memory_mb).]"
        )
    if code == _SIGXFSZ_EXIT or "File size limit exceeded" in output:
        return (
            f"\n[A file reached {limits.max_file_bytes // _MB} MB, the most a command may write "
            "(terminal.max_file_mb).]"
        )
    if how.prefix and "No space left on device" in output:
        return (
            f"\n[The sandbox's /tmp holds at most {limits.max_file_bytes // _MB} MB "
            "(terminal.max_file_mb); write large files in the workspace.]"
        )
    if any(sign in output for sign in _OUT_OF_MEMORY):
        return (
            f"\n[The command ran out of memory: its processes may use at most "
            f"{limits.max_memory_bytes // _MB} MB (terminal.max_memory_mb).]"
        )
    return ""


def _kill_group(proc: subprocess.Popen[bytes]) -> int:
    for sig, patience in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return proc.wait(timeout=patience)
        except subprocess.TimeoutExpired:
            continue
    return proc.wait()


def background_limit(ctx: ToolContext, asked: float | None) -> float:
    """Seconds a background command may run: ``terminal.background_timeout`` (0: no limit,
    the user's choice for servers), or less when the model asked for less."""
    configured = float(ctx.setting("terminal.background_timeout"))
    if asked and (not configured or asked < configured):
        return float(asked)
    return configured


def _room_for_background(ctx: ToolContext) -> None:
    """Refuse a new background process when the user already runs
    ``terminal.max_background`` of them (a gateway user's, in their workspace)."""
    most = int(ctx.setting("terminal.max_background"))
    mine = Path(os.path.realpath(workspace(ctx))) if confined(ctx.source) else None
    running = [
        record
        for record in background.refresh_all(ctx.hermes_home, ctx.event_bus)
        if not record.finished and (mine is None or _inside(Path(record.cwd), mine))
    ]
    if len(running) >= most:
        raise ToolError(
            f"Refused: {len(running)} of your background processes are running, the most "
            'allowed (terminal.max_background); stop one with the process tool (action "kill") '
            "or wait for one to end."
        )


def _inside(path: Path, root: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == root or root in real.parents


def _start_background(
    command: str,
    cwd: Path,
    notify: bool,
    patterns: list[str],
    ctx: ToolContext,
    how: Launch,
    limit: float,
) -> str:
    # Both would tell the end twice (a match, then the exit): the end wins, as in 0.19.
    ignored = bool(notify and patterns)
    record = background.start(
        ctx.hermes_home,
        command,
        cwd,
        notify_on_complete=notify,
        conversation_id=_conversation_of(ctx),
        session_id=ctx.session_id,
        how=how,
        event_bus=ctx.event_bus,
        time_limit=limit,
        watch_patterns=[] if ignored else patterns,
    )
    lasts = f"it is ended after {limit:g} s" if limit else "it runs until killed"
    lines = [
        f"Started background process {record.id} (pid {record.pid}; {lasts}): {command}",
        f'Check it with process(action="poll", id="{record.id}"); read output with action "log"; '
        'stop it with action "kill".',
    ]
    if notify:
        lines.append("You will get one message in this conversation when it ends.")
    if ignored:
        lines.append("watch_patterns ignored: notify_on_complete already tells you when it ends.")
    elif patterns:
        lines.append(
            "You will get a message in this conversation when a line of its output holds one "
            f"of: {', '.join(repr(p) for p in patterns)}."
        )
    return "\n".join(lines)


def _conversation_of(ctx: ToolContext) -> str | None:
    """The conversation (root segment) id that completion events are addressed to."""
    if ctx.conversation_id or ctx.session_db is None or ctx.session_id is None:
        return ctx.conversation_id
    try:
        session = ctx.session_db.get_session(ctx.session_id) or {}
    except StateError as exc:  # the event then goes to the segment: say so, never hide it
        log.warning("could not read the conversation of %s: %s", ctx.session_id, exc)
        return None
    return session.get("conversation_id") or None


TOOL = Tool(
    name="terminal",
    description=(
        "Run a shell command (bash) in the current working directory and get its exit code "
        "and output. Long output keeps its start and end. Use background=true for servers or "
        "long jobs, then the process tool. Destructive commands need the user's approval."
    ),
    parameters=PARAMETERS,
    handler=handle,
    toolsets=("terminal",),
)
