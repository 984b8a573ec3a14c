"""The chat-completions parameters beyond sampling that the OpenAI API documents.

Each one either reaches the model as given (checked the way OpenAI checks it, a wrong
value being a 400 naming it), or, where hermes cannot honour it, is refused with a 400
that names it and says why: a parameter is never dropped without a word. Parameters no
reference documents are left alone (clients send their own extras).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Check = Callable[[Any], bool]


def _number(low: float, high: float) -> Check:
    return lambda v: isinstance(v, int | float) and not isinstance(v, bool) and low <= v <= high


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _response_format(v: Any) -> bool:
    if not isinstance(v, dict) or v.get("type") not in ("text", "json_object", "json_schema"):
        return False
    schema = v.get("json_schema")
    return v["type"] != "json_schema" or (isinstance(schema, dict) and bool(schema.get("name")))


def _logit_bias(v: Any) -> bool:
    return isinstance(v, dict) and all(_number(-100, 100)(b) for b in v.values())


# name -> (check, what a right value is): sent to the model as given.
PASSED_ON: dict[str, tuple[Check, str]] = {
    "top_p": (_number(0, 1), "a number from 0 to 1"),
    "frequency_penalty": (_number(-2, 2), "a number from -2 to 2"),
    "presence_penalty": (_number(-2, 2), "a number from -2 to 2"),
    "seed": (_whole, "a whole number"),
    "logit_bias": (_logit_bias, "an object of token ids to numbers from -100 to 100"),
    "response_format": (
        _response_format,
        'an object like {"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}}'
        ' or {"type": "json_object"} or {"type": "text"}',
    ),
    "parallel_tool_calls": (lambda v: isinstance(v, bool), "true or false"),
    "reasoning_effort": (lambda v: isinstance(v, str) and bool(v), "a string such as 'low'"),
    "verbosity": (lambda v: isinstance(v, str) and bool(v), "a string such as 'low'"),
    "service_tier": (lambda v: isinstance(v, str) and bool(v), "a string such as 'auto'"),
    "prompt_cache_key": (lambda v: isinstance(v, str), "a string"),
    "safety_identifier": (lambda v: isinstance(v, str), "a string"),
    "metadata": (
        lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        "an object of strings",
    ),
    "prediction": (lambda v: isinstance(v, dict), "an object"),
    "web_search_options": (lambda v: isinstance(v, dict), "an object"),
}

# name -> (is the value one hermes cannot honour, why): a 400 naming it.
_REFUSED: dict[str, tuple[Check, str]] = {
    "n": (
        lambda v: v not in (None, 1),
        "'n' must be 1: a conversation stored on the server has one answer per turn.",
    ),
    "logprobs": (
        lambda v: v not in (None, False),
        "'logprobs' is not available: this gateway does not return token log probabilities.",
    ),
    "top_logprobs": (
        lambda v: v not in (None, 0),
        "'top_logprobs' is not available: this gateway does not return token log probabilities.",
    ),
    "audio": (lambda v: v is not None, "'audio' output is not available from this gateway."),
    "modalities": (
        lambda v: v is not None and v != ["text"],
        "'modalities' may only be [\"text\"]: this gateway answers with text.",
    ),
    "functions": (
        lambda v: v is not None,
        "'functions' is deprecated and not taken here: send them as 'tools'.",
    ),
    "function_call": (
        lambda v: v is not None,
        "'function_call' is deprecated and not taken here: use 'tool_choice'.",
    ),
}


@dataclass(frozen=True)
class ParameterProblem:
    """A parameter to fix: its name, the sentence, OpenAI's error code."""

    param: str
    message: str
    code: str


def model_parameters(body: dict[str, Any]) -> dict[str, Any] | ParameterProblem:
    """The documented parameters of ``body`` to send to the model, or the problem with
    the first one that has a wrong value or one hermes cannot honour."""
    for name, (refused, why) in _REFUSED.items():
        if refused(body.get(name)):
            return ParameterProblem(name, why, "unsupported_parameter")
    found = {}
    for name, (right, what) in PASSED_ON.items():
        value = body.get(name)
        if value is None:
            continue
        if not right(value):
            return ParameterProblem(name, f"'{name}' must be {what}.", "invalid_value")
        found[name] = value
    return found
