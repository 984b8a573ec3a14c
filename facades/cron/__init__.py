"""Hermes Agent's `cron` package, as a facade over hermes (see facades/README.md)."""
