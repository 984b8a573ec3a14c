"""A chat completion asked of a provider that speaks another wire shape.

Hermes Agent 0.19 hands plugins and tools side-task clients in the openai client's shape
(``client.chat.completions.create(model=, messages=, tools=, max_tokens=, temperature=)``)
over three other APIs: OpenAI's Responses API (Codex), Anthropic's Messages API and AWS
Bedrock's Converse API. This room translates such a call for each: the chat messages
(system, user, the assistant's tool calls, the tool results) into the provider's request,
and the provider's answer (text, tool calls, why it stopped, token usage) back into the
openai SDK's ``ChatCompletion``. The caller's own SDK client sends the request; hermes's
own agent speaks chat completions and never comes here (``agent.auxiliary_client``'s
``CodexAuxiliaryClient``, ``AnthropicAuxiliaryClient`` and ``BedrockAuxiliaryClient``
do).

Answers are whole, as 0.19's are: a Responses stream (the Codex endpoint answers only
as one) and an Anthropic stream are read to their end here.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from openai.types.chat import ChatCompletion

Options = Mapping[str, Any]  # the keyword arguments of ``chat.completions.create``

# An answer needs a token cap on Anthropic and Bedrock; 0.19's Bedrock shim asks for this
# many when the caller names none.
DEFAULT_MAX_TOKENS = 4096
# Anthropic and Bedrock refuse an empty text block: 0.19 sends these in its place.
EMPTY_USER_TEXT = "(empty message)"
EMPTY_TEXT = "(empty)"
# The Codex endpoint wants instructions: 0.19's when no system message gives them.
DEFAULT_INSTRUCTIONS = "You are a helpful assistant."

_ANTHROPIC_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}
_ANTHROPIC_TOOL_CHOICE: dict[str, Any] = {
    "auto": {"type": "auto"},
    "required": {"type": "any"},
    "none": "none",
}
_CONVERSE_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "content_filtered": "content_filter",
    "guardrail_intervened": "content_filter",
}


# -- what every shape shares ---------------------------------------------------------


def system_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """The system messages' text, one paragraph each."""
    parts = [content_text(m.get("content")) for m in messages if m.get("role") == "system"]
    return "\n\n".join(part for part in parts if part.strip())


def content_text(content: Any) -> str:
    """A message's text: the string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or "") if isinstance(part, dict) else str(part)
            for part in content
            if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")
        )
    return "" if content is None else str(content)


def tool_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    """A chat tool call's arguments as an object ({} when they are no JSON object)."""
    raw = (call.get("function") or {}).get("arguments") or "{}"
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def max_tokens(options: Options) -> int:
    """The caller's token cap (``max_tokens`` or ``max_completion_tokens``), else ours."""
    value = options.get("max_tokens") or options.get("max_completion_tokens")
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 1:
        return int(value)
    return DEFAULT_MAX_TOKENS


def stop_sequences(options: Options) -> list[str]:
    """``stop`` as a list (the chat API takes one string too)."""
    stop = options.get("stop")
    return [stop] if isinstance(stop, str) else list(stop or [])


def chat_completion(
    *,
    model: str,
    text: str | None,
    tool_calls: list[dict[str, Any]],
    finish_reason: str,
    usage: tuple[int, int] | None,
    reasoning: str | None = None,
    answer_id: str | None = None,
) -> ChatCompletion:
    """The openai SDK's ``ChatCompletion`` of one answer; ``usage`` is (prompt, completion)."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text or None,
        "tool_calls": tool_calls or None,
    }
    if reasoning:
        message["reasoning"] = reasoning
    body: dict[str, Any] = {
        "id": answer_id or f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if usage is not None:
        prompt, completion = usage
        body["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    return ChatCompletion.model_validate(body)


def _chat_tool_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def _field(item: Any, name: str, default: Any = None) -> Any:
    """``item.name`` or ``item[name]``: SDK objects and plain dicts alike."""
    if isinstance(item, Mapping):
        return item.get(name, default)
    value = getattr(item, name, None)
    return default if value is None else value


def _data_url(url: str) -> tuple[str, str] | None:
    """``(media type, base64 data)`` of a ``data:`` URL, else None."""
    if not url.startswith("data:") or "," not in url:
        return None
    header, data = url[5:].split(",", 1)
    return (header.split(";")[0] or "image/jpeg"), data


def _image_url(part: Mapping[str, Any]) -> str:
    image = part.get("image_url")
    return str(image.get("url") or "") if isinstance(image, dict) else str(image or "")


# -- Anthropic Messages ---------------------------------------------------------------


def anthropic_request(options: Options, default_model: str) -> dict[str, Any]:
    """The keyword arguments of ``anthropic.Anthropic().messages.create`` for a chat call."""
    messages = list(options.get("messages") or [])
    request: dict[str, Any] = {
        "model": options.get("model") or default_model,
        "messages": _alternating(
            _anthropic_message(m) for m in messages if m.get("role") != "system"
        ),
        "max_tokens": max_tokens(options),
    }
    if system := system_text(messages):
        request["system"] = system
    tools = [_anthropic_tool(tool) for tool in options.get("tools") or []]
    choice = _anthropic_tool_choice(options.get("tool_choice"))
    if tools and choice != "none":
        request["tools"] = tools
        request["tool_choice"] = choice or {"type": "auto"}
    # No temperature or top_p: current Claude models refuse sampling settings, and the
    # anthropic SDK takes none.
    if stops := stop_sequences(options):
        request["stop_sequences"] = stops
    if options.get("timeout") is not None:
        request["timeout"] = options["timeout"]
    # A gateway's own request fields pass through; ``reasoning`` is the chat API's and
    # ``_``-keys are the caller's plumbing, neither a Messages field.
    extra = {
        key: value
        for key, value in (options.get("extra_body") or {}).items()
        if key != "reasoning" and not str(key).startswith("_")
    }
    if extra:
        request["extra_body"] = extra
    return request


def _anthropic_message(message: Mapping[str, Any]) -> dict[str, Any]:
    role, content = message.get("role"), message.get("content")
    if role == "tool":
        result = content if isinstance(content, str) else json.dumps(content)
        block = {
            "type": "tool_result",
            "tool_use_id": str(message.get("tool_call_id") or ""),
            "content": result or "(no output)",
        }
        return {"role": "user", "content": [block]}
    if role == "assistant":
        blocks = [] if not content else _anthropic_blocks(content)
        blocks += [
            {
                "type": "tool_use",
                "id": str(call.get("id") or ""),
                "name": str((call.get("function") or {}).get("name") or ""),
                "input": tool_arguments(call),
            }
            for call in message.get("tool_calls") or []
        ]
        return {"role": "assistant", "content": blocks or [{"type": "text", "text": EMPTY_TEXT}]}
    blocks = _anthropic_blocks(content)
    if not any((b.get("text") or "").strip() or b["type"] != "text" for b in blocks):
        blocks = [{"type": "text", "text": EMPTY_USER_TEXT}]
    return {"role": "user", "content": blocks}


def _anthropic_blocks(content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return [{"type": "text", "text": content_text(content)}]
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text"):
            blocks.append({"type": "text", "text": content_text([part])})
        elif isinstance(part, dict) and part.get("type") == "image_url":
            url = _image_url(part)
            inline = _data_url(url)
            source = (
                {"type": "base64", "media_type": inline[0], "data": inline[1]}
                if inline
                else {"type": "url", "url": url}
            )
            blocks.append({"type": "image", "source": source})
    return blocks


def _alternating(messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages of one role in a row as one (Anthropic and Bedrock want turns to alternate:
    the results of parallel tool calls are one user turn)."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1]["content"].extend(message["content"])
        else:
            merged.append({"role": message["role"], "content": list(message["content"])})
    return merged


def _anthropic_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or {}
    return {
        "name": function.get("name", ""),
        "description": function.get("description", ""),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }


def _anthropic_tool_choice(choice: Any) -> Any:
    """The chat API's ``tool_choice`` in Anthropic's terms ("none": send no tools)."""
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "tool", "name": (choice.get("function") or {}).get("name", "")}
    name = choice.get("type") if isinstance(choice, dict) else choice
    return _ANTHROPIC_TOOL_CHOICE.get(name) if isinstance(name, str) else None


def completion_from_anthropic(message: Any, model: str) -> ChatCompletion:
    """An Anthropic ``Message`` as a ``ChatCompletion``."""
    texts, thoughts, calls = [], [], []
    for block in _field(message, "content", []) or []:
        kind = _field(block, "type")
        if kind == "text":
            texts.append(str(_field(block, "text", "")))
        elif kind == "thinking":
            thoughts.append(str(_field(block, "thinking", "")))
        elif kind == "tool_use":
            calls.append(
                _chat_tool_call(
                    _field(block, "id", ""), _field(block, "name", ""), _field(block, "input", {})
                )
            )
    usage = _field(message, "usage")
    finish = _ANTHROPIC_FINISH.get(str(_field(message, "stop_reason", "")), "stop")
    return chat_completion(
        model=model,
        text="".join(texts) or None,
        tool_calls=calls,
        finish_reason="tool_calls" if calls and finish == "stop" else finish,
        usage=None
        if usage is None
        else (int(_field(usage, "input_tokens", 0)), int(_field(usage, "output_tokens", 0))),
        reasoning="\n\n".join(thoughts) or None,
        answer_id=_field(message, "id"),
    )


def complete_on_anthropic(client: Any, default_model: str, options: Options) -> ChatCompletion:
    """One chat call answered by an ``anthropic.Anthropic`` client's Messages API, streamed
    and read to its end (some compatible gateways answer only as a stream); an endpoint
    that says it does not stream is asked again without."""
    request = anthropic_request(options, default_model)
    try:
        with client.messages.stream(**request) as stream:
            message = stream.get_final_message()
    except Exception as error:
        words = str(error).lower()
        if "stream" not in words or "not supported" not in words:
            raise
        message = client.messages.create(**request)
    return completion_from_anthropic(message, request["model"])


# -- OpenAI Responses (Codex) ----------------------------------------------------------


def responses_request(options: Options, default_model: str) -> dict[str, Any]:
    """The keyword arguments of ``openai.OpenAI().responses.create`` for a chat call, as
    the Codex endpoint takes them: streamed, not stored, no token cap or temperature
    (it refuses both)."""
    messages = list(options.get("messages") or [])
    input_items = [item for m in messages for item in _responses_items(m)]
    request: dict[str, Any] = {
        "model": options.get("model") or default_model,
        "instructions": system_text(messages) or DEFAULT_INSTRUCTIONS,
        "input": input_items or [{"role": "user", "content": ""}],
        "store": False,
        "stream": True,
    }
    tools = [
        {
            "type": "function",
            "name": function["name"],
            "description": function.get("description", ""),
            "parameters": function.get("parameters") or {},
        }
        for function in (tool.get("function") or {} for tool in options.get("tools") or [])
        if function.get("name")
    ]
    if tools:
        request["tools"] = tools
    reasoning = (options.get("extra_body") or {}).get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("enabled") is not False:
        # The chat API's reasoning setting in the Responses API's terms, as 0.19 sends it
        # ("minimal" is refused there: "low").
        effort = reasoning.get("effort") or "medium"
        request["reasoning"] = {
            "effort": "low" if effort == "minimal" else effort,
            "summary": "auto",
        }
        request["include"] = ["reasoning.encrypted_content"]
    if options.get("timeout") is not None:
        request["timeout"] = options["timeout"]
    return request


def _responses_items(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    role, content = message.get("role"), message.get("content")
    if role == "system":
        return []
    if role == "tool":
        output = content if isinstance(content, str) else json.dumps(content)
        return [
            {
                "type": "function_call_output",
                "call_id": str(message.get("tool_call_id") or ""),
                "output": output,
            }
        ]
    if role == "assistant":
        text = content_text(content)
        items: list[dict[str, Any]] = (
            [{"role": "assistant", "content": text}] if text.strip() else []
        )
        return items + [
            {
                "type": "function_call",
                "call_id": str(call.get("id") or ""),
                "name": str((call.get("function") or {}).get("name") or ""),
                "arguments": _raw_arguments(call),
            }
            for call in message.get("tool_calls") or []
        ]
    if not isinstance(content, list):
        return [{"role": "user", "content": content_text(content)}]
    parts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image_url":
            parts.append({"type": "input_image", "image_url": _image_url(part)})
        else:
            parts.append({"type": "input_text", "text": content_text([part])})
    return [{"role": "user", "content": parts}]


def _raw_arguments(call: Mapping[str, Any]) -> str:
    """A chat tool call's arguments as the JSON text it was sent with."""
    raw = (call.get("function") or {}).get("arguments")
    return json.dumps(raw) if isinstance(raw, dict) else (str(raw or "").strip() or "{}")


def completion_from_responses(events: Iterable[Any], model: str) -> ChatCompletion:
    """A Responses stream, read to its end, as a ``ChatCompletion``. The output comes from
    the finished items (the Codex endpoint's final event may carry none); a failed
    response or an error event raises ``RuntimeError`` with the endpoint's words."""
    items: list[Any] = []
    final: Any = None
    for event in events:
        kind = _field(event, "type")
        if kind == "response.output_item.done":
            items.append(_field(event, "item"))
        elif kind in ("response.completed", "response.incomplete"):
            final = _field(event, "response")
        elif kind in ("response.failed", "error"):
            error = _field(_field(event, "response"), "error") or event
            raise RuntimeError(f"The Responses API failed: {_field(error, 'message', kind)}")
    if final is None:
        raise RuntimeError("The Responses stream ended before the response was complete.")
    texts, calls = [], []
    for item in items or _field(final, "output", []) or []:
        if _field(item, "type") == "message":
            texts += [
                str(_field(part, "text", ""))
                for part in _field(item, "content", []) or []
                if _field(part, "type") in ("output_text", "text")
            ]
        elif _field(item, "type") == "function_call":
            calls.append(
                _chat_tool_call(
                    _field(item, "call_id", ""),
                    _field(item, "name", ""),
                    _field(item, "arguments", "{}"),
                )
            )
    usage = _field(final, "usage")
    return chat_completion(
        model=model,
        text="".join(texts).strip() or None,
        tool_calls=calls,
        finish_reason="tool_calls" if calls else "stop",
        usage=None
        if usage is None
        else (int(_field(usage, "input_tokens", 0)), int(_field(usage, "output_tokens", 0))),
    )


def complete_on_responses(client: Any, default_model: str, options: Options) -> ChatCompletion:
    """One chat call answered by an ``openai.OpenAI`` client's Responses API, streamed."""
    request = responses_request(options, default_model)
    stream = client.responses.create(**request)
    try:
        return completion_from_responses(stream, request["model"])
    finally:
        stream.close()


# -- AWS Bedrock Converse --------------------------------------------------------------


def converse_request(options: Options, default_model: str) -> dict[str, Any]:
    """The keyword arguments of a boto3 ``bedrock-runtime`` client's ``converse``."""
    messages = list(options.get("messages") or [])
    turns = _alternating(_converse_message(m) for m in messages if m.get("role") != "system")
    # Converse wants the conversation to open and end on the user's turn.
    if turns and turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"text": EMPTY_TEXT}]})
    if turns and turns[-1]["role"] != "user":
        turns.append({"role": "user", "content": [{"text": EMPTY_TEXT}]})
    settings: dict[str, Any] = {"maxTokens": max_tokens(options)}
    for source, target in (("temperature", "temperature"), ("top_p", "topP")):
        if options.get(source) is not None:
            settings[target] = options[source]
    if stops := stop_sequences(options):
        settings["stopSequences"] = stops
    request: dict[str, Any] = {
        "modelId": options.get("model") or default_model,
        "messages": turns,
        "inferenceConfig": settings,
    }
    system = [{"text": text} for text in _system_parts(messages)]
    if system:
        request["system"] = system
    if tools := [_converse_tool(tool) for tool in options.get("tools") or []]:
        request["toolConfig"] = {"tools": tools}
    return request


def _system_parts(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    texts = [content_text(m.get("content")) for m in messages if m.get("role") == "system"]
    return [text for text in texts if text.strip()]


def _converse_message(message: Mapping[str, Any]) -> dict[str, Any]:
    role, content = message.get("role"), message.get("content")
    if role == "tool":
        result = content if isinstance(content, str) else json.dumps(content)
        block = {
            "toolResult": {
                "toolUseId": str(message.get("tool_call_id") or ""),
                "content": [{"text": _non_blank(result)}],
            }
        }
        return {"role": "user", "content": [block]}
    blocks = _converse_blocks(content) if content or role != "assistant" else []
    if role == "assistant":
        blocks += [
            {
                "toolUse": {
                    "toolUseId": str(call.get("id") or ""),
                    "name": str((call.get("function") or {}).get("name") or ""),
                    "input": tool_arguments(call),
                }
            }
            for call in message.get("tool_calls") or []
        ]
    return {
        "role": "assistant" if role == "assistant" else "user",
        "content": blocks or [{"text": EMPTY_TEXT}],
    }


def _converse_blocks(content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return [{"text": _non_blank(content_text(content))}]
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image_url":
            url = _image_url(part)
            inline = _data_url(url)
            if inline is None:  # Converse takes no image by URL: the model reads the URL
                blocks.append({"text": f"[Image: {url}]"})
            else:
                image_format = inline[0].split("/")[-1]
                source = {"bytes": base64.b64decode(inline[1])}  # boto3 encodes it again
                blocks.append({"image": {"format": image_format, "source": source}})
        elif isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text"):
            blocks.append({"text": _non_blank(content_text([part]))})
    return blocks


def _non_blank(text: str) -> str:
    return text if text.strip() else EMPTY_TEXT


def _converse_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or {}
    schema = function.get("parameters") or {"type": "object", "properties": {}}
    return {
        "toolSpec": {
            "name": function.get("name", ""),
            "description": function.get("description", ""),
            "inputSchema": {"json": schema},
        }
    }


def completion_from_converse(response: Mapping[str, Any], model: str) -> ChatCompletion:
    """A Converse answer as a ``ChatCompletion``."""
    texts, thoughts, calls = [], [], []
    for block in ((response.get("output") or {}).get("message") or {}).get("content") or []:
        if "text" in block:
            texts.append(str(block["text"]))
        elif "reasoningContent" in block:
            thoughts.append(
                str((block["reasoningContent"].get("reasoningText") or {}).get("text", ""))
            )
        elif "toolUse" in block:
            use = block["toolUse"]
            calls.append(
                _chat_tool_call(use.get("toolUseId", ""), use.get("name", ""), use.get("input", {}))
            )
    usage = response.get("usage") or {}
    finish = _CONVERSE_FINISH.get(str(response.get("stopReason") or ""), "stop")
    return chat_completion(
        model=model,
        text="\n".join(texts) or None,
        tool_calls=calls,
        finish_reason="tool_calls" if calls and finish == "stop" else finish,
        usage=(int(usage.get("inputTokens", 0)), int(usage.get("outputTokens", 0))),
        reasoning="\n\n".join(t for t in thoughts if t) or None,
    )


def complete_on_converse(client: Any, default_model: str, options: Options) -> ChatCompletion:
    """One chat call answered by a boto3 ``bedrock-runtime`` client's Converse API."""
    request = converse_request(options, default_model)
    return completion_from_converse(client.converse(**request), request["modelId"])
