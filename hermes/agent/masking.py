"""Observation masking: old tool outputs reach the model as one-line stubs.

What belongs here: deciding which tool results of the context are sent as a stub
instead of their text, and the stub itself. The store is never touched: every output
stays whole in its row (invariants 9 and 14) and the stub names the row, so the model
can get it back (``recall``). Only what is sent is compacted; the message list the
agent keeps, and the summary model reads, is unchanged, and a stub keeps its role and
``tool_call_id``, so call/result pairing is as before (invariant 15).

The plan is a pure function of the message list that only ever grows as the list
grows, so a message once masked is masked the same way in every later request and the
provider's cached prefix survives. It masks in steps, not one message per turn:

- results before the context's summary are always masked (they are older than what
  the summary covers);
- results of the turn still running (after the newest user message) never are: the
  model is working with them;
- the results of completed turns after the summary are kept whole until, turn by
  turn, they add up to more than ``keep_tokens``; then all of them up to that turn's
  end are masked at once, and counting starts again after it.

A step breaks the provider's cache only from the first newly masked result on, and
what follows it is small once masked: the chat of the few turns since the last step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes.agent.context_compressor import is_summary_message
from hermes.agent.tokens import CHARS_PER_TOKEN

__all__ = ["STORED_ID", "MaskPolicy", "masked_view", "stub"]

# The key of an agent message that holds the id of the stored row it is (for a copy
# carried into a later segment: the original's id). Not an API key, so the wire form
# never carries it (``transcript.api_form``).
STORED_ID = "stored_id"

Message = Mapping[str, Any]


def stub(tool_name: str, chars: int, row_id: int) -> str:
    """The one line a masked tool result is sent as (``recall`` matches this shape)."""
    return (
        f"[tool output masked: {tool_name}, {chars} chars; recall(message_id={row_id}) returns it]"
    )


@dataclass(frozen=True)
class MaskPolicy:
    """When tool results are masked: see the module's docstring."""

    keep_tokens: int  # results of completed turns kept whole, at most, before a step
    min_chars: int = 400  # a shorter result is cheaper whole than as a stub

    def plan(self, messages: Sequence[Message]) -> list[str | None]:
        """Each message's stub when it is sent masked, else None."""
        stubs: list[str | None] = [None] * len(messages)
        summary = _last_summary(messages)
        newest_user = _newest_user(messages)
        for index in range(summary if summary is not None else 0):
            stubs[index] = self._stub_for(messages[index])
        start = 0 if summary is None else summary + 1
        end = start if newest_user is None else max(newest_user, start)
        budget = self.keep_tokens * CHARS_PER_TOKEN
        held = 0  # characters of whole results since the last step
        since = start  # where the results not yet masked begin
        for index in range(start, end):
            message = messages[index]
            if message.get("role") == "tool":
                held += self._maskable_chars(message)
            ends_turn = _is_user(messages[index + 1]) if index + 1 < len(messages) else False
            if ends_turn and held > budget:
                for earlier in range(since, index + 1):
                    stubs[earlier] = self._stub_for(messages[earlier])
                held, since = 0, index + 1
        return stubs

    def _maskable_chars(self, message: Message) -> int:
        return len(_text(message.get("content"))) if self._stub_for(message) else 0

    def _stub_for(self, message: Message) -> str | None:
        if message.get("role") != "tool":
            return None
        row_id = message.get(STORED_ID)
        text = _text(message.get("content"))
        if row_id is None or len(text) < self.min_chars:
            return None  # no way back to it, or not worth it
        name = message.get("tool_name") or message.get("name") or "tool"
        return stub(str(name), len(text), int(row_id))


def masked_view(messages: Sequence[Message], policy: MaskPolicy | None) -> list[Message]:
    """The messages as the model is sent them: masked results replaced by their stubs."""
    if policy is None:
        return list(messages)
    return [
        message if text is None else masked(message, text)
        for message, text in zip(messages, policy.plan(messages), strict=True)
    ]


def masked(message: Message, text: str) -> dict[str, Any]:
    """A copy of ``message`` whose content is ``text`` (what the model is sent)."""
    copy = {key: value for key, value in message.items() if key != "api_content"}
    copy["content"] = text
    return copy


def _last_summary(messages: Sequence[Message]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if is_summary_message(messages[index]):
            return index
    return None


def _newest_user(messages: Sequence[Message]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if _is_user(messages[index]):
            return index
    return None


def _is_user(message: Message) -> bool:
    return message.get("role") == "user" and not is_summary_message(message)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return "" if content is None else str(content)
