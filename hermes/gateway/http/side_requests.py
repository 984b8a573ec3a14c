"""Chat-UI side requests: a chat's title, tags, follow-up questions, search queries.

Chat UIs (Open WebUI first of all) ask the model for these beside every turn with a
request of their own: one user message holding a task template, the chat's recent
history pasted into it between ``<chat_history>`` tags. Such a request is no message
of the user's: it is answered without tools and without becoming a conversation
(``side_request_kind``). Any client may mark a request so with the header
``X-Hermes-Side-Request: 1``.

Its tokens are still counted: in the answer's ``usage``, and on the conversation the
pasted history is the whole of (found by the store's history digests), when there is one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

SIDE_REQUEST_HEADER = "X-Hermes-Side-Request"

# The opening words of the tasks Open WebUI's default templates set, by kind.
_TASKS = {
    "title": "generate a concise, 3-5 word title",
    "tags": "generate 1-3 broad tags categorizing",
    "follow_ups": "suggest 3-5 relevant follow-up questions",
    "queries": "analyze the chat history to determine the necessity of generating search",
    "autocomplete": "you are an autocompletion system",
    "image_prompt": "generate a detailed prompt for am image generation task",
    "emoji": "reflect the speaker's likely facial expression",
}
_TASK_HEADING = re.compile(r"^\s*#{2,4}\s*task:\s*", re.IGNORECASE)
_HISTORY = re.compile(r"<chat_history>\s*(.*?)\s*</chat_history>", re.DOTALL)
_SPEAKER = re.compile(r"^(USER|ASSISTANT):\s?(.*)$")


def side_request_kind(headers: Mapping[str, str], prompt: str) -> str | None:
    """What kind of side request this is (``prompt``: its last user message), or None
    for a message of the user's."""
    if headers.get(SIDE_REQUEST_HEADER, "").strip().lower() in ("1", "true", "yes"):
        return "marked"
    if not _TASK_HEADING.match(prompt):
        return None
    task = _TASK_HEADING.sub("", prompt, count=1).lower()
    for kind, opening in _TASKS.items():
        if task.startswith(opening) or opening in task[:300]:
            return kind
    return "task" if _HISTORY.search(prompt) else None


def pasted_history(prompt: str) -> list[dict[str, Any]]:
    """The chat history a task template holds, as user/assistant messages (a message
    runs until the next ``USER:`` or ``ASSISTANT:`` line)."""
    found = _HISTORY.search(prompt)
    messages: list[dict[str, Any]] = []
    for line in found.group(1).splitlines() if found else []:
        speaker = _SPEAKER.match(line)
        if speaker:
            messages.append({"role": speaker.group(1).lower(), "content": speaker.group(2)})
        elif messages:
            messages[-1]["content"] += "\n" + line
    return messages
