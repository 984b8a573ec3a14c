"""The background review: a read-only fork that saves memories after some turns.

Every ``agent.review_interval`` user turns the agent starts a fork on a daemon thread:
the same model, the same session id and the same system prompt (so the provider's
prompt cache hits), the conversation so far, and one harness prompt asking it to save
durable facts with the ``memory`` tool. Invariant 8: the fork never writes the
transcript, never compresses or rotates, never moves a gateway route and never closes
its parent's resources; its only tool is ``memory``. It is bounded in iterations and
time, and a failure only logs.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes.state.message import Message

if TYPE_CHECKING:
    from hermes.agent.agent import AIAgent

log = logging.getLogger(__name__)

HARNESS_PROMPT = (
    "[Background review] Look back over this conversation. Save, with the memory tool, "
    "durable facts about the user (target 'user') and notes that will help you in later "
    "conversations (target 'memory'). Save only what is new, lasting and useful; skip "
    "what is already in memory. When done, reply with one short line saying what you saved."
)
SKILLS_HINT = (
    " The user lets you keep skills too: when this conversation worked out a reusable "
    "procedure, create a skill with skill_manage, or patch the skill that was used if it "
    "was wrong or missed a step."
)
REVIEW_MAX_ITERATIONS = 6
REVIEW_TIMEOUT = 120.0


@dataclass
class ReviewResult:
    saved: int = 0
    summary: str = ""
    error: str | None = None


def due(agent: AIAgent) -> bool:
    interval = agent.settings.review_interval
    return (
        interval > 0
        and not agent.is_fork
        and agent.session_db is not None
        and agent.user_turns > 0
        and agent.user_turns % interval == 0
    )


def spawn(agent: AIAgent, messages: list[Message]) -> threading.Thread:
    """Start the review on a daemon thread and return it (callers need not wait)."""
    snapshot = [dict(m) for m in messages]
    thread = threading.Thread(
        target=_run_and_report, args=(agent, snapshot), name="background-review", daemon=True
    )
    thread.start()
    agent.review_threads.append(thread)
    return thread


def _run_and_report(agent: AIAgent, messages: list[Message]) -> None:
    result = run(agent, messages)
    if result.error:
        log.warning("background review failed: %s", result.error)
    agent.emit("review", saved=result.saved, summary=result.summary, error=result.error)


def make_fork(agent: AIAgent) -> AIAgent:
    from hermes.agent.agent import AIAgent
    from hermes.tools.toolsets import review_tools

    fork = AIAgent(
        api_key=agent.api_key,
        base_url=agent.base_url,
        model=agent.model,
        quiet_mode=True,
        session_db=agent.session_db,
        session_id=agent.session_id,
        source=agent.source,
        user_id=agent.user_id,
        skip_context_files=agent.skip_context_files,
        skip_memory=agent.skip_memory,
        max_iterations=REVIEW_MAX_ITERATIONS,
        persist_session=False,
        config=agent.config,
        tools=list(review_tools(agent.config)),
        cwd=agent.cwd,
        is_fork=True,
    )
    fork.cap_request_timeout(REVIEW_TIMEOUT)
    # Byte-identical system prompt: the provider's prompt cache keeps hitting.
    fork.adopt_prompt_of(agent)
    return fork


def _harness(fork: AIAgent) -> str:
    return HARNESS_PROMPT + (SKILLS_HINT if "skill_manage" in fork.tool_names() else "")


def run(agent: AIAgent, messages: list[Message]) -> ReviewResult:
    try:
        fork = make_fork(agent)
        watchdog = threading.Timer(REVIEW_TIMEOUT, fork.interrupt)
        watchdog.daemon = True
        watchdog.start()
        try:
            outcome = fork.run_conversation(_harness(fork), conversation_history=messages)
        finally:
            watchdog.cancel()
            fork.client.close()  # the fork's own client, never the parent's
    except Exception as exc:  # a review must never hurt the conversation
        return ReviewResult(error=f"{type(exc).__name__}: {exc}")
    saved = sum(
        1
        for m in outcome["messages"][len(messages) :]
        if m.get("role") == "tool"
        and m.get("tool_name") == "memory"
        and not str(m.get("content", "")).startswith("Error")
    )
    noun = "memory" if saved == 1 else "memories"
    return ReviewResult(saved=saved, summary=f"saved {saved} {noun}")
