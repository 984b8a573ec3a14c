"""Well-formed contexts (docs/design.md, invariant 15): message lists a provider accepts.

One set of rules, as strict as the providers, for every place that needs them: the
agent before each model call and when it loads a conversation, the compressor when it
chooses its cut, and the store before it publishes a compression child.

- every ``tool`` result follows the assistant message whose ``tool_calls`` asked for
  it, with only other results of that same message in between;
- every tool call is answered before the next user, assistant or system message, and
  before the end of the list;
- no assistant message is empty without tool calls.

Messages are dicts with ``role``, ``content``, ``tool_calls`` (a list, or its JSON text
as the store keeps it), ``tool_call_id``; other keys are carried along untouched.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from hermes.state.context.message import Message

INTERRUPTED_RESULT = (
    "Error: interrupted: the process running this tool ended before it finished, so "
    "there is no result. Run it again if it is still needed."
)
ORPHAN_RESULT_NOTE = "[A tool result whose call is no longer in the context]"

# Any message-shaped mapping, typed by the caller (a ``Mapping[str, Any]``, or a store row).
M = TypeVar("M", bound=Mapping[str, Any])


def call_ids(message: Mapping[str, Any]) -> list[str]:
    """The ids of an assistant message's tool calls (none for any other message)."""
    if message.get("role") != "assistant":
        return []
    calls = message.get("tool_calls")
    if isinstance(calls, str):
        try:
            calls = json.loads(calls)
        except ValueError:
            return []
    if not isinstance(calls, list):
        return []
    return [str(c.get("id")) for c in calls if isinstance(c, Mapping) and c.get("id")]


def _call_names(message: Mapping[str, Any]) -> dict[str, str]:
    calls = message.get("tool_calls")
    if isinstance(calls, str):
        calls = json.loads(calls)
    return {
        str(c.get("id")): str((c.get("function") or {}).get("name") or "")
        for c in calls or []
        if isinstance(c, Mapping)
    }


def _is_empty(content: Any) -> bool:
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        return not content
    return False


class Checker:
    """The rules above, fed one message at a time, so a list that only grows is checked
    once per message rather than once per look (the agent checks before every call)."""

    def __init__(self) -> None:
        self.count = 0
        self.found: list[str] = []
        self.waiting: dict[str, int] = {}  # call id -> index of the assistant message asking

    def add(self, message: Mapping[str, Any]) -> None:
        index, self.count = self.count, self.count + 1
        role = message.get("role")
        if role == "tool":
            call = str(message.get("tool_call_id"))
            if self.waiting.pop(call, None) is None:
                self.found.append(
                    f"message {index}: a tool result ({call}) that does not follow the "
                    "call asking for it"
                )
            return
        if self.waiting:
            self.found.append(
                f"message {index}: a {role} message before the tool calls of message "
                f"{min(self.waiting.values())} were answered ({', '.join(sorted(self.waiting))})"
            )
            self.waiting = {}
        ids = call_ids(message)
        if ids:
            self.waiting = dict.fromkeys(ids, index)
        elif role == "assistant" and _is_empty(message.get("content")):
            self.found.append(f"message {index}: an empty assistant message without tool calls")

    def extend(self, messages: Iterable[Mapping[str, Any]]) -> Checker:
        for message in messages:
            self.add(message)
        return self

    @property
    def calls_open(self) -> bool:
        """The last message's tool calls still wait for (some of) their results."""
        return bool(self.waiting)

    def problems(self) -> list[str]:
        """What a provider would refuse in the messages so far (empty: valid)."""
        if not self.waiting:
            return list(self.found)
        return [
            *self.found,
            f"the tool calls of message {min(self.waiting.values())} are never answered "
            f"({', '.join(sorted(self.waiting))})",
        ]

    def copy(self) -> Checker:
        twin = Checker()
        twin.count, twin.found, twin.waiting = self.count, list(self.found), dict(self.waiting)
        return twin


def problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """What a provider would refuse in ``messages``, one sentence each (empty: valid)."""
    return Checker().extend(messages).problems()


def is_well_formed(messages: Sequence[Mapping[str, Any]]) -> bool:
    return not problems(messages)


def normalise(messages: Sequence[M]) -> list[M]:
    """The same messages with each call's results moved to just after it.

    Another writer may store a message between a tool call and its results (a
    background event while the tool ran); the context puts the results back with their
    call and the other message after them. Nothing is dropped or added.
    """
    first_result: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            first_result.setdefault(str(message.get("tool_call_id")), index)
    if not first_result:
        return list(messages)
    out: list[M] = []
    placed: set[int] = set()
    for index, message in enumerate(messages):
        if index in placed:
            continue
        out.append(message)
        placed.add(index)
        for call in call_ids(message):
            result = first_result.get(call)
            if result is not None and result > index and result not in placed:
                out.append(messages[result])
                placed.add(result)
    return out


@dataclass
class Repair:
    """A context made well-formed, and the synthetic results it needed.

    ``synthetic`` are results for calls nobody answered (their turn died): the caller
    that runs the conversation's turn persists them, so they are written once (their
    uids are derived from the call). ``notes`` say what else was changed in memory only.
    """

    messages: list[Message]
    synthetic: list[Message] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.synthetic or self.notes)


def interrupted_result(call_message: Message, call_id: str, tool_name: str) -> Message:
    """The synthetic result of a call whose turn ended without answering it."""
    message: Message = {
        "role": "tool",
        "content": INTERRUPTED_RESULT,
        "tool_call_id": call_id,
    }
    if tool_name:
        message["tool_name"] = tool_name
    uid = call_message.get("message_uid")
    if uid:
        message["message_uid"] = f"{uid}:interrupted:{call_id}"
    return message


def repair(messages: Sequence[Message]) -> Repair:
    """A well-formed version of ``messages``: results back with their calls, an
    "interrupted" result for every unanswered call, an orphan result shown as a note,
    an empty assistant message left out (it says nothing)."""
    fixed = Repair(messages=[])
    ordered = normalise(messages)
    index = 0
    while index < len(ordered):
        message = ordered[index]
        role = message.get("role")
        if role == "tool":
            fixed.notes.append(f"an orphan tool result ({message.get('tool_call_id')})")
            fixed.messages.append(_as_note(message))
            index += 1
            continue
        ids = call_ids(message)
        if not ids:
            if role == "assistant" and _is_empty(message.get("content")):
                fixed.notes.append("an empty assistant message")
            else:
                fixed.messages.append(message)
            index += 1
            continue
        fixed.messages.append(message)
        end, answered, extras = index + 1, set(), []
        while end < len(ordered) and ordered[end].get("role") == "tool":
            call = str(ordered[end].get("tool_call_id"))
            if call in ids and call not in answered:
                answered.add(call)
                fixed.messages.append(ordered[end])
            else:
                fixed.notes.append(f"an extra tool result ({call})")
                extras.append(_as_note(ordered[end]))
            end += 1
        names = _call_names(message)
        for call in ids:
            if call not in answered:
                result = interrupted_result(message, call, names.get(call, ""))
                fixed.synthetic.append(result)
                fixed.messages.append(result)
        fixed.messages.extend(extras)
        index = end
    return fixed


def _as_note(message: Message) -> Message:
    """A tool result no call asks for, shown as a note so its text stays in the context."""
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    note = {k: v for k, v in message.items() if k not in ("tool_call_id", "tool_name", "name")}
    return cast(Message, {**note, "role": "user", "content": f"{ORPHAN_RESULT_NOTE}\n{text or ''}"})
