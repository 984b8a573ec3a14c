"""The agent: AIAgent, the turn loop, the model client, the context compressor.

Depends on ``hermes.tools`` and ``hermes.state``; nothing here imports the gateway or
the CLI.
"""

from hermes.agent.agent import AIAgent

__all__ = ["AIAgent"]
