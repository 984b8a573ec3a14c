"""Hermes Agent 0.19's ``gateway.run``: ``GatewayRunner``, hermes's gateway itself.

Tools that extend 0.19's gateway patch or subclass its documented hook points on this
class; hermes's gateway calls them as 0.19's does:

- ``_resolve_session_agent_runtime(self, *, source=None, session_key=None,
  user_config=None) -> (model, runtime_kwargs)``: the model of a chat's next turn
  (hermes-agent-kit's routing, fallback and rate-limit overrides patch it). A model other
  than the configured one becomes that turn's model; ``session_key`` is hermes's key of
  the chat (``telegram:100``).
"""

from __future__ import annotations

from hermes.gateway.runner import GatewayRunner

__all__ = ["GatewayRunner"]
