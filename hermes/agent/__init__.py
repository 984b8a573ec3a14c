"""The agent: AIAgent, the turn loop, the compression path and its summariser; the model
transport in ``model/``.

Depends on ``hermes.tools`` and ``hermes.state``; nothing here imports the gateway or
the CLI.
"""

from hermes.agent.agent import AIAgent
from hermes.agent.turn_options import TurnOptions

__all__ = ["AIAgent", "TurnOptions"]
