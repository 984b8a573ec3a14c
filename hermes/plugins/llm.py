"""The host's model for plugins: what Hermes Agent's ``agent.auxiliary_client.call_llm``
gives them (hermes-lcm writes its summaries with it).

One chat completion on hermes's endpoint and key (``model.base_url``, the API key of
the environment, ``$HERMES_HOME/.env`` or ``model.api_key``), with the model the caller
names, else ``compression.summary_model`` for the ``compression`` task, else
``model.default``. The answer is the openai SDK's ``ChatCompletion``, as in 0.19.
"""

from __future__ import annotations

from typing import Any

from hermes.config import (
    API_KEY_ENV,
    Config,
    api_key_from_env,
    dotenv_values,
    endpoint_transport,
    load_config,
)


def call_llm(
    task: str | None = None,
    *,
    messages: list[dict[str, Any]],
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    tools: list[dict[str, Any]] | None = None,
    timeout: float | None = None,
    extra_body: dict[str, Any] | None = None,
    config: Config | None = None,
    **_: Any,  # 0.19's provider routing and streaming: not offered to plugins here
) -> Any:
    """One completion of ``messages`` (``config``: the home's, else this process's)."""
    import openai

    config = config if config is not None else load_config()
    summary = config.get("compression.summary_model") if task == "compression" else None
    options: dict[str, Any] = {}
    for name, value in (
        ("temperature", temperature),
        ("max_tokens", max_tokens),
        ("tools", tools),
        ("extra_body", extra_body),
    ):
        if value is not None:
            options[name] = value
    settings = endpoint(config, base_url, api_key, timeout)
    transport = endpoint_transport(config, str(settings["base_url"]))
    if transport.headers:  # Hermes Agent's provider entry for the endpoint: as its client
        settings["default_headers"] = dict(transport.headers)
    if isinstance(transport.verify, str):  # a CA file
        import ssl

        ca = ssl.create_default_context(cafile=transport.verify)
        settings["http_client"] = openai.DefaultHttpxClient(verify=ca)
    elif transport.verify is False:
        settings["http_client"] = openai.DefaultHttpxClient(verify=False)
    with openai.OpenAI(**settings) as client:
        return client.chat.completions.create(
            model=model or summary or config.get("model.default"),
            messages=messages,  # type: ignore[arg-type]  # the plugin's OpenAI messages
            **options,
        )


def endpoint(
    config: Config,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """The openai client's settings for hermes's endpoint (or the ``base_url`` and key a
    caller names): ``base_url``, ``api_key``, ``timeout``, ``max_retries``."""
    saved = dotenv_values()
    key = (
        api_key
        or api_key_from_env()
        or next((saved[n] for n in API_KEY_ENV if saved.get(n)), None)
        or config.get("model.api_key")
    )
    return {
        "base_url": base_url or config.get("model.base_url"),
        "api_key": key or "no-key-configured",  # a local endpoint needs none
        "timeout": timeout or float(config.get("model.request_timeout")),
        "max_retries": int(config.get("model.max_retries")),
    }
