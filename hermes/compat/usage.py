"""Hermes Agent 0.19's ``update_token_counts``: a session's usage, cost and route figures.

The figures go where 0.19 keeps them: the ``sessions`` row (added to, or with
``absolute`` set to the caller's running totals) and, for an added delta,
``session_model_usage`` under the model and billing route of that call. A session's
model and billing route are filled in by the first call that reports usage, and never
overwritten after (one row cannot hold a mixed-provider session).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from hermes.state.backend import Tx
from hermes.state.usage import COUNTERS, TokenUsage, add_model_usage, figures

_ROUTE = ("billing_provider", "billing_base_url", "billing_mode")


@dataclass(frozen=True)
class TokenUpdate:
    """One ``update_token_counts`` call: hermes's own figures of the call, plus the
    cost and billing-route fields only 0.19's callers report."""

    usage: TokenUsage
    estimated_cost_usd: float | None = None
    actual_cost_usd: float | None = None
    cost_status: str | None = None
    cost_source: str | None = None
    pricing_version: str | None = None
    billing_provider: str | None = None
    billing_base_url: str | None = None
    billing_mode: str | None = None

    @property
    def model(self) -> str | None:
        return self.usage.model

    def counters(self) -> tuple[int, ...]:
        """The figures in the order of ``COUNTERS`` (0.19's column names)."""
        return figures(self.usage)

    @property
    def accounted(self) -> bool:
        """Whether the call reports any usage (only then does it name the route)."""
        return any(self.counters()) or bool(self.estimated_cost_usd or self.actual_cost_usd)


def apply(tx: Tx, session_id: str, update: TokenUpdate, *, absolute: bool) -> None:
    """Write ``update`` into the session's row (and per-model row), as 0.19 does."""
    row = tx.one(
        "SELECT model, billing_provider, api_call_count FROM sessions WHERE id = ?",
        (session_id,),
    )
    if row is None:
        return
    if (
        update.accounted
        and update.model
        and update.billing_provider
        and not row["api_call_count"]
        and (row["model"], row["billing_provider"]) != (update.model, update.billing_provider)
    ):
        # The first call that reports usage names the route that actually answered
        # (a fallback may have replaced the one the session was created with).
        tx.run(
            "UPDATE sessions SET model = ?, billing_provider = ?, billing_base_url = ?,"
            " billing_mode = ? WHERE id = ?",
            (update.model, *(getattr(update, k) for k in _ROUTE), session_id),
        )
    sql, params = _session_update(update, absolute=absolute)
    tx.run(sql, (*params, session_id))
    if not absolute and (any(update.counters()) or update.estimated_cost_usd):
        _add_model_usage(tx, session_id, update)


def _session_update(update: TokenUpdate, *, absolute: bool) -> tuple[str, tuple[Any, ...]]:
    sets: list[str] = []
    params: list[Any] = []
    for name, value in zip(COUNTERS, update.counters(), strict=True):
        sets.append(f"{name} = ?" if absolute else f"{name} = COALESCE({name}, 0) + ?")
        params.append(value)
    estimated = float(update.estimated_cost_usd or 0.0)
    sets.append(
        "estimated_cost_usd = ?"
        if absolute
        else "estimated_cost_usd = COALESCE(estimated_cost_usd, 0) + ?"
    )
    params.append(estimated)
    if update.actual_cost_usd is not None:
        sets.append(
            "actual_cost_usd = ?"
            if absolute
            else "actual_cost_usd = COALESCE(actual_cost_usd, 0) + ?"
        )
        params.append(float(update.actual_cost_usd))
    for name in ("cost_status", "cost_source", "pricing_version"):
        if getattr(update, name) is not None:
            sets.append(f"{name} = ?")
            params.append(getattr(update, name))
    if update.accounted:
        for name in (*_ROUTE, "model"):
            if getattr(update, name):
                sets.append(f"{name} = COALESCE({name}, ?)")
                params.append(getattr(update, name))
    return f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", tuple(params)


def _add_model_usage(tx: Tx, session_id: str, update: TokenUpdate) -> None:
    """Add the delta to ``session_model_usage`` under its model and route (the
    session's where the call names none)."""
    row = tx.one(
        "SELECT model, billing_provider, billing_base_url, billing_mode FROM sessions WHERE id = ?",
        (session_id,),
    )
    session = row or {}
    key = (
        update.model or session.get("model") or "unknown",
        *(getattr(update, k) or session.get(k) or "" for k in _ROUTE),
    )
    add_model_usage(
        tx,
        session_id,
        key,
        update.counters(),
        estimated_cost_usd=float(update.estimated_cost_usd or 0.0),
        actual_cost_usd=float(update.actual_cost_usd or 0.0),
        cost_status=update.cost_status,
        cost_source=update.cost_source,
        now=time.time(),
    )
