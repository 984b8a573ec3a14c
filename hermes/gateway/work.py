"""Running one work item in a worker thread: the conversation's agent, the turn, the route.

``TurnRunner.run`` is what a lane's worker hands to the thread pool, holding the
conversation's turn lock in the store (``turn_gate``). It finds the conversation's tip
through the router, takes (or makes) the conversation's agent, runs the message,
command or completion event, and, whatever happened (an answer, an error, an
interrupt), moves the route to the agent's session id (unless the key was reset
meanwhile, through any gateway), then gives the turn lock back: only then may this
lane or another gateway start the conversation's next item. Agents are kept per
conversation (least recently used first out) so each keeps its prompt and history
caches between turns; a kept agent is re-pointed at the tip before every turn, and its
history cache is checked against the segment's newest row id and row count, so a
rotation or a turn made by any other gateway is followed. ``run_unstored`` runs a turn
that keeps nothing (the Responses API's ``store: false``) with a fresh agent that has no
store at all.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from hermes.agent import transcript
from hermes.agent.errors import AgentError, ContextLengthError, ModelError, ToolResultsError
from hermes.agent.turn_holding import held_by_caller
from hermes.agent.turn_options import TurnOptions
from hermes.agent.turn_result import TurnResult
from hermes.gateway import commands
from hermes.gateway.core import AgentFactory, ConversationAgent
from hermes.gateway.envelopes import Origin, WorkResult
from hermes.gateway.hooks import TEXT_LIMIT, HookRegistry, step_context, turn_context
from hermes.gateway.lanes import COMMAND, EVENT, MESSAGE, RESUME, Lane, ResultSink, WorkItem
from hermes.gateway.routing import Router, SessionKey
from hermes.gateway.settings import API_PRINCIPALS, CHAT_PLATFORMS, WEBHOOK
from hermes.redaction import redact
from hermes.state.context.message import Message
from hermes.state.errors import StateError
from hermes.state.history import shown_answer

if TYPE_CHECKING:
    from hermes.state.store import SessionDB

log = logging.getLogger(__name__)

# (session key, conversation id, event kind, event data), from any thread.
EventSink = Callable[[str, str, str, dict[str, Any]], None]

MEMBER_SEP = "|"  # between a conversation's id and a group member's in the agents kept

INTERRUPTED_NOTICE = (
    "Your last message was interrupted before I could answer it (hermes stopped "
    "unexpectedly); please send it again."
)


@dataclass(eq=False)
class TurnRunner:
    """Runs work items (in worker threads) with one cached agent per conversation."""

    db: SessionDB
    router: Router
    make_agent: AgentFactory
    _: KW_ONLY
    max_agents: int = 256
    on_agent_event: EventSink | None = None
    resume_interrupted: bool = True
    hooks: HookRegistry | None = None
    # A group chat's members each get an agent of their own (see _agent_key).
    members_apart: bool = True
    # A chat turn's model, when something other than its conversation's is chosen
    # (GatewayRunner._resolve_session_agent_runtime, which tools patch).
    choose_model: Callable[[WorkItem], str | None] | None = None
    _agents: OrderedDict[str, ConversationAgent] = field(default_factory=OrderedDict, init=False)
    _agents_lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def run(self, item: WorkItem, lane: Lane) -> WorkResult:
        hold = item.turn
        if hold is not None and (hold.error or not hold.claim()):
            error = hold.error or "the turn lock was given back before the turn started"
            log.error("turn in %s did not start: %s", item.conversation_id, error)
            return WorkResult(error=error, conversation_id=item.conversation_id)
        try:
            return self._run(item, lane)
        finally:
            if hold is not None:
                hold.release()  # after the route is settled

    def _run(self, item: WorkItem, lane: Lane) -> WorkResult:
        platform = SessionKey.parse(item.key).platform
        if item.kind == EVENT and self._was_reset(item):
            return WorkResult(dropped=True, conversation_id=item.conversation_id)
        agent = self._agent(item, platform)
        lane.agent = agent
        result = WorkResult(conversation_id=item.conversation_id)
        try:
            if item.turn is not None:  # this gateway holds the turn lock for the item
                with held_by_caller(agent.binding):
                    self._answer(item, agent, result)
                    self._close_unanswered(item, agent, result)
            else:
                self._answer(item, agent, result)
        finally:
            self._settle_route(item, agent, platform, result)
        return result

    def run_unstored(self, item: WorkItem) -> WorkResult:
        """A turn that keeps nothing (the Responses API's ``store: false``): a fresh agent
        without the store, its whole context in ``item.asked.history``, no lane, no route."""
        side = item.asked.side_request  # a chat UI's title and such
        agent = self.make_agent(
            session_db=None,
            persist_session=False,
            source=SessionKey.parse(item.key).platform,
            user_id=item.origin.user_id if item.origin else None,
            tools=[] if side else None,
        )
        result = WorkResult()
        try:
            self._answer(item, agent, result)
        finally:
            _close(agent)
        result.model = item.asked.model or agent.model
        return result

    def forget_history(self, conversation_id: str) -> None:
        """The kept agent of the conversation reloads its history from the store next
        turn (messages were marked undone behind its back)."""
        with self._agents_lock:
            agents = [
                agent
                for key, agent in self._agents.items()
                if key == conversation_id or key.startswith(conversation_id + MEMBER_SEP)
            ]
        for agent in agents:
            agent.binding.forget_cache()

    def end_conversation(self, conversation_id: str, key: str, user_id: str | None) -> None:
        """The chat ``key`` left the conversation (``/new``): a plugin's context engine
        hears it ended, through an agent of its own that reads the store and writes
        nothing (the kept agent may still be answering what was queued before)."""
        agent = None
        try:  # whatever happens here, the chat's new conversation starts
            agent = self.make_agent(
                session_id=self.router.tip(conversation_id),
                source=SessionKey.parse(key).platform,
                session_key=key,
                user_id=user_id,
                persist_session=False,
            )
            agent.close_conversation()
        except (AgentError, StateError) as exc:
            log.warning("could not tell the context engine %s ended: %s", conversation_id, exc)
        except Exception:
            log.exception("could not tell the context engine %s ended", conversation_id)
        finally:
            if agent is not None:
                _close(agent)

    def close(self) -> None:
        """Close the kept agents' clients (at shutdown, when no turn runs any more)."""
        with self._agents_lock:
            agents, self._agents = list(self._agents.values()), OrderedDict()
        for agent in agents:
            _close(agent)

    # -- steps ----------------------------------------------------------------------

    def _was_reset(self, item: WorkItem) -> bool:
        """Read from the store: the reset may have come through another gateway."""
        current = self.router.current_conversation(item.key)
        if current is not None and current != item.conversation_id:
            log.info(
                "dropping the completion event of process %s: conversation %s was reset "
                "(%s now routes to %s)",
                item.process_id,
                item.conversation_id,
                item.key,
                current,
            )
            return True
        return False

    def _answer(self, item: WorkItem, agent: ConversationAgent, result: WorkResult) -> None:
        """Run the item; a failure becomes the result's sentence for the user."""
        agent.binding.forget_turn_user_message()  # set by this item's turn, if it stores a question
        try:
            self._run_item(item, agent, result)
        except ToolResultsError as exc:
            result.error, result.caller_fault = str(exc), True
        except AgentError as exc:
            # The sentence reaches the chat or the HTTP caller: no secret a provider echoed.
            result.error = redact(str(exc))
            result.upstream_failed = _endpoint_failed(exc)
            log.warning("turn in %s failed: %s", item.conversation_id, exc)
        except StateError as exc:
            result.error = redact(str(exc))
            log.error("turn in %s hit the store: %s", item.conversation_id, exc)
        except Exception:
            result.error = "hermes failed while answering (the gateway log has the details)"
            log.exception("turn in %s failed", item.conversation_id)

    def _close_unanswered(
        self, item: WorkItem, agent: ConversationAgent, result: WorkResult
    ) -> None:
        """Leave no question without an answer in the store: a failed turn's rows are
        marked undone (its user saw an error, not an answer), a stopped turn stores the
        note its user saw, a cut turn that could not be answered says so."""
        try:
            uid = agent.binding.turn_user_uid
            if result.error and uid:
                undo_turn(self.db, item.conversation_id, uid)
            elif result.error and item.kind == RESUME:
                agent.binding.persist(transcript.new_message("assistant", INTERRUPTED_NOTICE))
            elif result.interrupted and uid and not result.text:
                agent.binding.persist(transcript.new_message("assistant", result.reply_text))
        except (AgentError, StateError) as exc:
            log.error("could not close the unanswered turn of %s: %s", item.conversation_id, exc)

    def _resume(self, item: WorkItem, agent: ConversationAgent, result: WorkResult) -> None:
        """A turn a crash cut off: answered once from the stored history (its tools'
        results say they were interrupted), or its user told to ask again."""
        own_tools = agent.toolbox.registry.names()
        question = self.db.gateway.cut_turn(item.conversation_id, own_tools)
        if question is None:  # answered meanwhile (another gateway got there first)
            result.dropped = True
            return
        if self.resume_interrupted and question:
            log.info("answering the turn a crash cut off in %s", item.conversation_id)
            out = agent.run(None, resume=True)
            result.text = out.answer or ""
            result.interrupted = out.interrupted
            result.waited_for_model = out.waited_for_model
            return
        log.info("telling the user of %s that a crash cut their turn off", item.conversation_id)
        agent.binding.load_history()  # closes the dead turn's open tool calls, once
        agent.binding.persist(transcript.new_message("assistant", INTERRUPTED_NOTICE))
        result.text = INTERRUPTED_NOTICE

    def _finish_earlier_try(
        self, item: WorkItem, agent: ConversationAgent, result: WorkResult
    ) -> bool:
        """A retry that took over the request of a gateway that died (``retries``):
        the earlier try's answer when the store has it (its own, or the one a restart
        gave its cut turn), else its stored question answered now; False when its
        question was never stored (the turn runs as new)."""
        question = self.db.find_message(str(item.asked.user_uid))
        if question is None or question["undone"]:
            return False
        segment = self.db.get_session(question["session_id"]) or {}
        rows = [
            m
            for m in self.db.get_conversation_messages(segment.get("conversation_id") or "")
            if not m["undone"] and not m["compacted"]
        ]
        at = next(
            (i for i, m in enumerate(rows) if m["message_uid"] == question["message_uid"]), -1
        )
        if at < 0:
            return False
        answer = next(
            (m for m in rows[at + 1 :] if m["role"] == "assistant" and not m.get("tool_calls")),
            None,
        )
        if answer is not None:
            log.info("a retry found the answer of its earlier try in %s", item.conversation_id)
            result.text = answer["content"] or ""
            return True
        log.info("a retry answers the question its earlier try stored in %s", item.conversation_id)
        out = agent.run(
            None, resume=True, answer_uid=item.asked.answer_uid, options=turn_options(item)
        )
        result.text = out.answer or ""
        result.interrupted = out.interrupted
        result.waited_for_model = out.waited_for_model
        result.user_message_uid = question["message_uid"]
        result.prompt_tokens = out.prompt_tokens
        result.completion_tokens = out.completion_tokens
        return True

    def _run_item(self, item: WorkItem, agent: ConversationAgent, result: WorkResult) -> None:
        if item.kind == RESUME:
            self._resume(item, agent, result)
            return
        asked = item.asked
        if asked.retried and self._finish_earlier_try(item, agent, result):
            return
        words: str | list[dict[str, Any]] = asked.text
        if item.kind == COMMAND:
            command = commands.parse(asked.text)
            if command is not None and self.hooks is not None:
                self.hooks.emit(f"command:{command.name}", _command_context(item, command))
            if command is None or command.name == "help":
                in_chat = SessionKey.parse(item.key).platform in CHAT_PLATFORMS
                outcome = commands.CommandOutcome(commands.help_text(chat=in_chat))
            else:
                outcome = commands.run(command, agent)
            if outcome.rerun is None:
                result.text = outcome.text
                if asked.keep_exchange:
                    _keep_exchange(agent, item, outcome.text)
                return
            words = outcome.rerun  # /retry: the undone message, answered again
        if item.kind != COMMAND:
            words = asked.user_message  # text with images: as parts
        self._hook_turn("agent:start", item, agent, words)
        out = agent.run(
            words or None,
            conversation_history=asked.history,
            tool_results=_listed(asked.tool_results),
            # The Responses API names the answer ahead: its id is known before it exists.
            answer_uid=asked.answer_uid,
            # A request its client may retry names its question ahead, too (retries.py).
            user_uid=asked.user_uid if item.kind == MESSAGE else None,
            options=self._told_to_step_hooks(self._options(item), item, agent),
        )
        result.text = _shown_answer(out, words)
        result.interrupted = out.interrupted
        result.waited_for_model = out.waited_for_model
        result.user_message_uid = _user_message_uid(out.messages, words)
        result.tool_calls = list(out.tool_calls)
        result.prompt_tokens = out.prompt_tokens
        result.completion_tokens = out.completion_tokens
        result.pending_steer = out.pending_steer
        self._hook_turn("agent:end", item, agent, words, response=result.text or "")

    def _hook_turn(
        self, event: str, item: WorkItem, agent: ConversationAgent, words: Any, **more: str
    ) -> None:
        """Tell the gateway hooks a turn starts or ends (a new conversation's first turn
        is a session start too); they run in the background, never holding it up."""
        hooks = self.hooks
        if hooks is None or not (hooks.wants(event) or hooks.wants("session:start")):
            return
        text = words if isinstance(words, str) else ""
        context = turn_context(item.origin, agent.session_id, text)
        if event == "agent:start" and hooks.wants("session:start") and self._is_new(agent):
            hooks.emit("session:start", {**context, "session_key": item.key})
        for key, value in more.items():
            context[key] = value[:TEXT_LIMIT]
        hooks.emit(event, context)

    def _options(self, item: WorkItem) -> TurnOptions:
        """``turn_options``, with the model ``choose_model`` picks for a chat message
        whose caller named none."""
        options = turn_options(item)
        if options.model is None and self.choose_model is not None and item.kind == MESSAGE:
            chosen = self.choose_model(item)
            if chosen:
                options = replace(options, model=chosen)
        return options

    def _told_to_step_hooks(
        self, options: TurnOptions, item: WorkItem, agent: ConversationAgent
    ) -> TurnOptions:
        """The turn's options, its steps (model requests) told to the ``agent:step`` hooks
        besides whoever follows the turn."""
        hooks = self.hooks
        if hooks is None or not hooks.wants("agent:step"):
            return options
        follower = options.event_callback

        def on_event(kind: str, data: dict[str, Any]) -> None:
            if kind == "step":
                hooks.emit("agent:step", step_context(item.origin, agent.session_id, data))
            if follower is not None:
                follower(kind, data)

        return replace(options, event_callback=on_event)

    def _is_new(self, agent: ConversationAgent) -> bool:
        segment = self.db.get_session(agent.session_id) if agent.session_id else None
        return segment is None or (
            not segment.get("message_count") and not segment.get("parent_session_id")
        )

    def _settle_route(
        self, item: WorkItem, agent: ConversationAgent, platform: str, result: WorkResult
    ) -> None:
        """Move the key's route to where the agent now writes, before anything else runs."""
        try:
            self.router.after_turn(
                item.key, item.conversation_id, agent.session_id, platform=platform
            )
        except StateError as exc:
            log.error("could not update the route of %s: %s", item.key, exc)
        result.session_id = agent.session_id
        result.model = item.asked.model or agent.model

    def _agent(self, item: WorkItem, platform: str) -> ConversationAgent:
        """The conversation's agent, on its tip (a kept agent follows the tip itself when
        its turn starts, so only a new one needs the lookup)."""
        kept = self._agent_key(item)
        with self._agents_lock:
            agent = self._agents.pop(kept, None)
            if agent is not None:
                self._agents[kept] = agent  # most recently used last
        if agent is None:
            agent = self._new_agent(item, platform, self.router.tip(item.conversation_id))
        return agent

    def kept_agent(self, conversation_id: str) -> ConversationAgent | None:
        """The agent kept for the conversation (its last turn's), if any; for /status."""
        with self._agents_lock:
            return self._agents.get(conversation_id) or next(
                (a for k, a in reversed(self._agents.items())
                 if k.startswith(conversation_id + MEMBER_SEP)),
                None,
            )  # fmt: skip

    def acting_user(self, origin: Origin) -> str | None:
        """Whom something a chat user asks for acts as: the sender, and in a group chat
        (members apart) the sender *in that group*, as their turns there do."""
        if self.members_apart and origin.is_group and origin.user_id:
            return group_member(origin)
        return origin.user_id

    def _agent_key(self, item: WorkItem) -> str:
        """Whose agent answers: the conversation's, or in a group chat its speaker's, so
        a member's turns use their own workspace, memory, search scope and skills while
        the conversation stays the group's."""
        origin = item.origin
        if self.members_apart and origin is not None and origin.is_group and origin.user_id:
            return f"{item.conversation_id}{MEMBER_SEP}{origin.user_id}"
        return item.conversation_id

    def _new_agent(self, item: WorkItem, platform: str, tip: str) -> ConversationAgent:
        segment = self.db.get_session(tip) or {}
        origin = item.origin
        key, conversation, kept = item.key, item.conversation_id, self._agent_key(item)
        extra: dict[str, Any] = {}
        if self.on_agent_event is not None:
            sink = self.on_agent_event
            extra["event_callback"] = lambda kind, data: sink(key, conversation, kind, data)
        user = origin.user_id if origin else None
        if platform in (API_PRINCIPALS, WEBHOOK):
            # An API principal's conversation: its turns are that principal's, whoever
            # sent them (the operator may continue it), so they use its workspace and memory.
            # A webhook delivery's is its route's, also when a restart resumes it.
            user = segment.get("user_id")
        if kept != conversation and origin is not None:
            # The group's stored prompt is read by every member's agent: it carries no
            # member's memory nor the context files of a member's workspace.
            extra.update(skip_memory=True, skip_context_files=True)
            user = group_member(origin)
        agent = self.make_agent(
            session_id=tip,
            source=platform,
            session_key=item.key,
            user_id=user,
            model=segment.get("model") or None,
            **extra,
        )
        with self._agents_lock:
            self._agents[kept] = agent
            while len(self._agents) > self.max_agents:
                # Not closed: it may still be answering; its pool goes with it.
                self._agents.popitem(last=False)
        return agent


def group_member(origin: Origin) -> str:
    """The principal a group member's turns act as: that member *in that group*. Every
    member's text is in the group's conversation and may lead any member's turn, so a
    turn there reaches only what that member did in that group (its own workspace, memory
    and skills, its conversations there), never their direct chats' things."""
    return f"{origin.user_id}@{origin.chat_id}"


def _close(agent: ConversationAgent) -> None:
    try:
        agent.client.close()
    except Exception:  # closing a pool must never break the gateway
        log.debug("closing an agent's client failed", exc_info=True)


def _endpoint_failed(exc: AgentError) -> bool:
    """The model endpoint itself failed (not a conversation too long for it)."""
    return isinstance(exc, ModelError) and not isinstance(exc, ContextLengthError)


def turn_options(item: WorkItem) -> TurnOptions:
    """The item's choices for its turn: an API caller's (``request_options``), and the
    sink that follows it (streamed text, tool events, a run's approvals and steering).
    They travel with the turn, never set on the kept agent, so what one caller asked
    never reaches another's turn."""
    asked, sink = item.asked, item.sink
    return TurnOptions(
        model=asked.model,
        instructions=asked.instructions,
        client_tools=asked.client_tools,
        sampling=asked.sampling,
        stream_callback=sink.on_delta if sink is not None and sink.stream else None,
        event_callback=sink.on_event if sink is not None and sink.events else None,
        # Someone follows this turn (an API run): risky commands wait for their answer.
        approve=sink.approve if sink is not None else None,
        steering=sink.steering if sink is not None and sink.approve is not None else None,
        keep_partial_answer=asked.keep_partial_answer,
        sent_chars=_sent_chars(sink) if sink is not None and sink.stream else None,
    )


def _keep_exchange(agent: ConversationAgent, item: WorkItem, answer: str) -> None:
    """Store a command and its answer as chat: a client that sends the whole history
    shows them as messages, and its next request must find them in the conversation."""
    agent.binding.ensure_session()
    user = transcript.new_message("user", item.asked.text)
    # A caller's history, shaped as messages by the HTTP room before it was queued.
    history = [cast(Message, dict(message)) for message in item.asked.history or ()]
    agent.binding.persist(*history, user, transcript.new_message("assistant", answer))


def _shown_answer(out: TurnResult, words: object) -> str:
    """The turn's answer as a streaming client sees it: the text the model wrote beside
    its tool calls, then the final answer (every client is sent the same)."""
    final = out.answer or ""
    messages = out.messages
    start = next(
        (
            i
            for i in range(len(messages) - 1, -1, -1)
            if messages[i].get("role") == "user" and messages[i].get("content") == words
        ),
        None,
    )
    if start is None or out.tool_calls:
        return final
    before = [
        m.get("content") or ""
        for m in messages[start + 1 :]
        if m.get("role") == "assistant" and m.get("tool_calls")
    ]
    return shown_answer(before, final) if any(before) else final


def _user_message_uid(messages: Sequence[Message], words: object) -> str | None:
    """The uid of the turn's own user message (the last user message with its words)."""
    for message in reversed(messages):
        if message.get("role") == "user" and message.get("content") == words:
            uid: str | None = message.get("message_uid")
            return uid
    return None


def undo_turn(db: SessionDB, conversation_id: str, user_message_uid: str) -> int:
    """Mark the turn that began with that user message undone, with all it wrote since
    (the interrupted turn of a shutdown, answered again after the restart)."""
    rows = [m for m in db.get_conversation_messages(conversation_id) if not m["undone"]]
    start = next((i for i, m in enumerate(rows) if m.get("message_uid") == user_message_uid), None)
    if start is None:
        return 0
    db.mark_undone(conversation_id, [m["id"] for m in rows[start:]])
    return len(rows) - start


def _listed(parts: tuple[Mapping[str, Any], ...] | None) -> list[dict[str, Any]] | None:
    return None if parts is None else [dict(part) for part in parts]


def _sent_chars(sink: ResultSink) -> Callable[[], int]:
    """How much of the streamed text the sink's writer has sent so far."""
    return lambda: sink.sent_chars


def _command_context(item: WorkItem, command: Any) -> dict[str, Any]:
    origin = item.origin
    return {
        "platform": getattr(origin, "platform", "") or "",
        "user_id": getattr(origin, "user_id", "") or "",
        "command": command.name,
        "args": command.argument,
    }
