"""Hermes Agent 0.19's ``agent.auxiliary_client.call_llm``: one chat completion on hermes's endpoint.

Plug-ins (hermes-lcm's summaries) call it for side work. The endpoint, key and model are
hermes's (``model.base_url``, the key ``hermes setup`` saved, ``model.default``); a
``task="compression"`` call uses ``compression.summary_model`` when one is set. The
answer is the SDK's ChatCompletion, as 0.19 returns it.
"""

from __future__ import annotations

from typing import Any

import openai
from hermes_constants import get_hermes_home

from hermes.cli._env import find_api_key
from hermes.config import load_config

__all__ = ["call_llm"]


def call_llm(
    task: str | None = None,
    *,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    messages: list[dict[str, Any]],
    temperature: float | None = None,
    max_tokens: int | None = None,
    tools: list[dict[str, Any]] | None = None,
    timeout: float | None = None,
    extra_body: dict[str, Any] | None = None,
    **_: Any,
) -> Any:
    """One completion of ``messages``; the provider's errors are raised as the SDK raises them."""
    config = load_config(get_hermes_home() / "config.yaml")
    chosen = model or (config.get("compression.summary_model") if task == "compression" else None)
    options: dict[str, Any] = {"model": chosen or config.get("model.default"), "messages": messages}
    for key, value in (
        ("temperature", temperature),
        ("max_tokens", max_tokens),
        ("tools", tools),
        ("extra_body", extra_body),
    ):
        if value is not None:
            options[key] = value
    client = openai.OpenAI(
        base_url=base_url or config.get("model.base_url"),
        api_key=api_key or find_api_key()[0] or "no-key",  # a local endpoint needs none
        timeout=timeout or float(config.get("model.request_timeout")),
        max_retries=int(config.get("model.max_retries")),
    )
    try:
        return client.chat.completions.create(**options)
    finally:
        client.close()
