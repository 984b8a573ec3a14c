"""The ``process`` tool: list, poll, read the log of, wait for and kill background processes.

The processes themselves are started by ``terminal`` with ``background=true``; their
lifecycle lives in ``background.py`` and their records in ``store.py``. Nothing
here consumes a completion event: reading a log as often as you like never repeats or
swallows one.
"""

from __future__ import annotations

import time
from typing import Any

from hermes.tools._output import tail_lines
from hermes.tools.processes import background
from hermes.tools.processes.store import RUNNING, ProcessRecord, ProcessStore
from hermes.tools.registry import Tool, ToolContext, ToolError, object_parameters

DEFAULT_LOG_LINES = 50
POLL_TAIL_LINES = 10
DEFAULT_WAIT_SECONDS = 60.0
LIST_LIMIT = 50

PARAMETERS = object_parameters(
    {
        "action": {
            "type": "string",
            "enum": ["list", "poll", "log", "wait", "kill"],
            "description": "list: all background processes; poll: status and recent output; "
            "log: the last `lines` lines of output; wait: block until it ends or `timeout` "
            "passes; kill: stop it and its children.",
        },
        "id": {
            "type": "string",
            "description": "The process id (proc_...) from terminal or list. Needed for every action but list.",
        },
        "lines": {
            "type": "integer",
            "minimum": 1,
            "description": f"For log: how many lines from the end (default {DEFAULT_LOG_LINES}).",
        },
        "timeout": {
            "type": "number",
            "minimum": 0,
            "description": f"For wait: the most seconds to wait (default {DEFAULT_WAIT_SECONDS:g}, at most terminal.timeout).",
        },
    },
    required=["action"],
)


def handle(args: dict[str, Any], ctx: ToolContext) -> str:
    action = args["action"]
    if action == "list":
        return _list(ctx)
    process_id = (args.get("id") or "").strip()
    if not process_id:
        raise ToolError(f"process action '{action}' needs the process 'id' (see action 'list').")
    record = background.load(ctx.hermes_home, process_id, ctx.event_bus)
    if record is None or not _visible(record, ctx):  # another's looks like no process at all
        raise ToolError(
            f"no background process with id '{process_id}'. Use action 'list' to see the ids."
        )
    limit = int(ctx.setting("terminal.output_limit"))
    if action == "poll":
        return describe(record) + _output_block(ctx, record.id, POLL_TAIL_LINES, limit)
    if action == "log":
        lines = int(args.get("lines") or DEFAULT_LOG_LINES)
        return describe(record) + _output_block(ctx, record.id, lines, limit)
    if action == "wait":
        ceiling = float(ctx.setting("terminal.timeout"))
        timeout = min(float(args.get("timeout", DEFAULT_WAIT_SECONDS)), ceiling)
        record = background.wait(ctx.hermes_home, record.id, timeout, ctx.event_bus) or record
        note = "" if record.finished else f"Still running after waiting {timeout:g}s.\n"
        return note + describe(record) + _output_block(ctx, record.id, POLL_TAIL_LINES, limit)
    record = background.kill(ctx.hermes_home, record.id, event_bus=ctx.event_bus) or record
    return describe(record) + _output_block(ctx, record.id, POLL_TAIL_LINES, limit)


def _visible(record: ProcessRecord, ctx: ToolContext) -> bool:
    """Whether ``ctx`` may see ``record``: the terminal chat (its user owns the machine)
    sees every process; a gateway or API conversation sees only its own."""
    if ctx.source == "cli":
        return True
    mine = {i for i in (ctx.conversation_id, ctx.session_id) if i}
    return bool(mine & {record.conversation_id, record.session_id})


def describe(record: ProcessRecord) -> str:
    """A few lines saying what the process is and how it stands."""
    lines = [f"Process {record.id}: {_status_phrase(record)}", f"Command: {record.command}"]
    if record.cwd:
        lines.append(f"Directory: {record.cwd}")
    lines.append(f"Started {_ago(record.started_at)}, pid {record.pid}.")
    return "\n".join(lines) + "\n"


def _status_phrase(record: ProcessRecord) -> str:
    if record.status == RUNNING:
        return f"running for {_duration(time.time() - record.started_at)}"
    ran = ""
    if record.finished_at:
        ran = f" after {_duration(record.finished_at - record.started_at)}"
    if record.status == "lost":
        return "lost: its pid is gone and no exit was recorded (the machine or hermes restarted, or it was killed from outside)"
    if record.status == "killed":
        return f"killed{ran} (exit code {record.exit_code})"
    return f"exited with code {record.exit_code}{ran}"


def _output_block(ctx: ToolContext, process_id: str, lines: int, limit: int) -> str:
    text = tail_lines(ProcessStore(ctx.hermes_home).log_path(process_id), lines, limit)
    if not text.strip():
        return "Output: (none yet)" if text == "" else "Output: (blank)"
    return f"Last {lines} lines of output:\n{text.rstrip()}"


def _list(ctx: ToolContext) -> str:
    records = [
        r for r in background.refresh_all(ctx.hermes_home, ctx.event_bus) if _visible(r, ctx)
    ]
    if not records:
        return "No background processes. Start one with terminal(command=..., background=true)."
    shown = records[-LIST_LIMIT:]
    rows = [f"{len(records)} background process(es), newest last:"]
    for record in shown:
        command = record.command if len(record.command) <= 80 else record.command[:77] + "..."
        rows.append(
            f"- {record.id}  {_status_phrase(record)}  (started {_ago(record.started_at)})  {command}"
        )
    if len(records) > len(shown):
        rows.insert(1, f"(showing the newest {len(shown)})")
    return "\n".join(rows)


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _ago(timestamp: float) -> str:
    return f"{_duration(time.time() - timestamp)} ago" if timestamp else "at an unknown time"


TOOL = Tool(
    name="process",
    description=(
        "Manage background processes started with terminal(background=true): list them, poll "
        "one's status and recent output, read its log, wait for it to finish, or kill it."
    ),
    parameters=PARAMETERS,
    handler=handle,
    toolsets=("terminal",),
)
