"""Compatibility module: ``from run_agent import AIAgent`` (Hermes Agent 0.19's keywords)."""

from hermes.compat.agent import AIAgent

__all__ = ["AIAgent"]
