"""Hermes Agent 0.19's ``agent.auxiliary_client.call_llm``: one chat completion on hermes's endpoint.

Plug-ins (hermes-lcm's summaries) call it for side work. The endpoint, key and model are
hermes's (``model.base_url``, the key ``hermes setup`` saved, ``model.default``); a
``task="compression"`` call uses ``compression.summary_model`` when one is set. The
answer is the SDK's ChatCompletion, as 0.19 returns it. The work is
``hermes.plugins.llm.call_llm``'s; this reads the config of the home in effect (the
web UI's per-request one included).
"""

from __future__ import annotations

from typing import Any

from hermes_constants import get_hermes_home

from hermes.config import load_config
from hermes.plugins.llm import call_llm as _call_llm

__all__ = ["call_llm"]


def call_llm(task: str | None = None, **options: Any) -> Any:
    """One completion of ``options["messages"]``; provider errors raise as the SDK's."""
    return _call_llm(task, config=load_config(get_hermes_home() / "config.yaml"), **options)
