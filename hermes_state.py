"""Compatibility module: ``from hermes_state import SessionDB`` (Hermes Agent 0.19's names)."""

from hermes.compat.session_db import SessionDB

__all__ = ["SessionDB"]
