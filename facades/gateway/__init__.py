"""Hermes Agent's `gateway` package, as a facade over hermes (see facades/README.md)."""
