"""Compatibility module: ``from hermes_state import SessionDB``."""

from hermes.state import SessionDB

__all__ = ["SessionDB"]
