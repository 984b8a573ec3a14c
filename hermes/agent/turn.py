"""One user turn: model calls and tool runs until a final answer.

Persistence follows invariant 7: the user's message is stored on arrival, the
assistant's tool-call message and each tool result as it finishes, the answer when it
comes. Before each model call the context is compressed when over the threshold; a
no-op (same length back) stops further attempts for this turn.

The turn is handed a ``TurnHost`` (host.py), not the agent: the conversation binding
(history and persistence), the model client, the toolbox, the context window, the
settings, the agent's defaults, ``emit``, the interruption and ``compress`` (the agent's
``_compress_context``, which a subclass or a patch may override, as in Hermes Agent).

The turn is data: a caller's choices for it come as ``TurnOptions`` (resolved against
the host's defaults once, at the start); a ``TurnState`` owns its messages, usage,
system prompt and options; ``_next_step`` prepares the context, asks the model and says what happens next
(``FinalAnswer | RunTools | RetryEmpty | CompressAndRetry | Interrupted``); one small
loop (``_loop``) acts on it; the caller gets a frozen ``TurnResult``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from hermes.agent import (
    caller_history,
    plugin_hooks,
    recontext,
    review,
    transcript,
    turn_holding,
)
from hermes.agent.errors import ContextLengthError, ToolResultsError, TurnInterrupted
from hermes.agent.model import provider_usage
from hermes.agent.model.client import ModelResponse, encode_message
from hermes.agent.turn_options import ResolvedOptions, TurnOptions
from hermes.agent.turn_result import TurnResult
from hermes.plugins.llm import reset_main_runtime, set_main_runtime
from hermes.redaction import StreamRedactor, redact
from hermes.state.context import wellformed
from hermes.state.context.message import Message
from hermes.state.history import EMPTY_ANSWER_NOTE, EMPTY_RESPONSE_NOTE
from hermes.state.segments import PARTIAL_UID_SUFFIX
from hermes.state.usage import TokenUsage

if TYPE_CHECKING:
    from collections.abc import Callable

    from hermes.agent.host import TurnHost
    from hermes.tools.registry import ToolContext

log = logging.getLogger(__name__)

MAX_EMPTY_RETRIES = 2
PARTIAL_ANSWER = PARTIAL_UID_SUFFIX


@dataclass
class TurnState:
    """The state of one turn as it runs: owned by this module, nobody else writes it."""

    messages: list[Message]
    options: ResolvedOptions
    system_prompt: str | None = None
    # The context is a caller's own history, not the segment's: compressed in memory
    # only (see caller_history).
    detached: bool = False
    iterations: int = 0
    empty_responses: int = 0
    compress_again: bool = True  # False after a no-op compression in this turn
    retried_context: bool = False  # one forced compression per turn after a 400
    answer: str | None = None
    interrupted: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    compressions: list[dict[str, Any]] = field(default_factory=list)
    client_calls: list[dict[str, Any]] = field(default_factory=list)  # for the caller to run
    answer_uid: str | None = None  # the final answer's message_uid, when chosen ahead
    instructions: str | None = None  # the caller's system message for this turn
    streamed: list[str] = field(default_factory=list)  # the current model call's text so far
    streamed_before: int = 0  # characters the turn's earlier model calls streamed
    model_call_since: float | None = None  # monotonic start of the running model call
    waited_for_model: float | None = None  # set when an interrupt stopped a model call
    unsaved_usage: TokenUsage = field(default_factory=TokenUsage)  # with the next write

    def take_unsaved_usage(self) -> TokenUsage:
        usage, self.unsaved_usage = self.unsaved_usage, TokenUsage()
        return usage


# What one model call leads to, decided by ``_next_step`` and acted on by ``_loop``.


@dataclass(frozen=True)
class FinalAnswer:
    response: ModelResponse


@dataclass(frozen=True)
class RunTools:
    response: ModelResponse


@dataclass(frozen=True)
class RetryEmpty:
    """The model said nothing: tell it so and ask again (at most MAX_EMPTY_RETRIES)."""


@dataclass(frozen=True)
class CompressAndRetry:
    """The provider refused the context as too long: compress at once, ask again."""

    error: ContextLengthError


@dataclass(frozen=True)
class Interrupted:
    """The user interrupted before the next model call."""


Step = FinalAnswer | RunTools | RetryEmpty | CompressAndRetry | Interrupted


def _save(host: TurnHost, turn: TurnState, *messages: Message) -> None:
    """Store messages now (invariant 7), with the provider's token figures so far."""
    host.binding.persist(*messages, token_usage=turn.take_unsaved_usage())


@dataclass(frozen=True)
class TurnInput:
    """What a caller gives one turn besides its message (Hermes Agent's keywords)."""

    history: Sequence[Mapping[str, Any]] | None = None  # the caller's (caller_history)
    tool_results: list[dict[str, Any]] | None = None
    answer_uid: str | None = None
    user_uid: str | None = None  # the user message's message_uid, when chosen ahead
    system_message: str | None = None  # this turn's instructions, after the prompt
    persist_user_message: Any = None  # stored in place of the message the model gets
    user_timestamp: float | None = None  # when the user's message was sent
    resume: bool = False  # answer the stored question (a turn a crash cut off)


def resolve(host: TurnHost, options: TurnOptions) -> ResolvedOptions:
    """The turn's options with the agent's own where the caller chose none."""
    mine = host.defaults()
    return ResolvedOptions(
        model=options.model or mine.model,
        instructions=_joined(options.instructions, mine.instructions),
        tools=options.tools,
        client_tools=options.client_tools,
        sampling={**mine.sampling, **options.sampling} if mine.sampling else options.sampling,
        stream_callback=options.stream_callback or mine.stream_callback,
        event_callback=options.event_callback,
        approve=options.approve or mine.approve,
        interactive=options.approve is not None or mine.interactive,
        steering=options.steering,
        keep_partial_answer=options.keep_partial_answer,
        sent_chars=options.sent_chars,
    )


def _joined(*texts: str | None) -> str | None:
    parts = [text.strip() for text in texts if text and text.strip()]
    return "\n\n".join(parts) if parts else None


def run_turn(
    host: TurnHost, user_message: Any, given: TurnInput, options: TurnOptions | None = None
) -> TurnResult:
    resolved = resolve(host, options or TurnOptions())
    binding = host.binding
    host.interruption.clear()
    binding.forget_turn_user_message()
    binding.locate_conversation()
    host.steering.begin()
    try:
        with turn_holding.holding_turn(host), _side_tasks_follow(host, resolved.model):
            binding.ensure_session()  # another turn may have rotated it while we waited
            result = _run_locked(host, user_message, given, resolved)
    except TurnInterrupted:  # while waiting for another turn: nothing was stored
        host.steering.close()
        turn = TurnState(
            messages=[], options=resolved, interrupted=True, system_prompt=binding.system_prompt
        )
        _emit(host, turn, "interrupted")
        return _result(host, turn)
    except BaseException:
        if host.steering.close():
            log.warning("the turn failed; the /steer text it had not taken is dropped")
        raise
    leftover = host.steering.close()
    return dataclasses.replace(result, pending_steer=leftover) if leftover else result


@contextlib.contextmanager
def _side_tasks_follow(host: TurnHost, model: str) -> Iterator[None]:
    """While the turn runs, its side requests (a plugin's or a tool's ``call_llm``) use the
    turn's model, endpoint and key, as 0.19's agent sets its runtime main for its turn."""
    client = host.client
    token = set_main_runtime(
        {"model": model, "base_url": getattr(client, "base_url", ""),
         "api_key": getattr(client, "api_key", "")}
    )  # fmt: skip
    try:
        yield
    finally:
        reset_main_runtime(token)


def _emit(host: TurnHost, turn: TurnState, kind: str, **data: Any) -> None:
    """Tell the agent's owner, then whoever follows this turn (its options)."""
    host.emit(kind, **data)
    follower = turn.options.event_callback
    if follower is not None:
        try:
            follower(kind, data)
        except Exception:  # a follower's display bug must not break the turn
            log.exception("the turn's event callback failed for %s", kind)


def _run_locked(
    host: TurnHost, user_message: Any, given: TurnInput, options: ResolvedOptions
) -> TurnResult:
    binding = host.binding
    read = binding.take_tip_stamp()  # by ensure_session, a moment ago, under the turn lock
    detached = False
    if given.history is None:
        awaiting = [str(r.get("tool_call_id")) for r in given.tool_results or []]
        history = binding.load_history(read, awaiting=awaiting)
        if binding.context_stale:  # made again before any model sees it
            recontext.rebuild_if_stale(host)
            history = binding.load_history(awaiting=awaiting)
    else:
        start = caller_history.reconcile(binding, given.history, read)
        history, detached = start.context, start.detached
        binding.persist(*start.to_store)  # what the store lacked, stored once
    turn = TurnState(
        messages=history,
        options=options,
        system_prompt=binding.segment_system_prompt(),
        detached=detached,
        answer_uid=given.answer_uid,
        instructions=given.system_message,
    )
    plugin_hooks.begin(host, history)
    _open_turn(host, turn, user_message, given)
    # A plugin's context for this turn joins its instructions, never the store.
    turn.instructions = _joined(
        turn.instructions, plugin_hooks.before_turn(host, user_message, turn.messages)
    )
    try:
        _loop(host, turn)
    except TurnInterrupted:
        turn.interrupted = True
        if turn.model_call_since is not None:
            turn.waited_for_model = time.monotonic() - turn.model_call_since
        _keep_partial_answer(host, turn)
    plugin_hooks.after_turn(host, user_message, turn.messages, turn.answer, turn.interrupted)
    usage = turn.take_unsaved_usage()
    if binding.writes_transcript and usage:  # a call whose answer was not stored
        db, segment = binding.bound()
        db.add_token_usage(segment, usage)
    if detached:
        binding.forget_cache()  # the turn's context is the caller's, not the segment's
    else:
        binding.remember(turn.messages)
    if turn.interrupted:
        _emit(host, turn, "interrupted")
    elif review.due(host):
        review.spawn(host, turn.messages)
    return _result(host, turn)


def _open_turn(host: TurnHost, turn: TurnState, user_message: Any, given: TurnInput) -> None:
    """Add and store what starts the turn: the caller's tool results, or the user's
    message (stored as ``persist_user_message`` when given, sent as given)."""
    if given.tool_results:
        answers = _answers_to_open_calls(turn.messages, given.tool_results)
        turn.messages.extend(answers)
        _save(host, turn, *answers)
        return
    if given.resume:  # the question is stored already (a turn a crash cut off)
        return
    sent = user_message or ""
    stored = sent if given.persist_user_message is None else given.persist_user_message
    user = transcript.new_message(
        "user", stored, created_at=given.user_timestamp, message_uid=given.user_uid
    )
    if stored != sent:
        user["api_content"] = sent
    turn.messages.append(user)
    _save(host, turn, user)
    host.binding.count_user_message(user["message_uid"])


def _answers_to_open_calls(messages: list[Message], results: list[dict[str, Any]]) -> list[Message]:
    """Tool messages for a caller's ``results``, each answering an open call."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    open_calls = {
        call["id"]: call["function"]["name"]
        for m in messages
        if m.get("role") == "assistant"
        for call in m.get("tool_calls") or []
        if call.get("id") not in answered
    }
    answers = []
    for result in results:
        call_id = result.get("tool_call_id")
        if call_id not in open_calls:
            raise ToolResultsError(
                f"The tool result for '{call_id}' answers no open tool call of this "
                "conversation; send results only for the tool_calls of the last answer."
            )
        answers.append(
            transcript.new_message(
                "tool",
                str(result.get("content") or ""),
                tool_call_id=call_id,
                tool_name=open_calls.pop(call_id),
            )
        )
    return answers


def _result(host: TurnHost, turn: TurnState) -> TurnResult:
    return TurnResult(
        answer=turn.answer,
        tool_calls=turn.client_calls,
        messages=turn.messages,
        session_id=host.binding.session_id,
        iterations=turn.iterations,
        interrupted=turn.interrupted,
        prompt_tokens=turn.prompt_tokens,
        completion_tokens=turn.completion_tokens,
        compressions=turn.compressions,
        system_prompt=turn.system_prompt,
        waited_for_model=turn.waited_for_model,
    )


def _loop(host: TurnHost, turn: TurnState) -> None:
    """Ask for the next step and act on it, until an answer or the step limit."""
    toolbox, limit = host.toolbox, host.defaults().max_iterations
    tools = toolbox.wire.pieces(
        toolbox.registry, _tool_names(host, turn), turn.options.client_tools
    )
    while turn.iterations < limit:
        step = _next_step(host, turn, tools)
        if isinstance(step, Interrupted):
            raise TurnInterrupted("The turn was interrupted.")
        if isinstance(step, CompressAndRetry):
            if turn.retried_context:
                raise step.error
            turn.retried_context = True
            _learn_window(host, str(step.error))
            _maybe_compress(host, turn, force=True)
        elif isinstance(step, RunTools):
            turn.client_calls = _run_tools(host, turn, step.response)
            if turn.client_calls:  # the caller runs these and sends their results
                turn.answer = step.response.content or ""
                return
        elif isinstance(step, RetryEmpty):
            note = transcript.new_message("user", EMPTY_RESPONSE_NOTE)
            turn.messages.append(note)
            _save(host, turn, note)
        else:
            said = step.response.content or ""
            answer = transcript.new_message(
                "assistant",
                said if said.strip() else EMPTY_ANSWER_NOTE,  # stored marked, shown empty
                reasoning=step.response.reasoning,
                message_uid=turn.answer_uid,
                finish_reason=step.response.finish_reason,
            )
            turn.messages.append(answer)
            _save(host, turn, answer)
            turn.answer = said
            return
    # What the user is shown is what is stored: the notice ends the turn as its answer.
    notice = transcript.new_message(
        "assistant",
        f"I stopped after {limit} steps without a final answer; "
        "ask me to continue if you want me to go on.",
        message_uid=turn.answer_uid,
    )
    turn.messages.append(notice)
    _save(host, turn, notice)
    turn.answer = notice["content"]


def _next_step(host: TurnHost, turn: TurnState, tools: list[bytes]) -> Step:
    """Make the context ready (well-formed, compressed if due), ask the model, and say
    what its answer leads to."""
    if host.interruption.requested:
        return Interrupted()
    _take_steering(host, turn)
    _ensure_well_formed(host, turn)
    _maybe_compress(host, turn)
    _ensure_well_formed(host, turn)  # a no-op unless the compression changed it
    turn.iterations += 1
    # Each model request is a step: its owner hears which tools the last one ran.
    _emit(host, turn, "step", iteration=turn.iterations, tools=_last_tools(turn.messages))
    sent = len(turn.messages)
    system = {"role": "system", "content": _request_system(turn)}
    turn.streamed_before += sum(len(piece) for piece in turn.streamed)
    turn.streamed = []
    stream = _scrubbed_stream(turn)
    plugin_hooks.before_request(host, turn.messages, turn.iterations, len(tools or ()))
    turn.model_call_since = time.monotonic()  # left set if an interrupt ends the call
    try:
        response = plugin_hooks.model_call(
            host,
            partial(host.client.complete, stream_callback=None if stream is None else stream.feed),
            encoded=[encode_message(system), *host.window.wire.pieces],
            encoded_tools=tools,
            model=turn.options.model,
            options=turn.options.sampling,
            call_count=turn.iterations,
        )
    except ContextLengthError as exc:
        turn.model_call_since = None
        return CompressAndRetry(exc)
    turn.model_call_since = None
    if stream is not None:
        stream.flush()
    response = _scrubbed(response)
    _record_usage(host, turn, response, sent)
    if response.tool_calls:
        return RunTools(response)
    if not (response.content or "").strip():
        turn.empty_responses += 1
        if turn.empty_responses <= MAX_EMPTY_RETRIES:
            return RetryEmpty()
    return FinalAnswer(response)


def _request_system(turn: TurnState) -> str:
    """The system message sent: the segment's prompt, then the caller's instructions
    for this turn and this agent's own (one message, since some providers take only
    one). Neither is stored with the segment, so a resume without them works."""
    extras = _joined(turn.instructions, turn.options.instructions)
    return "\n\n".join([turn.system_prompt or "", *([extras] if extras else [])])


def _tool_names(host: TurnHost, turn: TurnState) -> list[str]:
    """The tools offered this turn: the caller's choice (known tools only), else the
    agent's toolset."""
    chosen = turn.options.tools
    if chosen is None:
        return host.toolbox.names()
    return [name for name in chosen if host.toolbox.registry.get(name)]


def _take_steering(host: TurnHost, turn: TurnState) -> None:
    """Guidance sent while the turn runs joins it as user messages before the next
    model call (after the tool results it follows, so the context stays well-formed):
    an API run's before any call, the agent's ``/steer`` after a tool call only (Hermes
    Agent 0.19's "after the next tool call"; what a turn never takes is handed back)."""
    steering = turn.options.steering
    texts = list(steering()) if steering is not None else []
    if turn.messages and turn.messages[-1].get("role") == "tool":
        steered = host.steering.take()
        if steered:
            texts.append(steered)
    for text in texts:
        note = transcript.new_message("user", text)
        turn.messages.append(note)
        _save(host, turn, note)


def _scrubbed(response: ModelResponse) -> ModelResponse:
    """The model's answer without a secret it may repeat from what it was given (a file
    hermes read, a tool's output): what is stored, shown, sent or delivered is this."""
    return dataclasses.replace(
        response,
        content=redact(response.content) if response.content else response.content,
        reasoning=redact(response.reasoning) if response.reasoning else response.reasoning,
    )


def _scrubbed_stream(turn: TurnState) -> StreamRedactor | None:
    """The stream callback behind a ``StreamRedactor``: no streamed piece carries a
    secret, even one split across pieces."""
    kept = _kept_stream(turn)
    return None if kept is None else StreamRedactor(kept)


def _kept_stream(turn: TurnState) -> Any:
    """The stream callback, also keeping the pieces when a partial answer is to be kept."""
    callback = turn.options.stream_callback
    if callback is None or not turn.options.keep_partial_answer:
        return callback

    def keep(text: str) -> None:
        turn.streamed.append(text)
        callback(text)

    return keep


def _keep_partial_answer(host: TurnHost, turn: TurnState) -> None:
    """Store what the interrupted model call had streamed, marked partial (its uid): as
    much of it as the caller was sent, when the caller counts (``sent_chars``)."""
    text = "".join(turn.streamed)
    if turn.options.sent_chars is not None:
        text = text[: max(0, turn.options.sent_chars() - turn.streamed_before)]
    if not (turn.options.keep_partial_answer and text.strip() and host.binding.writes_transcript):
        return
    uid = (turn.answer_uid or transcript.new_message("x")["message_uid"]) + PARTIAL_ANSWER
    answer = transcript.new_message("assistant", text, message_uid=uid)
    turn.messages.append(answer)
    _save(host, turn, answer)
    turn.answer = text


def _maybe_compress(host: TurnHost, turn: TurnState, *, force: bool = False) -> None:
    window = host.window
    if not window.compression_enabled or host.is_fork or not turn.compress_again:
        return
    tokens = window.context_tokens(turn.messages)
    if not force and not window.compressor.should_compress(tokens, turn.messages):
        return
    if window.wire.calls_open:
        return  # invariant 6: never while a tool call awaits its results
    before = len(turn.messages)
    approx = window.estimate_tokens(turn.messages)
    _emit(host, turn, "compressing", tokens=approx)
    # Through the host, so an override of the agent's ``_compress_context`` sees it.
    messages, system_prompt = host.compress(
        turn.messages, turn.system_prompt, approx_tokens=approx, detached=turn.detached
    )
    outcome = window.last_compression
    turn.system_prompt = system_prompt
    if len(messages) == before:
        turn.compress_again = False
        _emit(host, turn, "compression_skipped", reason=outcome.reason if outcome else "")
        return
    turn.messages = messages
    window.forget_prompt_size()  # the provider's figure was for the old context
    if outcome is not None:
        turn.compressions.append(
            {
                "parent": outcome.parent_id,
                "child": outcome.child_id,
                "tokens_before": outcome.tokens_before,
                "tokens_after": outcome.tokens_after,
            }
        )


def _ensure_well_formed(host: TurnHost, turn: TurnState) -> None:
    """Never send a context a provider refuses (invariant 15): repair it instead.

    The window's ``wire`` checks only the messages added since the last look."""
    wire, binding = host.window.wire, host.binding
    wire.sync(turn.messages)
    if wire.well_formed:
        return
    log.warning("the context of %s was not well-formed; repairing it", binding.session_id)
    fixed = wellformed.repair(turn.messages)
    if fixed.synthetic and binding.writes_transcript and binding.holds_turn_lock:
        _save(host, turn, *fixed.synthetic)
    turn.messages = fixed.messages
    wire.sync(turn.messages)


def _learn_window(host: TurnHost, error: str) -> None:
    """Believe the provider's stated context window over our table."""
    match = re.search(r"maximum context length is (\d[\d,]*)", error)
    if match:
        host.window.learn_context_window(int(match.group(1).replace(",", "")))


def _record_usage(host: TurnHost, turn: TurnState, response: Any, sent: int) -> None:
    """Count the call's tokens (``sent``: the context's messages it carried)."""
    prompt, completion = response.prompt_tokens or 0, response.completion_tokens or 0
    turn.prompt_tokens += prompt
    turn.completion_tokens += completion
    host.window.record_prompt_size(prompt, sent)
    if host.binding.writes_transcript:
        # Stored with the next message write, in the same transaction.
        model = response.model or turn.options.model
        turn.unsaved_usage += provider_usage.token_usage(prompt, completion, response.usage, model)


def _run_tools(host: TurnHost, turn: TurnState, response: Any) -> list[dict[str, Any]]:
    """Run the calls of hermes's own tools; the calls of ``client_tools`` are returned,
    left open for the caller."""
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in response.tool_calls
    ]
    theirs = {tool["function"]["name"] for tool in turn.options.client_tools}
    # A message that hands calls to the caller ends the turn: it is the turn's answer.
    ends_turn = any(c.name in theirs for c in response.tool_calls)
    assistant = transcript.new_message(
        "assistant",
        response.content or None,
        tool_calls=calls,
        reasoning=response.reasoning,
        finish_reason=response.finish_reason,
        message_uid=turn.answer_uid if ends_turn else None,
    )
    turn.messages.append(assistant)
    _save(host, turn, assistant)
    context = host.toolbox.context(turn.options, host.interruption.event)
    names = _tool_names(host, turn)
    for call in response.tool_calls:
        if call.name in theirs:
            continue
        if host.interruption.requested:
            result = "Error: interrupted by the user before this tool ran."
        else:
            _emit(host, turn, "tool_start", name=call.name, arguments=call.arguments, id=call.id)
            began = time.monotonic()
            dispatch = partial(_dispatch, host, call.name, context, names)
            result = plugin_hooks.around_tool(
                host, call.name, call.arguments, call.id, dispatch, ask=_plugin_ask(context)
            )
            _emit(
                host,
                turn,
                "tool_end",
                name=call.name,
                id=call.id,
                seconds=time.monotonic() - began,
                error=result.startswith(("Error:", "Refused:")),
            )
        message = transcript.new_message("tool", result, tool_call_id=call.id, tool_name=call.name)
        turn.messages.append(message)
        _save(host, turn, message)
    _check_interrupt(host)
    return [c for c in calls if c["function"]["name"] in theirs]


def _dispatch(
    host: TurnHost, name: str, context: ToolContext, allowed: list[str], arguments: str
) -> str:
    result: str = host.toolbox.registry.dispatch(name, arguments, context, allowed=allowed)
    return result


def _plugin_ask(context: ToolContext) -> Callable[[str, str], bool] | None:
    """How a plugin's ``approve`` directive asks the user: the surface's approval prompt,
    where someone is there to answer it; else None (the call is blocked)."""
    approve = context.approve
    if approve is None or not context.interactive:
        return None
    return lambda tool, why: approve(tool, why or f"a plugin asks before {tool} runs")


def _last_tools(messages: list[Message]) -> list[dict[str, Any]]:
    """The calls of the last assistant message that made any, each with its result:
    ``{"name", "arguments", "result"}`` (``result`` None while unanswered)."""
    for index in range(len(messages) - 1, -1, -1):
        calls = (
            messages[index].get("tool_calls")
            if messages[index].get("role") == "assistant"
            else None
        )
        if calls:
            results = {
                m.get("tool_call_id"): m.get("content")
                for m in messages[index + 1 :]
                if m.get("role") == "tool"
            }
            return [
                {
                    "name": call["function"]["name"],
                    "arguments": call["function"].get("arguments"),
                    "result": results.get(call.get("id")),
                }
                for call in calls
            ]
    return []


def _check_interrupt(host: TurnHost) -> None:
    if host.interruption.requested:
        raise TurnInterrupted("The turn was interrupted.")
