"""Reading a Responses API request (``POST /v1/responses``) into what one turn needs.

``read_request`` checks the body the way OpenAI checks it and returns a
``ResponseRequest``: the new user message (the last input item), the earlier user and
assistant items (history for a new conversation), the client's instructions (the
``instructions`` parameter and any ``system``/``developer`` items, an instruction layer
after hermes's own prompt, as for chat completions) and the turn's options from
``request_options``. A wrong value is a ``RequestProblem``: a 400 naming the parameter,
or a 404 ``model_not_found``.

Input items may be messages (``{"role", "content"}``, with or without ``"type":
"message"``) whose content is a string or a list of ``input_text``/``output_text``
parts (an ``input_image`` becomes a reference line, as in chat completions), the
model's ``function_call`` items and the client's ``function_call_output`` items: a list
ending in outputs continues the turn that made those calls, as ``role: "tool"`` results
do in chat completions. ``reasoning`` items are the model's own and are skipped; other
item kinds (item references) are refused with a sentence.

Client ``function`` tools, ``tool_choice``, ``parallel_tool_calls``, ``text.format``
(a JSON schema), ``reasoning.effort`` and the other documented parameters become the
chat-completions options they mean, so both APIs check and send them alike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes.gateway.http.request_options import INSTRUCTION_ROLES, RequestProblem, turn_options
from hermes.gateway.http.responses_parameters import responses_parameters

RESPONSE_PREFIX = "resp_"
_HISTORY_ROLES = ("user", "assistant")
_TEXT_PARTS = ("input_text", "output_text", "text")


@dataclass
class ResponseRequest:
    """One ``POST /v1/responses``, checked."""

    text: str  # the new user message ("" when function call outputs continue a turn)
    history: list[dict[str, Any]]  # earlier user/assistant items
    options: dict[str, Any]  # model, instructions, sampling (``request_options``)
    instructions: str | None = None  # the ``instructions`` parameter, echoed back
    previous_uid: str | None = None  # the message_uid ``previous_response_id`` names
    previous_response_id: str | None = None
    stream: bool = False
    store: bool = True
    echo: dict[str, Any] = field(default_factory=dict)  # parameters the answer repeats


def read_request(body: dict[str, Any], models: Sequence[str]) -> ResponseRequest:
    """The checked request of a JSON object ``body``; raises ``RequestProblem``."""
    items = _input_items(body.get("input"))
    outputs = _trailing_outputs(items)
    earlier = items[: len(items) - len(outputs)]
    text = ""
    if not outputs:
        *earlier, last = items
        if last.get("role") != "user" or not last["content"].strip():
            raise _bad("input", "The last item of 'input' must be a user message with text.")
        text = last["content"]
    instructions = _optional_string(body, "instructions")
    layers = [instructions or ""] + [
        m["content"] for m in earlier if m.get("role") in INSTRUCTION_ROLES
    ]
    history = _history(earlier)
    previous_id = _optional_string(body, "previous_response_id")
    if previous_id is not None and history:
        raise _bad(
            "input",
            "With 'previous_response_id', 'input' holds only the new user message (and any "
            "system or developer instructions): the conversation so far is on the server.",
        )
    chat_like = {
        "model": body.get("model"),
        "messages": [{"role": "system", "content": layer} for layer in layers if layer.strip()],
        "temperature": body.get("temperature"),
        "max_completion_tokens": _max_output_tokens(body),
        "user": body.get("user"),
        **responses_parameters(body),
    }
    options = turn_options(chat_like, models, lambda content: content)
    if outputs:
        options["tool_results"] = outputs
    elif items[-1].get("parts"):
        options["content_parts"] = items[-1]["parts"]  # the model sees the image
    return ResponseRequest(
        text=text,
        history=history,
        options=options,
        instructions=instructions,
        previous_uid=_previous_uid(previous_id),
        previous_response_id=previous_id,
        stream=_flag(body, "stream", False),
        store=_flag(body, "store", True),
        echo={k: body.get(k) for k in ("temperature", "max_output_tokens", "user")},
    )


def _input_items(given: Any) -> list[dict[str, Any]]:
    """``input`` as messages ``{"role", "content"}`` with text content, and function
    calls and their outputs (``{"type", "call_id", ...}``)."""
    if isinstance(given, str):
        if not given.strip():
            raise _bad("input", "'input' must not be empty.")
        return [{"role": "user", "content": given}]
    if not isinstance(given, list) or not given:
        raise _bad("input", "'input' must be a string or a non-empty list of input items.")
    items = [_item(item, index) for index, item in enumerate(given)]
    found = [item for item in items if item is not None]
    if not found:
        raise _bad("input", "'input' must hold at least one message or function call output.")
    return found


def _item(item: Any, index: int) -> dict[str, Any] | None:
    where = f"input[{index}]"
    if not isinstance(item, dict):
        raise _bad(where, f'\'{where}\' must be an object like {{"role": "user", ...}}.')
    kind = item.get("type", "message")
    if kind == "reasoning":
        return None  # the model's own reasoning, sent back: not the conversation's words
    if kind in ("function_call", "function_call_output"):
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise _bad(where, f"'{where}.call_id' must be the id of a function call.")
        output = item.get("output", "")
        if kind == "function_call_output" and not isinstance(output, str):
            output = json.dumps(output, ensure_ascii=False)
        return {"type": kind, "call_id": call_id, "output": output}
    if kind != "message":
        raise _bad(
            where,
            f"'{where}' is a '{kind}' item; this gateway takes message, function_call and "
            "function_call_output items.",
        )
    return _message(item, where)


def _message(item: dict[str, Any], where: str) -> dict[str, Any]:
    role = item.get("role")
    if role not in (*_HISTORY_ROLES, *INSTRUCTION_ROLES):
        raise _bad(where, f"'{where}.role' must be user, assistant, system or developer.")
    content = item.get("content")
    return {"role": role, "content": _text_of(content, where), "parts": _image_parts(content)}


def _image_parts(content: Any) -> list[dict[str, Any]] | None:
    """Content holding an image by URL as chat-completions parts (text and
    ``image_url``), the form hermes sends and stores; None for text only."""
    if not isinstance(content, list):
        return None
    parts: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") in _TEXT_PARTS:
            parts.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "input_image" and part.get("image_url"):
            image = {"url": part["image_url"]}
            if part.get("detail"):
                image["detail"] = part["detail"]
            parts.append({"type": "image_url", "image_url": image})
        else:
            return None  # an image by file id: only its reference line can be kept
    return parts if any(p["type"] == "image_url" for p in parts) else None


def _trailing_outputs(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The function call outputs that end ``input``, as chat-completions tool results."""
    outputs: list[dict[str, Any]] = []
    for item in reversed(items):
        if item.get("type") != "function_call_output":
            break
        outputs.append({"tool_call_id": item["call_id"], "content": item["output"]})
    return outputs[::-1]


def _history(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user messages and final answers: an assistant message followed by function
    calls is the text of the message that asked for them (not a final answer)."""
    history = []
    for index, item in enumerate(items):
        following = items[index + 1] if index + 1 < len(items) else {}
        if item.get("role") not in _HISTORY_ROLES or not item["content"]:
            continue
        if item["role"] == "assistant" and following.get("type") == "function_call":
            continue
        history.append({"role": item["role"], "content": item.get("parts") or item["content"]})
    return history


def _text_of(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(where, f"'{where}.content' must be a string or a list of content parts.")
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "input_image" and isinstance(part.get("image_url") or "", str):
            texts.append(f"[image: {(part.get('image_url') or part.get('file_id') or '')[:200]}]")
        else:
            raise _bad(
                where,
                f"'{where}.content' may hold input_text, output_text and input_image parts "
                f"only; got {kind or 'something else'}.",
            )
    return "\n".join(texts)


def _optional_string(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise _bad(name, f"'{name}' must be a string.")
    return value or None


def _flag(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _bad(name, f"'{name}' must be true or false.")
    return value


def _max_output_tokens(body: dict[str, Any]) -> int | None:
    limit = body.get("max_output_tokens")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise _bad("max_output_tokens", "'max_output_tokens' must be a whole number of at least 1.")
    return limit


def _previous_uid(response_id: str | None) -> str | None:
    if response_id is None:
        return None
    if not response_id.startswith(RESPONSE_PREFIX) or len(response_id) > 200:
        raise previous_not_found(response_id)
    return response_id.removeprefix(RESPONSE_PREFIX)


def previous_not_found(response_id: str) -> RequestProblem:
    """OpenAI's 404 for a ``previous_response_id`` nobody can continue from."""
    return RequestProblem(
        404,
        f"Previous response with id '{response_id[:200]}' not found.",
        "previous_response_id",
        "previous_response_not_found",
    )


def _bad(param: str, message: str) -> RequestProblem:
    return RequestProblem(400, message, param, "invalid_value")
