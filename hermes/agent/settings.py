"""The agent's settings, typed: read from ``Config`` once, when an agent is made.

``Config`` is a flat map of dotted keys checked against their types (hermes/config.py);
these frozen dataclasses are what the agent reads afterwards, so no use site looks a
key up by string or casts what it gets.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes.config import Config, EndpointTransport, endpoint_transport


@dataclass(frozen=True)
class ModelSettings:
    name: str
    base_url: str
    request_timeout: float
    max_retries: int
    context_length: int | None  # None: from the model table (tokens.context_window)
    # Headers and certificate check of Hermes Agent's provider entry for the endpoint.
    transport: EndpointTransport

    @classmethod
    def from_config(
        cls, config: Config, *, name: str | None = None, base_url: str | None = None
    ) -> ModelSettings:
        url = base_url or str(config.get("model.base_url"))
        return cls(
            name=name or str(config.get("model.default")),
            base_url=url,
            request_timeout=float(config.get("model.request_timeout")),
            max_retries=int(config.get("model.max_retries")),
            context_length=config.get("model.context_length"),
            transport=endpoint_transport(config, url),
        )


# One frozen record per concern, each read by its own from_config: the fields differ.
@dataclass(frozen=True)
class CompressionSettings:
    enabled: bool
    threshold: float
    summary_model: str | None
    tail_share: float
    max_window: int | None  # the window compression works in, at most (None: the model's)
    cooldown_seconds: float
    max_summary_requests: int
    lease_ttl_seconds: float
    mask_tool_outputs: bool  # old tool results sent as stubs (hermes.agent.masking)
    mask_keep_tokens: int

    @classmethod
    def from_config(cls, config: Config) -> CompressionSettings:
        return cls(
            enabled=bool(config.get("compression.enabled")),
            threshold=float(config.get("compression.threshold")),
            summary_model=config.get("compression.summary_model"),
            tail_share=float(config.get("compression.tail_share")),
            max_window=config.get("compression.max_window"),
            cooldown_seconds=float(config.get("compression.cooldown_seconds")),
            max_summary_requests=int(config.get("compression.max_summary_requests")),
            lease_ttl_seconds=float(config.get("compression.lease_ttl_seconds")),
            mask_tool_outputs=bool(config.get("compression.mask_tool_outputs")),
            mask_keep_tokens=int(config.get("compression.mask_keep_tokens")),
        )


@dataclass(frozen=True)
class AgentOptions:
    """Everything an ``AIAgent`` takes from the configuration, its keywords applied."""

    model: ModelSettings
    compression: CompressionSettings
    max_iterations: int
    review_interval: int  # user turns between background reviews; 0: never

    @classmethod
    def from_config(
        cls,
        config: Config,
        *,
        model: str | None = None,
        base_url: str | None = None,
        max_iterations: int | None = None,
    ) -> AgentOptions:
        return cls(
            model=ModelSettings.from_config(config, name=model, base_url=base_url),
            compression=CompressionSettings.from_config(config),
            max_iterations=max_iterations or int(config.get("agent.max_iterations")),
            review_interval=int(config.get("agent.review_interval") or 0),
        )
