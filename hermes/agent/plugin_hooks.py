"""Where a turn calls the plugins' lifecycle hooks (the list is in hermes/plugins/manager.py).

Each call gives 0.19's keywords. A background review (a fork) fires nothing: it is
inert (invariant 8). ``turn_id`` is the turn's user message uid; ``task_id`` the segment.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.agent.host import TurnHost
    from hermes.plugins import PluginManager
    from hermes.state.context.message import Message


def _fires(host: TurnHost) -> PluginManager | None:
    return None if host.is_fork else host.plugins


def _common(host: TurnHost) -> dict[str, Any]:
    binding = host.binding
    return {
        "session_id": binding.session_id or "",
        "task_id": binding.session_id or "",
        "turn_id": binding.turn_user_uid or "",
        "model": binding.model,
        "platform": binding.origin.source,
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
        sender_id=host.binding.origin.user_id or "",
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
    host: TurnHost, name: str, arguments: str, call_id: str, run: Callable[[], str]
) -> str:
    """``pre_tool_call`` (which may block the call), the tool, ``post_tool_call``."""
    plugins = _fires(host)
    if plugins is None or not (
        plugins.has_hook("pre_tool_call") or plugins.has_hook("post_tool_call")
    ):
        return run()
    args = _arguments(arguments)
    keywords = {**_common(host), "tool_name": name, "args": args, "tool_call_id": call_id}
    blocked = _block_message(plugins.invoke_hook("pre_tool_call", **keywords))
    began = time.monotonic()
    result = blocked if blocked is not None else run()
    failed = result.startswith(("Error:", "Refused:"))
    plugins.invoke_hook(
        "post_tool_call",
        **keywords,
        result=result,
        duration_ms=int((time.monotonic() - began) * 1000),
        status="blocked" if blocked is not None else ("error" if failed else "ok"),
        error_type=None,
        error_message=result if failed else None,
    )
    return result


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
