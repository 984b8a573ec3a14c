"""Hermes Agent's `tools` package, as a facade over hermes (see facades/README.md)."""
