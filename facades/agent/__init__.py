"""Hermes Agent's `agent` package, as a facade over hermes (see facades/README.md)."""
