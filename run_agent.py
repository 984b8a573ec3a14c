"""Compatibility module: ``from run_agent import AIAgent``."""

from hermes.agent import AIAgent

__all__ = ["AIAgent"]
