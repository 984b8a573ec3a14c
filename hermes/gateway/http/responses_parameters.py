"""The Responses API's parameters in their chat-completions form.

``responses_parameters`` turns a ``POST /v1/responses`` body's tools, tool choice, text
format, reasoning effort and the parameters both APIs share into the chat-completions
keys they mean, so ``request_options`` checks them and the agent sends them alike. What
hermes cannot honour is a 400 naming the parameter.
"""

from __future__ import annotations

from typing import Any

from hermes.gateway.http.request_options import RequestProblem

# Parameters both APIs name the same way: sent on as given (checked by request_options).
_SHARED = (
    "top_p",
    "parallel_tool_calls",
    "metadata",
    "prompt_cache_key",
    "safety_identifier",
    "service_tier",
)
_REFUSED = {
    "background": "'background' responses are not available: send the request and wait.",
    "conversation": "'conversation' objects are not kept here: continue with "
    "'previous_response_id', or send the whole 'input' list.",
    "prompt": "Stored prompt templates ('prompt') are not available here: send 'instructions'.",
}


def responses_parameters(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions options a Responses ``body`` asks for; raises
    ``RequestProblem`` for one hermes cannot honour."""
    for name, why in _REFUSED.items():
        if body.get(name) not in (None, False):
            raise RequestProblem(400, why, name, "unsupported_parameter")
    if body.get("top_logprobs") not in (None, 0):
        raise RequestProblem(
            400,
            "'top_logprobs' is not available: this gateway does not return log probabilities.",
            "top_logprobs",
            "unsupported_parameter",
        )
    found: dict[str, Any] = {name: body[name] for name in _SHARED if body.get(name) is not None}
    if body.get("tools") is not None:
        found["tools"] = _tools(body["tools"])
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":
        choice = {"type": "function", "function": {"name": choice.get("name")}}
    if choice is not None:
        found["tool_choice"] = choice
    found.update(_text(body.get("text")))
    found.update(_reasoning(body.get("reasoning")))
    return found


def _tools(tools: Any) -> list[Any]:
    """Function tools (``{"type": "function", "name", "parameters"}``) in chat form."""
    if not isinstance(tools, list):
        raise _bad("tools", "'tools' must be a list of function tools.")
    converted = []
    for tool in tools:
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else None
            raise _bad(
                "tools",
                f"Only 'function' tools are taken from the client; '{kind}' tools are not "
                "available here (hermes brings its own).",
            )
        function = {k: tool[k] for k in ("name", "description", "parameters") if k in tool}
        if tool.get("strict") is not None:
            function["strict"] = tool["strict"]
        converted.append({"type": "function", "function": function})
    return converted


def _an_object(name: str, value: Any, example: str) -> dict[str, Any] | None:
    """``value`` if it is an object, None if it is absent; else the client's sentence."""
    if value is not None and not isinstance(value, dict):
        raise _bad(name, f"'{name}' must be an object like {example}.")
    return value


def _text(text: Any) -> dict[str, Any]:
    text = _an_object("text", text, '{"format": {"type": "text"}}')
    if text is None:
        return {}
    found: dict[str, Any] = {}
    form = text.get("format")
    if isinstance(form, dict) and form.get("type") == "json_schema":
        schema = {k: form[k] for k in ("name", "schema", "strict", "description") if k in form}
        found["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif form is not None:
        found["response_format"] = form
    if text.get("verbosity") is not None:
        found["verbosity"] = text["verbosity"]
    return found


def _reasoning(reasoning: Any) -> dict[str, Any]:
    reasoning = _an_object("reasoning", reasoning, '{"effort": "low"}')
    if reasoning is None:
        return {}
    if reasoning.get("summary") not in (None, "none"):
        raise RequestProblem(
            400,
            "Reasoning summaries ('reasoning.summary') are not available from this gateway.",
            "reasoning.summary",
            "unsupported_parameter",
        )
    effort = reasoning.get("effort")
    return {"reasoning_effort": effort} if effort is not None else {}


def _bad(param: str, message: str) -> RequestProblem:
    return RequestProblem(400, message, param, "invalid_value")
