"""What model calls cost, kept where Hermes Agent 0.19 keeps it.

Each segment's ``sessions`` row sums its calls' figures (``input_tokens`` ...
``api_call_count``), and ``session_model_usage`` splits the same figures per model, so a
segment whose model changed mid-way still says which model used what. The buckets mean
what they mean in Hermes Agent: ``input_tokens`` is the prompt *not* read from or
written to the provider's cache (those are ``cache_read_tokens``/``cache_write_tokens``),
``reasoning_tokens`` is the part of ``output_tokens`` spent thinking.

hermes keeps no price table, so ``estimated_cost_usd`` stays NULL; ``actual_cost_usd``
holds what the provider itself reported (OpenRouter's ``usage.cost``), else NULL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from typing import Any

from hermes.state.backend import Tx

__all__ = [
    "COUNTERS",
    "TokenUsage",
    "add_model_usage",
    "backfill_tool_call_counts",
    "figures",
    "record",
    "tool_calls_in",
]


@dataclass(frozen=True)
class TokenUsage:
    """The figures of one or more model calls; ``model`` is the model that answered."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    api_calls: int = 0
    cost_usd: float | None = None  # reported by the provider, never guessed
    model: str | None = None

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self) if f.name != "model")

    def __add__(self, other: TokenUsage) -> TokenUsage:
        if not other:
            return self
        if not self:
            return other
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            api_calls=self.api_calls + other.api_calls,
            cost_usd=cost,
            model=self.model or other.model,
        )

    @classmethod
    def of(cls, value: TokenUsage | tuple[int, int] | None) -> TokenUsage:
        """``value`` as a ``TokenUsage``; an ``(input, output)`` pair is the old form."""
        if value is None:
            return cls()
        if isinstance(value, TokenUsage):
            return value
        return cls(input_tokens=int(value[0] or 0), output_tokens=int(value[1] or 0))

    def with_model(self, model: str | None) -> TokenUsage:
        return replace(self, model=self.model or model)


def record(tx: Tx, session_id: str, usage: TokenUsage, now: float) -> None:
    """Add ``usage`` to the segment and to its per-model row, in the caller's transaction."""
    cost = ""
    params: tuple[Any, ...] = figures(usage)
    if usage.cost_usd is not None:
        cost = (
            ", actual_cost_usd = COALESCE(actual_cost_usd, 0) + ?,"
            " cost_status = 'actual', cost_source = 'provider'"
        )
        params += (float(usage.cost_usd),)
    tx.run(
        "UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,"
        " cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,"
        " reasoning_tokens = reasoning_tokens + ?, api_call_count = api_call_count + ?"
        f"{cost} WHERE id = ?",
        (*params, session_id),
    )
    model = usage.model
    if not model:
        row = tx.one("SELECT model FROM sessions WHERE id = ?", (session_id,))
        model = row["model"] if row else None
    add_model_usage(
        tx,
        session_id,
        (model or "unknown", "", "", ""),
        figures(usage),
        actual_cost_usd=usage.cost_usd or 0.0,
        now=now,
    )


def add_model_usage(
    tx: Tx,
    session_id: str,
    key: tuple[str, ...],
    counters: tuple[int, ...],
    *,
    estimated_cost_usd: float = 0.0,
    actual_cost_usd: float = 0.0,
    cost_status: str | None = None,
    cost_source: str | None = None,
    now: float,
) -> None:
    """Add one call's ``counters`` (``COUNTERS``' order) and costs to the
    ``session_model_usage`` row of ``key`` (model, billing provider, base URL, mode)."""
    tx.run(
        "INSERT INTO session_model_usage (session_id, model, billing_provider,"
        " billing_base_url, billing_mode, task, input_tokens, output_tokens,"
        " cache_read_tokens, cache_write_tokens, reasoning_tokens, api_call_count,"
        " estimated_cost_usd, actual_cost_usd, cost_status, cost_source, first_seen, last_seen)"
        " VALUES (?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (session_id, model, billing_provider, billing_base_url, billing_mode, task)"
        " DO UPDATE SET input_tokens = session_model_usage.input_tokens + excluded.input_tokens,"
        " output_tokens = session_model_usage.output_tokens + excluded.output_tokens,"
        " cache_read_tokens = session_model_usage.cache_read_tokens"
        "   + excluded.cache_read_tokens,"
        " cache_write_tokens = session_model_usage.cache_write_tokens"
        "   + excluded.cache_write_tokens,"
        " reasoning_tokens = session_model_usage.reasoning_tokens + excluded.reasoning_tokens,"
        " api_call_count = session_model_usage.api_call_count + excluded.api_call_count,"
        " estimated_cost_usd = session_model_usage.estimated_cost_usd"
        "   + excluded.estimated_cost_usd,"
        " actual_cost_usd = session_model_usage.actual_cost_usd + excluded.actual_cost_usd,"
        " cost_status = COALESCE(excluded.cost_status, session_model_usage.cost_status),"
        " cost_source = COALESCE(excluded.cost_source, session_model_usage.cost_source),"
        " last_seen = excluded.last_seen",
        (
            session_id,
            *key,
            *counters,
            estimated_cost_usd,
            actual_cost_usd,
            cost_status,
            cost_source,
            now,
            now,
        ),
    )


# The counter columns of ``sessions`` and ``session_model_usage``, as 0.19 names them.
COUNTERS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "api_call_count",
)


def figures(usage: TokenUsage) -> tuple[int, ...]:
    """The counters in the order of ``COUNTERS``."""
    return (
        int(usage.input_tokens or 0),
        int(usage.output_tokens or 0),
        int(usage.cache_read_tokens or 0),
        int(usage.cache_write_tokens or 0),
        int(usage.reasoning_tokens or 0),
        int(usage.api_calls or 0),
    )


def tool_calls_in(tool_calls: str | None) -> int:
    """How many calls a stored ``tool_calls`` text holds (0 if it is not a JSON list)."""
    if not tool_calls:
        return 0
    try:
        calls = json.loads(tool_calls)
    except ValueError:
        return 0
    return len(calls) if isinstance(calls, list) else 0


def backfill_tool_call_counts(tx: Tx) -> None:
    """Count the tool calls each segment's own messages made (copies a rotation wrote
    into a child are the parent's calls, not the child's): the migration's one step
    SQL cannot take on both engines, since a stored text may not be JSON."""
    counts: dict[str, int] = {}
    for row in tx.all(
        "SELECT session_id, tool_calls FROM messages WHERE tool_calls IS NOT NULL AND compacted = 0"
    ):
        counts[row["session_id"]] = counts.get(row["session_id"], 0) + tool_calls_in(
            row["tool_calls"]
        )
    for session_id, count in counts.items():
        if count:
            tx.run("UPDATE sessions SET tool_call_count = ? WHERE id = ?", (count, session_id))
