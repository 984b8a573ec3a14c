"""Hermes Agent's `tools` package, as a facade over hermes (see facades/README.md)."""

__all__ = ["check_file_requirements"]


def check_file_requirements() -> bool:
    """0.19's check that its file tools can run (they need its terminal backend). hermes's
    file tools run in its own process on this machine and need nothing more: True."""
    return True
