"""The webhook events a gateway accepted: each once, whichever gateway or restart.

A sender retries an event it thinks was lost (GitHub after a timeout, Stripe for days)
under the same delivery id. ``accept`` inserts one row per (route, delivery id) and the
event's turn into ``gateway_queue`` in the same transaction: the primary key decides
across gateways and hosts, a crash leaves both or neither, and a retry finds the row and
runs nothing. The row also says where the answer goes (``deliver``, ``deliver_extra``
rendered from that event's payload), read again when the answer is ready, even after a
restart, and ``delivered_at`` records that it went. Rows older than ``KEEP`` are
forgotten when new ones arrive.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes.state.backend import Tx
from hermes.state.gateway import queue as gateway_queue
from hermes.state.tables import Tables

KEEP = 7 * 86_400.0  # seconds a delivery id is remembered (senders retry for days)


@dataclass(frozen=True)
class Target:
    """Where one event's answer goes: ``log``, or a chat platform and its options."""

    deliver: str
    extra: Mapping[str, Any]
    delivered: bool = False


class DeliveryStore(Tables):
    """The ``webhook_deliveries`` table (blocking calls: use from threads)."""

    def accept(
        self,
        route: str,
        delivery_id: str,
        target: Target,
        queued: tuple[str, Mapping[str, Any], str | None] | None,
        window: float | None = None,
    ) -> tuple[bool, int | None]:
        """Record the event and queue its turn (``queued``: session key, payload, owner;
        None: nothing to run). (False, None) when the event was accepted before, within
        the last ``window`` seconds if given (else within ``KEEP``)."""
        now = time.time()
        extra = json.dumps(dict(target.extra), ensure_ascii=False)
        since = now - min(window or KEEP, KEEP)

        def accept(tx: Tx) -> tuple[bool, int | None]:
            tx.run("DELETE FROM webhook_deliveries WHERE received_at < ?", (now - KEEP,))
            tx.run(
                "DELETE FROM webhook_deliveries WHERE route = ? AND delivery_id = ?"
                " AND received_at < ?",
                (route, delivery_id, since),
            )
            row = tx.one(
                "INSERT INTO webhook_deliveries (route, delivery_id, deliver, deliver_extra,"
                " received_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (route, delivery_id)"
                " DO NOTHING RETURNING route",
                (route, delivery_id, target.deliver, extra, now),
            )
            if row is None:
                return False, None
            if queued is None:
                return True, None
            key, payload, owner = queued
            text = json.dumps(dict(payload), ensure_ascii=False)
            return True, gateway_queue.enqueue(tx, key, text, owner, now)

        return self._write(accept)

    def forget(self, route: str, delivery_id: str) -> None:
        """Drop the event's row: its delivery failed and a retry should try again."""
        self._write(
            lambda tx: tx.run(
                "DELETE FROM webhook_deliveries WHERE route = ? AND delivery_id = ?",
                (route, delivery_id),
            )
        )

    def target(self, route: str, delivery_id: str) -> Target | None:
        row = self._read(
            lambda tx: tx.one(
                "SELECT deliver, deliver_extra, delivered_at FROM webhook_deliveries"
                " WHERE route = ? AND delivery_id = ?",
                (route, delivery_id),
            )
        )
        if row is None:
            return None
        return Target(
            deliver=str(row["deliver"]),
            extra=json.loads(row["deliver_extra"]),
            delivered=row["delivered_at"] is not None,
        )

    def delivered(self, route: str, delivery_id: str) -> None:
        now = time.time()
        self._write(
            lambda tx: tx.run(
                "UPDATE webhook_deliveries SET delivered_at = ? WHERE route = ? AND"
                " delivery_id = ?",
                (now, route, delivery_id),
            )
        )
