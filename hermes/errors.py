"""The root of every error hermes raises on purpose.

    HermesError
    ├── ConfigError            bad config file, key or value
    ├── StateError             the state store (hermes.state.errors has its branch)
    └── AgentError             the agent and its model endpoint (hermes.agent.errors)

Each one's message is a sentence for a person: what is wrong and what to do.
"""

from __future__ import annotations


class HermesError(Exception):
    """Something hermes can explain in one sentence."""


class ConfigError(HermesError):
    """The configuration is wrong; the message names the key (and line)."""
