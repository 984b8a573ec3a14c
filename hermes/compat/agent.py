"""``run_agent.AIAgent``: hermes's agent taking Hermes Agent 0.19's calls.

The constructor takes 0.19's positional order and keywords. Keywords with a meaning
here are renamed (``platform`` is hermes's ``source``, ``gateway_session_key`` its
``session_key``, ``stream_delta_callback`` its ``stream_callback``) or applied
(``enabled_toolsets`` / ``disabled_toolsets``: see ``toolsets``); the rest have none
and are accepted with one warning line naming them, never a TypeError.
``run_conversation`` takes 0.19's signature and returns 0.19's result keys beside
hermes's own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hermes.agent import AIAgent as HermesAIAgent
from hermes.agent.model.client import ModelClient
from hermes.agent.turn_options import TurnOptions
from hermes.agent.turn_result import TurnResult
from hermes.compat import toolsets
from hermes.config import endpoint_transport
from hermes.state.context.message import Message

if TYPE_CHECKING:
    pass

log = logging.getLogger("hermes.compat")

CHAT_COMPLETIONS = "chat_completions"

# Hermes Agent 0.19's constructor parameters, in its positional order (as far as any
# caller passes them positionally).
POSITIONAL = (
    "base_url",
    "api_key",
    "provider",
    "api_mode",
    "acp_command",
    "acp_args",
    "command",
    "args",
    "model",
    "max_iterations",
)
RENAMED = {
    "platform": "source",
    "gateway_session_key": "session_key",
    "stream_delta_callback": "stream_callback",
}
_APPLIED = frozenset({"enabled_toolsets", "disabled_toolsets"})
_init = HermesAIAgent.__init__.__code__  # not inspect.signature: `inspect` costs ~8 ms
_OWN = frozenset(_init.co_varnames[: _init.co_argcount + _init.co_kwonlyargcount]) - {"self"}


class _Forward:
    """An attribute (or method) of one of the agent's parts, read and set on the agent
    under the name Hermes Agent gives it: ``session_db = _Forward("binding")``."""

    def __init__(self, part: str, name: str | None = None) -> None:
        self.part, self.name = part, name

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = self.name or name

    def __get__(self, agent: Any, owner: type | None = None) -> Any:
        return self if agent is None else getattr(getattr(agent, self.part), str(self.name))

    def __set__(self, agent: Any, value: Any) -> None:
        setattr(getattr(agent, self.part), str(self.name), value)


class AIAgent(HermesAIAgent):
    """hermes's AIAgent; accepts the calls Hermes Agent's callers make."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(POSITIONAL):
            raise TypeError(f"AIAgent() takes at most {len(POSITIONAL)} positional arguments")
        clash = set(POSITIONAL[: len(args)]) & set(kwargs)
        if clash:
            raise TypeError(f"AIAgent() got multiple values for {', '.join(sorted(clash))}")
        given = dict(zip(POSITIONAL, args, strict=False)) | kwargs
        enabled, disabled = (
            given.pop("enabled_toolsets", None),
            given.pop("disabled_toolsets", None),
        )
        if not given.get("model"):
            given.pop("model", None)  # 0.19's default is "": hermes's config decides
        own, ignored = translate_keywords(given)
        if ignored:
            log.warning(
                "AIAgent: ignoring Hermes Agent keywords with no meaning in hermes: %s",
                ", ".join(sorted(ignored)),
            )
        super().__init__(**own)
        if enabled is not None or disabled is not None:
            base = None if enabled is not None else HermesAIAgent.tool_names(self)
            self.tool_names_override = toolsets.chosen(
                enabled, disabled, base, self.registry.tools()
            )
        self.session_input_tokens = 0
        self.session_output_tokens = 0

    # The agent's parts under the names Hermes Agent's callers and tests use (the native
    # class leaves them to its parts: binding, window, toolbox, interruption).
    session_db = _Forward("binding")
    _session_db = _Forward("binding", "session_db")  # 0.19's name (hermes-webui sets it)
    conversation_id = _Forward("binding")
    title = _Forward("binding")
    system_prompt = _Forward("binding")
    user_turns = _Forward("binding")
    turn_user_uid = _Forward("binding")
    writes_transcript = _Forward("binding")
    ensure_session = _Forward("binding")
    follow_tip = _Forward("binding")
    load_history = _Forward("binding")
    persist = _Forward("binding")
    forget_turn_user_message = _Forward("binding")
    forget_cache = _Forward("binding")
    bound = _Forward("binding")
    compression_enabled = _Forward("window")
    context_compressor = _Forward("window", "compressor")
    last_compression = _Forward("window")
    estimate_tokens = _Forward("window")
    registry = _Forward("toolbox")
    tool_names_override = _Forward("toolbox", "override")
    clear_interrupt = _Forward("interruption", "clear")
    interrupt_event = _Forward("interruption", "event")
    interrupt_requested = _Forward("interruption", "requested")

    # -- Hermes Agent 0.19's calls -------------------------------------------------

    def interrupt(self, message: str | None = None) -> None:
        """Stop the running turn (0.19's ``message``, the input that interrupted, is
        not kept: the caller sends it as the next turn)."""
        super().interrupt()

    def switch_model(
        self,
        new_model: str,
        new_provider: str | None,
        api_key: str = "",
        base_url: str = "",
        api_mode: str = "",
    ) -> None:
        """0.19's in-place switch: the next model call goes to ``new_model`` at
        ``base_url`` with ``api_key`` (each kept as it is when empty); the compressor or
        context engine takes the new model's window and the segment records the model.

        As in 0.19, another provider without a ``base_url`` is refused rather than
        sent to the old provider's endpoint; an ``api_mode`` other than
        ``chat_completions`` is refused too (hermes speaks no other API). A refusal
        changes nothing."""
        if api_mode and api_mode != CHAT_COMPLETIONS:
            raise ValueError(
                f"switch_model: hermes speaks only the {CHAT_COMPLETIONS} API, not "
                f"{api_mode!r}; use the provider's OpenAI-compatible endpoint."
            )
        if not base_url and _norm(new_provider) != _norm(self.provider):
            raise ValueError(
                f"switch_model: no base_url given for provider {new_provider!r} (switching "
                f"from {self.provider!r}); refusing to keep the previous provider's endpoint."
            )
        self.provider = new_provider
        if base_url or api_key:
            self.base_url = (base_url or self.base_url).rstrip("/")
            self.api_key = api_key or self.api_key
            if isinstance(self.client, ModelClient):  # a model given by the caller stays
                transport = endpoint_transport(self.config, self.base_url)
                self.client.use_endpoint(
                    self.api_key, self.base_url, dict(transport.headers), transport.verify
                )
        self.set_model(new_model)  # after the endpoint: an engine is told the new one

    def run_conversation(
        self,
        user_message: Any,
        system_message: str | None = None,
        conversation_history: Sequence[Mapping[str, Any]] | None = None,
        task_id: str | None = None,
        stream_callback: Callable[[str], None] | None = None,
        persist_user_message: Any = None,
        persist_user_timestamp: float | None = None,
        moa_config: dict[str, Any] | None = None,
        *,
        tool_results: list[dict[str, Any]] | None = None,
        answer_uid: str | None = None,
        user_uid: str | None = None,
        resume: bool = False,
        options: TurnOptions | None = None,
    ) -> dict[str, Any]:
        """One turn, with Hermes Agent 0.19's arguments and meanings.

        ``system_message`` reaches the model after hermes's prompt (never stored);
        ``persist_user_message`` is stored in place of ``user_message``, which is what
        the model gets; a ``conversation_history`` that is the stored conversation adds
        nothing to the store. ``task_id`` (0.19's tool sandbox name) and ``moa_config``
        (mixture of agents) have no meaning here and are accepted.
        """
        if moa_config:
            log.info("run_conversation: moa_config has no meaning in hermes; answering alone")
        if stream_callback is not None:
            options = replace(options or TurnOptions(), stream_callback=stream_callback)
        # 0.19's arguments handed on by name to the native run: this edge only translates.
        result = self.run(
            user_message,
            conversation_history=conversation_history,
            tool_results=tool_results,
            answer_uid=answer_uid,
            user_uid=user_uid,
            system_message=system_message,
            persist_user_message=persist_user_message,
            persist_user_timestamp=persist_user_timestamp,
            resume=resume,
            options=options,
        )
        return self._hermes_agent_result(result)

    def _hermes_agent_result(self, result: TurnResult) -> dict[str, Any]:
        """The turn's result in the shape 0.19's ``run_conversation`` returns (the only
        place that shape is made); token figures are this agent's totals, as 0.19
        counts them."""
        self.session_input_tokens += result.prompt_tokens
        self.session_output_tokens += result.completion_tokens
        interrupted = result.interrupted
        total_in, total_out = self.session_input_tokens, self.session_output_tokens
        return {
            "final_response": result.answer,
            "tool_calls": result.tool_calls,
            "messages": result.messages,
            "session_id": result.session_id,
            "iterations": result.iterations,
            "interrupted": interrupted,
            "compressions": result.compressions,
            "system_prompt": result.system_prompt,
            "last_reasoning": _last_reasoning(result.messages),
            "api_calls": result.iterations,
            "completed": not interrupted and result.answer is not None,
            "turn_exit_reason": "interrupted_by_user" if interrupted else "text_response",
            "failed": False,
            "partial": False,
            "response_transformed": False,
            "response_previewed": False,
            "model": self.model,
            "provider": self.provider,
            "base_url": self.base_url,
            "input_tokens": total_in,
            "output_tokens": total_out,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "reasoning_tokens": 0,
            "prompt_tokens": total_in,
            "completion_tokens": total_out,
            "total_tokens": total_in + total_out,
            "last_prompt_tokens": self.context_compressor.last_prompt_tokens or 0,
            "estimated_cost_usd": None,
            "cost_status": "unknown",
            "cost_source": "none",
            "service_tier": None,
            **({"pending_steer": result.pending_steer} if result.pending_steer else {}),
        }


def _norm(provider: str | None) -> str:
    return (provider or "").strip().lower()


def _last_reasoning(messages: Sequence[Message]) -> str | None:
    """The newest reasoning of this turn's assistant messages (none before its user)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return None
        if message.get("role") == "assistant" and message.get("reasoning"):
            return str(message["reasoning"])
    return None


def one_shot_document(answer: str | None, **fields: Any) -> dict[str, Any]:
    """``hermes chat -q ... --json``'s document: the answer under Hermes Agent's key for
    it (``final_response``, so a script written for 0.19 reads it), then hermes's fields."""
    return {"final_response": answer, **fields}


def translate_keywords(kwargs: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """(hermes keywords, the names dropped) for Hermes Agent constructor keywords."""
    own: dict[str, Any] = {}
    ignored: set[str] = set()
    for name, value in kwargs.items():
        target = RENAMED.get(name, name)
        if target in _OWN:
            if value is not None or target not in own:
                own[target] = value
        elif name not in _APPLIED and value is not None:
            ignored.add(name)
    if own.get("source") is None:
        own.pop("source", None)
    return own, ignored
