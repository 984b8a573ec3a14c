"""What an HTTP API caller asks of one turn besides its message: the client's own
instructions, the model, and the sampling parameters the OpenAI API documents.

``turn_options`` reads them from a chat-completions body, checked the way OpenAI checks
them: a wrong value is a ``RequestProblem`` (a 400 naming the parameter), a model the
gateway does not offer a 404 ``model_not_found``. The result is a plain dict, so it is
kept with the queued input and survives a restart; ``hermes.gateway.work`` applies it
to the agent for that turn only.

A client's own ``tools`` (OpenAI function schemas) are offered to the model beside
hermes's; a call to one ends the turn with ``finish_reason: "tool_calls"``, and the
client's next request brings the results (``role: "tool"`` messages) the turn goes on
from, as the OpenAI API documents.

The instructions are the text of the client's ``system`` and ``developer`` messages. They
reach the model after hermes's own system prompt (the turn's ``TurnOptions.instructions``),
unchanged from turn to turn while the client sends the same, so a provider's prompt
cache keeps hitting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hermes.gateway.http.model_parameters import ParameterProblem, model_parameters

INSTRUCTION_ROLES = ("system", "developer")
MAX_STOP_SEQUENCES = 4
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_TOOL_CHOICES = ("auto", "none", "required")


@dataclass
class RequestProblem(Exception):
    """A parameter the caller must fix: the HTTP status, sentence, parameter and code."""

    status: int
    message: str
    param: str | None = None
    code: str | None = None


# Names Hermes Agent's clients send for "the configured model" (hermes-webui sends
# "default" when its user picked none).
MODEL_ALIASES = ("hermes-agent", "default")


def offered_models(configured: Sequence[str], default: str) -> list[str]:
    """The models callers may ask for: ``gateway.models``, else the configured one."""
    models = [str(m) for m in configured if str(m).strip()]
    return models or [default]


def turn_options(body: dict[str, Any], models: Sequence[str], text_of: Any) -> dict[str, Any]:
    """The turn's options from a chat-completions ``body`` (``text_of`` reads a content)."""
    options: dict[str, Any] = {"model": _model(body.get("model"), models)}
    instructions = [
        text_of(m.get("content"))
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") in INSTRUCTION_ROLES
    ]
    if any(part.strip() for part in instructions):
        options["instructions"] = "\n\n".join(part for part in instructions if part.strip())
    options.update(sampling(body))
    options.update(client_tools(body))
    passed = model_parameters(body)
    if isinstance(passed, ParameterProblem):
        raise RequestProblem(400, passed.message, passed.param, passed.code)
    options.update(passed)
    return options


def client_tools(body: dict[str, Any]) -> dict[str, Any]:
    """``tools`` (the client's function schemas) and ``tool_choice``, checked."""
    tools, choice = body.get("tools"), body.get("tool_choice")
    found: dict[str, Any] = {}
    if tools is not None:
        if not isinstance(tools, list) or not all(_is_function_tool(t) for t in tools):
            raise _bad(
                "tools",
                '\'tools\' must be a list of {"type": "function", "function": {"name": ...,'
                " \"parameters\": {...}}} with names of letters, digits, '_' or '-'.",
            )
        if tools:
            found["client_tools"] = tools
    if choice is not None:
        named = isinstance(choice, dict) and _TOOL_NAME.match(
            str((choice.get("function") or {}).get("name", ""))
        )
        if choice not in _TOOL_CHOICES and not named:
            raise _bad(
                "tool_choice",
                '\'tool_choice\' must be "auto", "none", "required" or '
                '{"type": "function", "function": {"name": ...}}.',
            )
        if not found.get("client_tools") and choice != "none":
            raise _bad("tool_choice", "'tool_choice' needs 'tools' to choose from.")
        found["tool_choice"] = choice
    return found


def _is_function_tool(tool: Any) -> bool:
    function = tool.get("function") if isinstance(tool, dict) else None
    return (
        isinstance(tool, dict)
        and tool.get("type") == "function"
        and isinstance(function, dict)
        and bool(_TOOL_NAME.match(str(function.get("name", ""))))
        and isinstance(function.get("parameters", {}), dict)
    )


def message_options(body: dict[str, Any], models: Sequence[str]) -> dict[str, Any]:
    """The options of a sessions-API chat body: ``model`` (default: the first offered),
    ``instructions`` and the sampling parameters."""
    options: dict[str, Any] = {"model": _model(body.get("model") or models[0], models)}
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise _bad("instructions", "'instructions' must be a string.")
    if instructions and instructions.strip():
        options["instructions"] = instructions
    options.update(sampling(body))
    return options


def sampling(body: dict[str, Any]) -> dict[str, Any]:
    """``temperature``, ``max_tokens`` (or ``max_completion_tokens``), ``stop``, ``user``."""
    found: dict[str, Any] = {}
    temperature = body.get("temperature")
    if temperature is not None:
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            raise _bad("temperature", "'temperature' must be a number from 0 to 2.")
        if not 0 <= temperature <= 2:
            raise _bad("temperature", f"'temperature' is {temperature}; it must be from 0 to 2.")
        found["temperature"] = float(temperature)
    for name in ("max_completion_tokens", "max_tokens"):
        limit = body.get(name)
        if limit is None:
            continue
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise _bad(name, f"'{name}' must be a whole number of at least 1.")
        found["max_tokens"] = limit
        break
    stop = body.get("stop")
    if stop is not None:
        words = [stop] if isinstance(stop, str) else stop
        if not (
            isinstance(words, list)
            and 0 < len(words) <= MAX_STOP_SEQUENCES
            and all(isinstance(w, str) and w for w in words)
        ):
            raise _bad("stop", "'stop' must be a string or a list of 1 to 4 non-empty strings.")
        found["stop"] = words
    user = body.get("user")
    if user is not None:
        if not isinstance(user, str):
            raise _bad("user", "'user' must be a string.")
        found["user"] = user
    return found


def answering_model(asked: Any, models: Sequence[str]) -> str:
    """The model an answer names: the one asked for, or the configured one for an alias
    ("default"), as the turn resolved it."""
    if isinstance(asked, str) and asked in models:
        return asked
    return models[0]


def _model(asked: Any, models: Sequence[str]) -> str:
    if asked is None or asked == "":
        raise _bad("model", "'model' is required: one of " + ", ".join(models) + ".")
    if not isinstance(asked, str):
        raise _bad("model", "'model' must be a string.")
    if asked in MODEL_ALIASES and asked not in models:
        return models[0]
    if asked not in models:
        raise RequestProblem(
            404,
            f"The model '{asked}' does not exist or you do not have access to it. "
            f"This gateway offers: {', '.join(models)} (GET /v1/models).",
            "model",
            "model_not_found",
        )
    return asked


def _bad(param: str, message: str) -> RequestProblem:
    return RequestProblem(400, message, param, "invalid_value")
