"""Hermes Agent's ``gateway.hooks``: the gateway event hooks of ``$HERMES_HOME/hooks/``
(``HookRegistry`` with 0.19's no-argument constructor and awaitable ``emit``), from
``hermes.gateway.hooks``."""

from __future__ import annotations

from typing import Any

from hermes.config import hermes_home, load_config
from hermes.gateway import hooks as _hooks

HOOKS_DIR = hermes_home() / "hooks"


class HookRegistry(_hooks.HookRegistry):
    """0.19's registry: ``HookRegistry()``, ``discover_and_load()``, ``await emit(...)``."""

    def __init__(self) -> None:
        super().__init__(hermes_home(), float(load_config().get("gateway.hook_timeout")))

    async def emit(self, event_type: str, context: dict[str, Any] | None = None) -> None:  # type: ignore[override]
        super().emit(event_type, context)

    async def emit_collect(
        self, event_type: str, context: dict[str, Any] | None = None
    ) -> list[Any]:
        """0.19's decision hooks: hermes delivers in the background, so nothing is
        collected (hermes's slash commands take no hook's decision)."""
        super().emit(event_type, context)
        return []


__all__ = ["HOOKS_DIR", "HookRegistry"]
