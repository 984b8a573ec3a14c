"""An ``AIAgent`` driven by ``hermes.testing.ScriptedModel`` on a real store, made the
way the tests of the model seam and of the facade make one."""

from __future__ import annotations

from typing import Any

from hermes.agent import AIAgent
from hermes.config import load_config
from hermes.state import SessionDB
from hermes.testing import ScriptedModel


def scripted_agent(
    db: SessionDB, model: ScriptedModel, *, kind: type[AIAgent] = AIAgent, **overrides: Any
) -> AIAgent:
    """``kind``: the native class, or ``run_agent.AIAgent`` for Hermes Agent's names."""
    options: dict[str, Any] = {
        "session_db": db,
        "model_client": model,
        "quiet_mode": True,
        "skip_context_files": True,
        "skip_memory": True,
        "config": load_config(),
    }
    return kind(**(options | overrides))
