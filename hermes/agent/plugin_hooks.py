"""Where a turn calls the plugins' lifecycle hooks (the list is in hermes/plugins/manager.py).

Each call gives 0.19's keywords. A background review (a fork) fires nothing: it is
inert (invariant 8). ``turn_id`` is the turn's user message uid; ``task_id`` the segment.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hermes.agent.model.client import SAMPLING_KEYS, ModelResponse, encode_message

if TYPE_CHECKING:
    from hermes.agent.host import TurnHost
    from hermes.plugins import PluginManager
    from hermes.state.context.message import Message


def _fires(host: TurnHost) -> PluginManager | None:
    return None if host.is_fork else host.plugins


def _common(host: TurnHost) -> dict[str, Any]:
    """What every tool, request and middleware call is told of the turn. ``sender_id``
    (the name 0.19's ``pre_llm_call`` gives it) is whose turn it is: the chat user or
    the API principal ("" in the terminal), so a plugin can keep a rule per user."""
    binding = host.binding
    return {
        "session_id": binding.session_id or "",
        "task_id": binding.session_id or "",
        "turn_id": binding.turn_user_uid or "",
        "model": binding.model,
        "platform": binding.origin.source,
        "sender_id": binding.origin.user_id or "",
    }


def begin(host: TurnHost, history: list[Message]) -> None:
    """A turn starts: the context engine learns its conversation; a conversation with no
    messages yet is a session start for the plugins."""
    bind_engine(host)
    binding = host.binding
    if history:
        return
    if (plugins := _fires(host)) is not None and plugins.has_hook("on_session_start"):
        plugins.invoke_hook(
            "on_session_start",
            session_id=binding.session_id or "",
            model=binding.model,
            platform=binding.origin.source,
        )


def bind_engine(host: TurnHost) -> None:
    """Tell a plugin's context engine the conversation it serves (its
    ``on_session_start``, once per conversation); a fork tells it nothing."""
    from hermes.agent.engine_compressor import EngineCompressor

    compressor, binding = host.window.compressor, host.binding
    if isinstance(compressor, EngineCompressor) and binding.conversation_id and not host.is_fork:
        compressor.bind(
            binding.conversation_id,
            hermes_home=str(host.toolbox.scope.hermes_home),
            platform=binding.origin.source,
            model=binding.model,
            context_length=compressor.context_length,
        )


def before_turn(host: TurnHost, user_message: Any, history: list[Message]) -> str | None:
    """``pre_llm_call`` once per turn; the context its callbacks give, joined."""
    plugins = _fires(host)
    if plugins is None or not plugins.has_hook("pre_llm_call"):
        return None
    answers = plugins.invoke_hook(
        "pre_llm_call",
        **_common(host),
        user_message=user_message if isinstance(user_message, str) else str(user_message or ""),
        conversation_history=list(history),
        is_first_turn=len(history) <= 1,
    )
    parts = [
        str(a["context"]) if isinstance(a, dict) else a
        for a in answers
        if (isinstance(a, dict) and a.get("context")) or (isinstance(a, str) and a.strip())
    ]
    return "\n\n".join(parts) if parts else None


def before_request(host: TurnHost, messages: list[Message], call_count: int, tools: int) -> None:
    """``pre_api_request`` before each model request of the turn (observers: answers are
    not read, as in 0.19)."""
    plugins = _fires(host)
    if plugins is None or not plugins.has_hook("pre_api_request"):
        return
    plugins.invoke_hook(
        "pre_api_request",
        **_common(host),
        api_call_count=call_count,
        conversation_history=list(messages),
        message_count=len(messages) + 1,  # and the system message
        tool_count=tools,
        started_at=time.time(),
    )


def around_tool(
    host: TurnHost,
    name: str,
    arguments: str,
    call_id: str,
    run: Callable[[str], str],
    ask: Callable[[str, str], bool] | None = None,
) -> str:
    """A tool call as 0.19 makes it: the thread's allowed tools, the ``tool_request``
    middleware (which may change its arguments), ``pre_tool_call`` (which may block it,
    or have ``ask(tool, why)`` ask the user), the tool through the ``tool_execution``
    middleware, ``post_tool_call``. ``run(arguments)`` runs the tool."""
    from hermes.plugins import middleware, pre_tool

    refused = pre_tool.thread_refusal(name)
    plugins = _fires(host)
    if plugins is None or not (
        plugins.has_hook("pre_tool_call")
        or plugins.has_hook("post_tool_call")
        or plugins.has_middleware(middleware.TOOL_REQUEST)
        or plugins.has_middleware(middleware.TOOL_EXECUTION)
    ):
        return refused if refused is not None else run(arguments)
    args = _arguments(arguments)
    keywords = {**_common(host), "tool_name": name, "tool_call_id": call_id}
    trace: list[dict[str, Any]] = []
    if plugins.has_middleware(middleware.TOOL_REQUEST):
        args, trace = middleware.rewrite(
            middleware.TOOL_REQUEST,
            plugins.middleware(middleware.TOOL_REQUEST),
            "args",
            args,
            **keywords,
        )
        if trace:
            arguments = json.dumps(args, ensure_ascii=False)
    blocked = refused
    if blocked is None and plugins.has_hook("pre_tool_call"):
        said = plugins.invoke_hook(
            "pre_tool_call", **keywords, args=args, middleware_trace=list(trace)
        )
        blocked = pre_tool.block_message(pre_tool.directive(said), name, ask)
    began = time.monotonic()
    if blocked is not None:
        result = blocked
    elif plugins.has_middleware(middleware.TOOL_EXECUTION):
        given = args

        def last(chosen: dict[str, Any]) -> str:
            return run(arguments if chosen is given else json.dumps(chosen, ensure_ascii=False))

        answer = middleware.run_chain(
            middleware.TOOL_EXECUTION,
            plugins.middleware(middleware.TOOL_EXECUTION),
            "args",
            args,
            last,
            **keywords,
            original_args=args,
            middleware_trace=list(trace),
        )
        result = answer if isinstance(answer, str) else json.dumps(answer, default=str)
    else:
        result = run(arguments)
    failed = result.startswith(("Error:", "Refused:"))
    plugins.invoke_hook(
        "post_tool_call",
        **keywords,
        args=args,
        result=result,
        duration_ms=int((time.monotonic() - began) * 1000),
        status="blocked" if blocked is not None else ("error" if failed else "ok"),
        error_type=None,
        error_message=result if failed else None,
    )
    return result


def model_call(
    host: TurnHost,
    complete: Callable[..., ModelResponse],
    *,
    encoded: list[bytes],
    encoded_tools: list[bytes] | None,
    model: str | None,
    options: Mapping[str, Any] | None,
    call_count: int,
) -> ModelResponse:
    """One model request through the ``llm_request`` middleware (which may change the
    request: ``model``, ``messages``, ``tools``, sampling options) and the
    ``llm_execution`` middleware around ``complete`` (the client's, given the rest of its
    keywords by the caller)."""
    from hermes.plugins import middleware

    plugins = _fires(host)
    if plugins is None or not (
        plugins.has_middleware(middleware.LLM_REQUEST)
        or plugins.has_middleware(middleware.LLM_EXECUTION)
    ):
        return complete(encoded=encoded, encoded_tools=encoded_tools, model=model, options=options)
    request: dict[str, Any] = {
        "model": model or host.binding.model,
        "messages": [json.loads(piece) for piece in encoded],
        **({"tools": [json.loads(t) for t in encoded_tools]} if encoded_tools else {}),
        **(options or {}),
    }
    keywords = {**_common(host), "api_call_count": call_count}
    original = request
    trace: list[dict[str, Any]] = []
    if plugins.has_middleware(middleware.LLM_REQUEST):
        request, trace = middleware.rewrite(
            middleware.LLM_REQUEST,
            plugins.middleware(middleware.LLM_REQUEST),
            "request",
            request,
            **keywords,
        )

    def last(chosen: dict[str, Any]) -> ModelResponse:
        if chosen is original:  # unchanged: as encoded already
            return complete(
                encoded=encoded, encoded_tools=encoded_tools, model=model, options=options
            )
        return complete(
            encoded=[encode_message(m) for m in chosen.get("messages") or []],
            encoded_tools=[encode_message(t) for t in chosen.get("tools") or []] or None,
            model=chosen.get("model") or model,
            options={k: v for k, v in chosen.items() if k in SAMPLING_KEYS} or None,
        )

    if not plugins.has_middleware(middleware.LLM_EXECUTION):
        return last(request)
    answer = middleware.run_chain(
        middleware.LLM_EXECUTION,
        plugins.middleware(middleware.LLM_EXECUTION),
        "request",
        request,
        last,
        **keywords,
        original_request=original,
        middleware_trace=list(trace),
    )
    if not isinstance(answer, ModelResponse):
        raise TypeError(
            "an llm_execution middleware returned something other than the model's answer "
            f"({type(answer).__name__}); return what next_call() gave."
        )
    return answer


def after_turn(
    host: TurnHost,
    user_message: Any,
    messages: list[Message],
    answer: str | None,
    interrupted: bool,
) -> None:
    """``post_llm_call`` for an answered turn, then ``on_session_end`` for every turn."""
    plugins = _fires(host)
    if plugins is None:
        return
    if answer and not interrupted:
        plugins.invoke_hook(
            "post_llm_call",
            **_common(host),
            user_message=user_message if isinstance(user_message, str) else str(user_message or ""),
            assistant_response=answer,
            conversation_history=list(messages),
        )
    plugins.invoke_hook(
        "on_session_end",
        **_common(host),
        completed=bool(answer) and not interrupted,
        interrupted=interrupted,
    )


def finalizes(host: TurnHost) -> bool:
    """Whether a plugin listens for the end of a conversation."""
    plugins = _fires(host)
    return plugins is not None and plugins.has_hook("on_session_finalize")


def finalize(host: TurnHost, reason: str) -> None:
    """The user leaves a stored conversation: 0.19's ``on_session_finalize`` with
    ``reason`` (``shutdown``: the chat closed; ``session_boundary``: ``/new`` or another
    conversation in the terminal; ``new_session``: a gateway chat's ``/new``)."""
    binding = host.binding
    if not finalizes(host) or not binding.session_id:
        return  # nothing was stored: no conversation to end
    plugins = _fires(host)
    assert plugins is not None
    plugins.invoke_hook(
        "on_session_finalize",
        session_id=binding.session_id,
        platform=binding.origin.source,
        reason=reason,
    )


def _arguments(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _block_message(answers: list[Any]) -> str | None:
    for answer in answers:
        if isinstance(answer, dict) and answer.get("action") == "block" and answer.get("message"):
            return str(answer["message"])  # what the model reads as the tool's result
    return None
