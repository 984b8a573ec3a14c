"""Hermes Agent's ``agent.context_engine``: the ``ContextEngine`` a context-engine plugin
subclasses (hermes-lcm and others), from ``hermes.plugins.engine``, and 0.19's
``sanitize_memory_context`` for what a memory provider hands an engine."""

from __future__ import annotations

from hermes import redaction
from hermes.plugins.engine import ContextEngine

MEMORY_CONTEXT_MAX_CHARS = 6_000
# Past the limit, 0.19 keeps the head and the tail (the newest) around a marker.
_HEAD_CHARS, _TAIL_CHARS = 4_000, 1_500
_TRUNCATED = "\n...[memory provider context truncated]...\n"


def sanitize_memory_context(memory_context: str) -> str:
    """A memory provider's context made fit to send to a model: stripped, its secrets
    masked by hermes's redactor (registered values, key shapes, URL passwords), and past
    ``MEMORY_CONTEXT_MAX_CHARS`` its head and tail around a marker, as 0.19 does."""
    clean = redaction.redact(memory_context.strip())
    if len(clean) <= MEMORY_CONTEXT_MAX_CHARS:
        return clean
    return clean[:_HEAD_CHARS] + _TRUNCATED + clean[-_TAIL_CHARS:]


__all__ = ["MEMORY_CONTEXT_MAX_CHARS", "ContextEngine", "sanitize_memory_context"]
