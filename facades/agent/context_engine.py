"""Hermes Agent's ``agent.context_engine``: the ``ContextEngine`` a context-engine plugin
subclasses (hermes-lcm and others), from ``hermes.plugins.engine``."""

from __future__ import annotations

from hermes.plugins.engine import ContextEngine

__all__ = ["ContextEngine"]
