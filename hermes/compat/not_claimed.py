"""Hermes Agent modules hermes answers only in part, and says so when one is imported.

A module of ``facades/`` either stands in for 0.19's whole (every public name, with 0.19's
behaviour) or is *not claimed*: it keeps the few names Hermes Agent's tools call and, on
import, warns once which names those are and what to use instead. A tool that needs more of
it learns that from the warning, not from a missing attribute later.
"""

from __future__ import annotations

import warnings


class NotStoodInForWarning(UserWarning):
    """hermes answers this Hermes Agent module in part only; the message says which part."""


def say_not_stood_in_for(module: str, *, gives: list[str], instead: str) -> None:
    """Warn, as ``module`` is imported, that hermes gives only ``gives`` of it."""
    warnings.warn(
        f"hermes does not stand in for Hermes Agent's {module}: it gives only "
        f"{', '.join(gives)} here; {instead}",
        NotStoodInForWarning,
        stacklevel=3,
    )
