"""How the HTTP API attaches to a gateway's core at start-up (``core.attach_rooms``).

Every gateway on a store may claim an API run from the shared queue, whether or not it
serves the API itself, so every gateway gets the run registry (``live_runs.Runs``)
that records a run's events and outcome while its turn runs there.
"""

from __future__ import annotations

from hermes.gateway.core import ApiHost
from hermes.gateway.http.live_runs import Runs
from hermes.state.gateway.api_runs import RunStore


def attach(host: ApiHost) -> None:
    """Register the HTTP API's run registry with ``host``."""
    db = host.db
    host.register_runs(
        Runs(
            RunStore(db.gateway.backend, read_only=db.gateway.read_only),
            host.holder,
            interrupt=host.interrupt,
            approval_timeout=float(host.config.get("gateway.api_approval_timeout")),
        )
    )
