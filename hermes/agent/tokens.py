"""Token accounting without a tokenizer: fast estimates and context-window sizes.

The estimate is deliberately crude (about four characters a token, plus a little per
message) because it only has to decide *when* to compress and judge whether a
compaction shrank anything; the provider's reported ``prompt_tokens`` is preferred
whenever it is known. It runs on every turn over the whole transcript, so it stays a
single pass that never serialises a message without tool calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from hermes.errors import ConfigError

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "context_window",
    "estimate_text_tokens",
    "estimate_tokens",
]

CHARS_PER_TOKEN = 4
# Role, separators and framing each message costs on the wire, in characters.
_MESSAGE_OVERHEAD_CHARS = 16
# What an image part costs (OpenAI's high-detail tile figure, rounded), in characters.
_IMAGE_CHARS = 765 * CHARS_PER_TOKEN
# Per tool call: its id, type and the JSON punctuation around name and arguments.
_TOOL_CALL_OVERHEAD_CHARS = 40

DEFAULT_CONTEXT_WINDOW = 128_000


def estimate_text_tokens(text: str | None) -> int:
    """Roughly how many tokens ``text`` is (0 for empty)."""
    if not text:
        return 0
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """Roughly how many prompt tokens ``messages`` cost: content, tool calls, names."""
    chars = 0
    count = 0
    # One loop with everything inlined: this runs over 10k-message transcripts.
    for message in messages:
        count += 1
        content = message.get("content")
        if content.__class__ is str:
            chars += len(content)
        elif content:
            chars += _parts_chars(content)
        tool_calls = message.get("tool_calls")
        if tool_calls:
            chars += _tool_calls_chars(tool_calls)
        if "tool_call_id" in message:
            chars += len(str(message["tool_call_id"] or ""))
    return (chars + count * _MESSAGE_OVERHEAD_CHARS) // CHARS_PER_TOKEN


def _parts_chars(content: Any) -> int:
    """Characters of multimodal content: text parts count, images a fixed amount."""
    if not isinstance(content, list):
        return len(str(content))
    chars = 0
    for part in content:
        if isinstance(part, Mapping):
            text = part.get("text")
            if isinstance(text, str):
                chars += len(text)
            elif part.get("type") in ("image_url", "input_image", "image"):
                chars += _IMAGE_CHARS
        elif isinstance(part, str):
            chars += len(part)
    return chars


def _tool_calls_chars(tool_calls: Any) -> int:
    chars = 0
    for call in tool_calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            chars += len(function.get("name") or "") + len(str(function.get("arguments") or ""))
        chars += _TOOL_CALL_OVERHEAD_CHARS
    return chars


# --------------------------------------------------------------------------- windows

# (pattern, tokens): the first pattern found in the lower-cased model id wins, so more
# specific families come before their general name. Figures are what the provider
# serves by default, erring low where hosts differ: compressing a little early is
# cheap, overflowing the window is a failed request.
_WINDOWS: tuple[tuple[str, int], ...] = (
    # OpenAI
    (r"gpt-5", 400_000),
    (r"gpt-4\.1", 1_047_576),
    (r"gpt-4o", 128_000),
    (r"gpt-4-turbo|gpt-4-\d{4}-preview", 128_000),
    (r"gpt-4-32k", 32_768),
    (r"gpt-4", 8_192),
    (r"gpt-3\.5-turbo", 16_385),
    (r"gpt-oss", 131_072),
    (r"(?:^|/)o[134](?:-|$)", 200_000),
    # Anthropic
    (r"claude", 200_000),
    # Google
    (r"gemini-1\.5-pro", 2_097_152),
    (r"gemini", 1_048_576),
    (r"gemma-?3", 131_072),
    (r"gemma", 8_192),
    # Meta
    (r"llama-?4", 1_048_576),
    (r"llama-?3\.[123]|llama3\.[123]", 131_072),
    (r"llama-?3", 8_192),
    (r"llama-?2", 4_096),
    (r"llama", 131_072),
    # Alibaba
    (r"qwen3-coder", 262_144),
    (r"qwen-?(?:turbo|plus|long)", 1_000_000),
    (r"qwen", 131_072),
    # Mistral
    (r"codestral", 256_000),
    (r"mixtral-8x22b", 65_536),
    (r"mixtral|mistral-7b", 32_768),
    (r"mistral|ministral|devstral|magistral|pixtral", 131_072),
    # Others
    (r"deepseek", 131_072),
    (r"grok-4", 256_000),
    (r"grok", 131_072),
    (r"kimi|moonshot", 131_072),
    (r"glm", 131_072),
    (r"command-r|command-a", 128_000),
    (r"phi-?4", 16_384),
    (r"phi-?3", 131_072),
)
_COMPILED = tuple((re.compile(pattern), tokens) for pattern, tokens in _WINDOWS)


def context_window(model: str | None, override: int | str | None = None) -> int:
    """The context window of ``model`` in tokens; ``override`` (if positive) wins."""
    if override not in (None, ""):
        try:
            value = int(override)  # config files give strings as often as numbers
        except (TypeError, ValueError):
            raise ConfigError(
                f"model.context_length must be a whole number of tokens, not {override!r}."
            ) from None
        if value > 0:
            return value
    name = (model or "").lower()
    for pattern, tokens in _COMPILED:
        if pattern.search(name):
            return tokens
    return DEFAULT_CONTEXT_WINDOW
