"""The context-engine interface Hermes Agent 0.19 defines (its ``agent/context_engine.py``).

A plug-in subclasses ``ContextEngine`` and registers an instance through
``ctx.register_context_engine``; ``context.engine`` in config.yaml selects it by its
``name``. hermes drives it through ``hermes.agent.engine_compressor``: the engine makes
the compacted context, the store keeps its rules (docs/design.md, "Context engines").
The method names and signatures are 0.19's, so a plug-in written for it runs unchanged.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any


class ContextEngine(ABC):
    """Base class all context engines implement (0.19's names and defaults)."""

    # 0.19's public attributes and defaults, one a line where engines read them.
    last_prompt_tokens: int = 0
    last_completion_tokens: int = 0
    last_total_tokens: int = 0
    threshold_tokens: int = 0
    context_length: int = 0
    compression_count: int = 0
    threshold_percent: float = 0.75
    protect_first_n: int = 3
    protect_last_n: int = 6

    @property
    @abstractmethod
    def name(self) -> str:
        """Short identifier, matched against ``context.engine`` (e.g. ``lcm``)."""

    @abstractmethod
    def update_from_response(self, usage: dict[str, Any]) -> None:
        """The usage of the last model call (``prompt_tokens``, ``completion_tokens``, ...)."""

    @abstractmethod
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """True when the context should be compacted now."""

    @abstractmethod
    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        """The compacted message list (OpenAI message dicts)."""

    def should_compress_preflight(self, messages: list[dict[str, Any]]) -> bool:
        return False

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        return False

    def has_content_to_compress(self, messages: list[dict[str, Any]]) -> bool:
        return True

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """A conversation begins (kwargs: hermes_home, platform, model, context_length)."""
        return None

    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """A conversation ends for good (not per turn)."""
        return None

    def on_session_reset(self) -> None:
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """Tools the engine gives the agent (function schemas: name, description,
        parameters)."""
        return []

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        return json.dumps({"error": f"Unknown context engine tool: {name}"})

    def get_status(self) -> dict[str, Any]:
        last_prompt = max(self.last_prompt_tokens, 0)
        share = min(100, last_prompt / self.context_length * 100) if self.context_length else 0
        return {
            "last_prompt_tokens": last_prompt,
            "threshold_tokens": self.threshold_tokens,
            "context_length": self.context_length,
            "usage_percent": share,
            "compression_count": self.compression_count,
        }

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        """The model (and so the window) changed."""
        self.context_length = context_length
        self.threshold_tokens = int(context_length * self.threshold_percent)
