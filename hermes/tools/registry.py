"""The tool registry: what a tool is, what it is handed, and how a call is dispatched.

``dispatch`` is the one door between the model and the tools. It never raises for a
model's mistake (unknown tool, bad JSON, wrong or missing arguments, a handler that
blew up): each comes back as a tool result starting with ``Error:`` that says what to
fix, so the model can correct itself on the next turn. Every result is scrubbed of
hermes's secrets (``hermes.redaction.redact``) on its way out.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.config import Config, defaults, hermes_home
from hermes.errors import HermesError
from hermes.redaction import redact
from hermes.text import well_formed
from hermes.tools._schema import ArgumentError, check_arguments, usage

if TYPE_CHECKING:
    from hermes.state.store import SessionDB
    from hermes.tools.processes.events import EventBus

log = logging.getLogger(__name__)

Approver = Callable[[str, str], bool]


class ToolError(HermesError):
    """A handler's way to say "this call cannot work, and here is why".

    ``dispatch`` turns it into ``Error: <message>`` without a traceback; any other
    exception is reported as a tool failure.
    """


@dataclass
class ToolContext:
    """Everything a tool handler may use besides its arguments.

    ``conversation_id`` is the conversation (root segment) id, not the current
    segment's: background-process events are addressed to it so they follow the
    conversation across compressions. ``approve`` asks the user to allow a dangerous
    command, ``(command, reason) -> bool``; it is None where nobody can be asked.
    ``source`` and ``user_id`` say whose turn this is (``telegram`` and the sender's id
    on a gateway): tools that read other conversations keep to that person's.
    ``event_bus`` hears the completion events of the background processes these tools
    start or look at (the owner's, a gateway's); without one they are spooled.
    ``yolo`` (`hermes --yolo`): a dangerous command runs without asking; a write to a
    protected file, a secret read and ``terminal.mode: allowlist`` are unchanged.
    ``cancel`` is set when the user stops the turn: a running command is killed then.
    """

    session_db: SessionDB | None = None
    session_id: str | None = None
    conversation_id: str | None = None
    hermes_home: Path = field(default_factory=hermes_home)
    config: Config | None = None
    cwd: Path = field(default_factory=Path.cwd)
    interactive: bool = False
    approve: Approver | None = None
    surface: str = "cli"
    source: str = "cli"
    user_id: str | None = None
    event_bus: EventBus | None = None
    yolo: bool = False
    cancel: threading.Event | None = None

    def __post_init__(self) -> None:
        self.hermes_home = Path(self.hermes_home)
        self.cwd = Path(self.cwd)
        if self.config is None:  # the caller owns config; a library caller gets defaults
            self.config = Config(values=defaults(), path=self.hermes_home / "config.yaml")

    def setting(self, key: str) -> Any:
        """A config value, e.g. ``ctx.setting("terminal.timeout")``."""
        assert self.config is not None  # set in __post_init__
        return self.config.get(key)

    def resolve_path(self, path: str) -> Path:
        """``path`` as given if absolute (``~`` expanded), else relative to ``cwd``."""
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self.cwd / candidate


Handler = Callable[[dict[str, Any], ToolContext], str]


def object_parameters(properties: dict[str, Any], *, required: Sequence[str]) -> dict[str, Any]:
    """A tool's parameters as JSON Schema: an object of ``properties`` (each a schema),
    ``required`` among them, and no other key."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Tool:
    """One tool: its name and schema for the model, its handler, the toolsets it is in."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    toolsets: tuple[str, ...] = ()

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool description of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolRegistry:
    """Tools by name, their schemas for the model, and a dispatcher that never raises."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"A tool named '{tool.name}' is already registered.")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def schemas(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI function-tool schemas for ``names`` (all tools when None), in order."""
        wanted = self.names() if names is None else list(names)
        unknown = [n for n in wanted if n not in self._tools]
        if unknown:
            raise KeyError(f"Unknown tool(s): {', '.join(unknown)}.")
        return [self._tools[n].schema() for n in wanted]

    def dispatch(
        self,
        name: str,
        arguments_json: str | dict[str, Any] | None,
        ctx: ToolContext,
        *,
        allowed: Iterable[str] | None = None,
    ) -> str:
        """Run tool ``name`` with the model's JSON arguments; always returns a string.

        ``allowed`` limits the call to the tools offered on this surface, so a model
        cannot reach a tool it was not given by guessing its name.
        """
        offered = self.names() if allowed is None else [n for n in allowed if n in self._tools]
        tool = self._tools.get(name)
        if tool is None or name not in offered:
            listed = ", ".join(offered) or "none"
            return f"Error: unknown tool '{name}'. Available tools: {listed}."
        args = _parse_arguments(tool, arguments_json)
        if isinstance(args, str):
            return args
        try:
            args = check_arguments(tool.parameters, args)
        except ArgumentError as exc:
            return f"Error: invalid arguments for '{name}': {exc}. Call it as {usage(name, tool.parameters)}."
        return _run(tool, args, ctx)


def _parse_arguments(
    tool: Tool, arguments_json: str | dict[str, Any] | None
) -> dict[str, Any] | str:
    """The arguments as a dict, or an ``Error:`` string saying how they are malformed."""
    if isinstance(arguments_json, dict):
        return arguments_json
    text = (arguments_json or "").strip()
    if not text:
        return {}  # some models send "" for a call without arguments
    try:
        args = json.loads(text)
    except json.JSONDecodeError as exc:
        return (
            f"Error: the arguments for '{tool.name}' are not valid JSON ({exc.msg} at "
            f"line {exc.lineno} column {exc.colno}). Send one JSON object, "
            f"e.g. for {usage(tool.name, tool.parameters)}."
        )
    if not isinstance(args, dict):
        return (
            f"Error: the arguments for '{tool.name}' must be a JSON object of named "
            f"arguments, not {type(args).__name__}. Call it as {usage(tool.name, tool.parameters)}."
        )
    return args


def _run(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str:
    """The handler's result, with every known secret scrubbed before the model or the
    store sees it (docs/design.md, invariant 13)."""
    return redact(well_formed(_result(tool, args, ctx)))


def _result(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str:
    try:
        result = tool.handler(args, ctx)
    except HermesError as exc:
        return f"Error: {exc}"
    except Exception as exc:
        log.exception("Tool %s failed", tool.name)
        return (
            f"Error: tool '{tool.name}' failed: {type(exc).__name__}: {exc}. "
            "Check the arguments; if they are right, try another approach."
        )
    return result if isinstance(result, str) else str(result)
