"""What crosses the adapter boundary: incoming messages, reply addresses, work results.

An adapter turns a platform's message into an ``IncomingMessage`` (who wrote what,
where) and later gets back a ``WorkResult`` to send to the ``Origin`` it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hermes.agent.turn_result import stopped_note


@dataclass(frozen=True)
class Origin:
    """Where a message came from, and so where its answer goes."""

    platform: str
    chat_id: str
    thread_id: str | None = None
    user_id: str | None = None
    is_group: bool = False
    message_id: str | None = None  # the platform's id of the message, to reply to it

    def to_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "chat_id": self.chat_id,
            "thread_id": self.thread_id,
            "user_id": self.user_id,
            "is_group": self.is_group,
            "message_id": self.message_id,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Origin:
        return cls(
            platform=str(data["platform"]),
            chat_id=str(data["chat_id"]),
            thread_id=data.get("thread_id"),
            user_id=data.get("user_id"),
            is_group=bool(data.get("is_group")),
            message_id=data.get("message_id"),
        )


@dataclass(frozen=True)
class IncomingMessage:
    """One message from a platform; attachments are text references, never bytes."""

    origin: Origin
    text: str
    user_name: str | None = None
    attachments: tuple[str, ...] = ()

    def full_text(self) -> str:
        """The text the agent sees: the message, then one line per attachment."""
        lines = [self.text] if self.text else []
        lines.extend(self.attachments)
        return "\n".join(lines)


@dataclass
class WorkResult:
    """What one work item produced: an answer, a command's reply, an error or nothing."""

    text: str = ""
    session_id: str | None = None  # the conversation's tip after the item
    conversation_id: str | None = None
    model: str | None = None
    interrupted: bool = False
    waited_for_model: float | None = None  # an interrupted turn's wait for the model
    error: str | None = None  # a sentence for the user when the turn failed
    upstream_failed: bool = False  # the model endpoint failed (error holds operator advice)
    dropped: bool = False  # a completion event of a conversation that was reset
    prompt_tokens: int = 0
    completion_tokens: int = 0
    user_message_uid: str | None = None  # the turn's stored user message, if it got that far
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # for the API caller to run
    caller_fault: bool = False  # the error is the caller's to fix (an HTTP 400)
    pending_steer: str | None = None  # /steer text the turn did not take: the next message
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def reply_text(self) -> str:
        """What a chat shows: the answer, or the error, or a note that it stopped."""
        if self.error:
            return f"Sorry, I could not answer: {self.error}"
        if self.interrupted and not self.text:
            return stopped_note(self.waited_for_model)
        return self.text
