"""Token estimates and context-window lookups."""

from __future__ import annotations

import pytest

from hermes.agent.tokens import (
    DEFAULT_CONTEXT_WINDOW,
    context_window,
    estimate_text_tokens,
    estimate_tokens,
)
from hermes.errors import ConfigError


def test_text_tokens_are_about_four_characters_each() -> None:
    assert estimate_text_tokens("") == 0
    assert estimate_text_tokens(None) == 0
    assert estimate_text_tokens("abcd") == 1
    assert estimate_text_tokens("abcde") == 2
    assert estimate_text_tokens("x" * 4_000) == 1_000


def test_empty_transcript_costs_nothing() -> None:
    assert estimate_tokens([]) == 0


def test_each_message_has_an_overhead() -> None:
    one = estimate_tokens([{"role": "user", "content": ""}])
    assert one > 0
    assert estimate_tokens([{"role": "user", "content": ""}] * 10) == 10 * one


def test_content_dominates_long_messages() -> None:
    tokens = estimate_tokens([{"role": "user", "content": "x" * 40_000}])
    assert 10_000 <= tokens <= 10_010


def test_tool_calls_and_ids_count() -> None:
    bare = {"role": "assistant", "content": None}
    calling = {
        **bare,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "terminal", "arguments": '{"command": "' + "l" * 400 + '"}'},
            }
        ],
    }
    result = {"role": "tool", "content": "", "tool_call_id": "call_" + "9" * 40}

    assert estimate_tokens([calling]) >= estimate_tokens([bare]) + 100
    assert estimate_tokens([result]) > estimate_tokens([{"role": "tool", "content": ""}])


def test_multimodal_parts() -> None:
    text_only = [{"role": "user", "content": [{"type": "text", "text": "y" * 400}]}]
    with_image = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "y" * 400},
                {"type": "image_url", "image_url": {"url": "data:..."}},
            ],
        }
    ]

    assert estimate_tokens(text_only) == estimate_tokens([{"role": "user", "content": "y" * 400}])
    assert estimate_tokens(with_image) > estimate_tokens(text_only) + 500


def test_extra_keys_are_not_counted() -> None:
    plain = {"role": "user", "content": "hello"}
    tagged = {**plain, "message_uid": "u" * 200, "created_at": 1.0}

    assert estimate_tokens([tagged]) == estimate_tokens([plain])


def test_accepts_any_iterable() -> None:
    messages = [{"role": "user", "content": "x" * 100}] * 3
    assert estimate_tokens(iter(messages)) == estimate_tokens(messages)


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o-mini", 128_000),
        ("openai/gpt-4.1", 1_047_576),
        ("openai/gpt-5", 400_000),
        ("gpt-4", 8_192),
        ("o3-mini", 200_000),
        ("openai/o1", 200_000),
        ("anthropic/claude-sonnet-4", 200_000),
        ("claude-3-5-haiku-latest", 200_000),
        ("google/gemini-2.5-pro", 1_048_576),
        ("meta-llama/llama-3.1-70b-instruct", 131_072),
        ("qwen/qwen3-coder", 262_144),
        ("Qwen/Qwen2.5-72B-Instruct", 131_072),
        ("mistralai/mistral-large", 131_072),
        ("mistralai/mixtral-8x7b-instruct", 32_768),
        ("deepseek/deepseek-chat", 131_072),
    ],
)
def test_known_families(model: str, window: int) -> None:
    assert context_window(model) == window


def test_unknown_models_get_the_default() -> None:
    assert context_window("test/model") == DEFAULT_CONTEXT_WINDOW == 128_000
    assert context_window("") == DEFAULT_CONTEXT_WINDOW
    assert context_window(None) == DEFAULT_CONTEXT_WINDOW
    # A name that merely contains "o1" is not an OpenAI reasoning model.
    assert context_window("yolo1-chat") == DEFAULT_CONTEXT_WINDOW


def test_override_wins() -> None:
    assert context_window("gpt-4o", 32_000) == 32_000
    assert context_window("gpt-4o", "64000") == 64_000
    assert context_window("gpt-4o", 0) == 128_000
    assert context_window("gpt-4o", None) == 128_000


def test_bad_override_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="context_length"):
        context_window("gpt-4o", "lots")
