"""The agent: AIAgent, the turn loop, the model client, the context compressor.

Depends on ``hermes.tools`` and ``hermes.state``; nothing here imports the gateway or
the CLI.
"""

from hermes.agent.agent import AIAgent
from hermes.agent.turn_options import TurnOptions

__all__ = ["AIAgent", "TurnOptions"]
