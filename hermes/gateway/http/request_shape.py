"""Shape checks of a chat-completions body the handler would otherwise trip over.

Each problem is one sentence for a 400 answer, so a malformed request never becomes a
500 with a traceback in the log.
"""

from __future__ import annotations

from typing import Any


def shape_problem(body: dict[str, Any]) -> str | None:
    """What is wrong with the body's optional parts, or None when they are usable."""
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        return "'stream_options' must be an object like {\"include_usage\": true}."
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "image_url":
                image = part.get("image_url")
                if not isinstance(image, dict) or not isinstance(image.get("url", ""), str):
                    return "An 'image_url' part must hold an object with a string 'url'."
    return None
