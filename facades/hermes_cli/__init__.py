"""Hermes Agent's `hermes_cli` package, as a facade over hermes (see facades/README.md)."""
