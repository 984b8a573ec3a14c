"""hermes: a self-hosted LLM agent whose conversations are durable and never fork."""

__version__ = "0.1.0"
