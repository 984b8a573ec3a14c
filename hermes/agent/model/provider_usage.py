"""A provider's ``usage`` block read into the buckets the store keeps.

Providers spell cache figures differently: OpenAI puts cache reads in
``prompt_tokens_details.cached_tokens``; OpenRouter adds ``cache_write_tokens`` there;
Anthropic-style proxies send ``cache_read_input_tokens``/``cache_creation_input_tokens``
at the top; DeepSeek sends ``prompt_cache_hit_tokens``. Reasoning tokens are in
``completion_tokens_details``. ``usage.cost`` is OpenRouter's own charge in USD. The
``usage`` may be a JSON dict (plain answers) or an SDK object (streams).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes.state.usage import TokenUsage


@dataclass(frozen=True)
class UsageDetails:
    """The figures beside ``prompt_tokens``/``completion_tokens``."""

    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None


def details(usage: Any) -> UsageDetails:
    if usage is None:
        return UsageDetails()
    prompt = _get(usage, "prompt_tokens_details")
    completion = _get(usage, "completion_tokens_details")
    read = (
        _int(_get(prompt, "cached_tokens"))
        or _int(_get(usage, "cache_read_input_tokens"))
        or _int(_get(usage, "prompt_cache_hit_tokens"))
    )
    write = _int(_get(prompt, "cache_write_tokens")) or _int(
        _get(usage, "cache_creation_input_tokens")
    )
    cost = _get(usage, "cost")
    return UsageDetails(
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=_int(_get(completion, "reasoning_tokens")),
        cost_usd=float(cost) if isinstance(cost, int | float) and cost >= 0 else None,
    )


def token_usage(
    prompt_tokens: int, completion_tokens: int, extra: UsageDetails, model: str | None
) -> TokenUsage:
    """One call's figures as the store keeps them: ``input_tokens`` is the prompt less
    what the cache served or took (Hermes Agent's meaning)."""
    cached = extra.cache_read_tokens + extra.cache_write_tokens
    return TokenUsage(
        input_tokens=max(0, prompt_tokens - cached),
        output_tokens=completion_tokens,
        cache_read_tokens=extra.cache_read_tokens,
        cache_write_tokens=extra.cache_write_tokens,
        reasoning_tokens=extra.reasoning_tokens,
        api_calls=1,
        cost_usd=extra.cost_usd,
        model=model,
    )


def _get(value: Any, name: str) -> Any:
    if value is None:
        return None
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
