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
  end are masked at once, and counting starts again after it;
- a long result (over ``preview_over`` characters) is sent as its preview from the
  first request on, the running turn's too: its head and tail and the ``recall`` call
  that returns the rest (a command that printed 50 KB costs the whole 50 KB in every
  request of its turn otherwise, where the model mostly needs how it started and
  ended). The stored row keeps it whole, so nothing is written anywhere else. Tools
  the model pages through itself (``recall``, ``read_file``) are never previewed: their
  output is the part it asked for.

A step breaks the provider's cache only from the first newly masked result on, and
what follows it is small once masked: the chat of the few turns since the last step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes.agent.anchors import is_summary_message
from hermes.agent.tokens import CHARS_PER_TOKEN

__all__ = ["STORED_ID", "MaskPolicy", "Planner", "masked_view", "preview", "stub"]

# The key of an agent message that holds the id of the stored row it is (for a copy
# carried into a later segment: the original's id). Not an API key, so the wire form
# never carries it (``hermes.state.context.message.wire_form``).
STORED_ID = "stored_id"

Message = Mapping[str, Any]

# A result longer than this (~2,500 tokens) is sent as a preview of PREVIEW_CHARS.
PREVIEW_OVER = 10_000
PREVIEW_CHARS = 4_000
# Tools whose output is already the part the model asked for (it pages them itself).
PAGED_TOOLS = frozenset({"recall", "read_file"})


def stub(tool_name: str, chars: int, row_id: int) -> str:
    """The one line a masked tool result is sent as (``recall`` matches this shape)."""
    return (
        f"[tool output masked: {tool_name}, {chars} chars; recall(message_id={row_id}) returns it]"
    )


def preview(text: str, row_id: int, chars: int = PREVIEW_CHARS) -> str:
    """A long result as it is sent before it is masked: its head (three quarters of
    ``chars``) and its tail, around a line saying how to get the middle back."""
    head, tail = chars * 3 // 4, chars // 4
    end = len(text) - tail
    return (
        f"{text[:head]}\n\n[output cut for the context: characters {head}-{end} of"
        f" {len(text)} not shown; recall(message_id={row_id}, offset={head}) returns"
        f" them]\n\n{text[end:]}"
    )


@dataclass(frozen=True)
class MaskPolicy:
    """When tool results are masked: see the module's docstring."""

    keep_tokens: int  # results of completed turns kept whole, at most, before a step
    min_chars: int = 400  # a shorter result is cheaper whole than as a stub
    preview_over: int = PREVIEW_OVER  # a longer result is sent as its preview

    def preview_for(self, message: Message) -> str | None:
        """The preview ``message`` is sent as until it is masked; None if it is sent whole."""
        if message.get("role") != "tool" or _name(message) in PAGED_TOOLS:
            return None
        row_id = message.get(STORED_ID)
        text = _text(message.get("content"))
        if row_id is None or len(text) <= self.preview_over:
            return None  # no way back to the rest, or short enough
        return preview(text, int(row_id))

    def plan(self, messages: Sequence[Message]) -> list[str | None]:
        """Each message's stub when it is sent masked (or its preview), else None."""
        planner = Planner(self)
        planner.update(messages)
        return planner.stubs

    def stub_for(self, message: Message) -> str | None:
        """The stub ``message`` is sent as once masked; None if it is never masked."""
        if message.get("role") != "tool":
            return None
        row_id = message.get(STORED_ID)
        text = _text(message.get("content"))
        if row_id is None or len(text) < self.min_chars:
            return None  # no way back to it, or not worth it
        return stub(_name(message), len(text), int(row_id))


class Planner:
    """The plan of a message list that grows, kept up to date from the messages added
    since the last ``update`` (so a long conversation is not walked again per request).
    ``stubs`` is the same as ``MaskPolicy.plan`` of the whole list, which is this."""

    def __init__(self, policy: MaskPolicy) -> None:
        self.policy = policy
        self.stubs: list[str | None] = []
        self._budget = policy.keep_tokens * CHARS_PER_TOKEN
        self._newest_user: int | None = None
        self._walked = 0  # the completed turns before this index are planned
        self._held = 0  # characters of whole results since the last step
        self._since = 0  # where the results not yet masked begin

    def update(self, messages: Sequence[Message]) -> list[int]:
        """Plan the messages added since the last call (``messages`` must begin with the
        ones it saw); returns the indices whose stub changed."""
        changed: list[int] = []
        seen = len(self.stubs)
        self.stubs.extend([None] * (len(messages) - seen))
        for index in range(seen, len(messages)):
            shown = self.policy.preview_for(messages[index])
            if shown is not None:
                self.stubs[index] = shown
                changed.append(index)
            if is_summary_message(messages[index]):
                # Everything before a summary is older than what it covers.
                changed += self._mask(messages, 0, index)
                self._walked = self._since = index + 1
                self._held = 0
            elif _is_user(messages[index]):
                self._newest_user = index
        if self._newest_user is not None:
            changed += self._walk(messages, self._newest_user)
        return changed

    def _walk(self, messages: Sequence[Message], end: int) -> list[int]:
        """Count the results of the completed turns before ``end``; mask them all at the
        end of a turn that takes them past the budget."""
        changed: list[int] = []
        for index in range(self._walked, end):
            message = messages[index]
            if message.get("role") == "tool" and self.policy.stub_for(message):
                self._held += len(_text(message.get("content")))
            if self._held > self._budget and _is_user(messages[index + 1]):
                changed += self._mask(messages, self._since, index + 1)
                self._held, self._since = 0, index + 1
        self._walked = max(self._walked, end)
        return changed

    def _mask(self, messages: Sequence[Message], start: int, end: int) -> list[int]:
        changed = []
        for index in range(start, end):
            # A stub once given stays; a preview gives way to the stub.
            text = self.policy.stub_for(messages[index]) or self.stubs[index]
            if text != self.stubs[index]:
                self.stubs[index] = text
                changed.append(index)
        return changed


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


def _name(message: Message) -> str:
    return str(message.get("tool_name") or message.get("name") or "tool")


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
