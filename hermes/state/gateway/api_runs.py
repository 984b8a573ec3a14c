"""Runs of the HTTP API in the store: their state, their events, what callers send them.

A run (``POST /v1/runs``) is one turn of a conversation that a caller follows by id
from any gateway on the store. ``api_runs`` holds its state, ``api_run_events`` its
events numbered from 1 (a client resumes after the last number it saw), and
``api_run_inputs`` the steering and approval answers sent to it through any gateway,
taken once by the gateway running it. Only that gateway appends events, so their
numbers never race. ``principal`` is the API principal that started it ('' for the
operator's key). ``idempotency_key`` is unique within a principal's runs: a start
retried under the same key finds the run the first one made, whichever gateway or
restart answers it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, TypeVar

from hermes.state import lease
from hermes.state.backend import Row, Tx
from hermes.state.gateway import queue as gateway_queue
from hermes.state.tables import Tables

T = TypeVar("T")

TERMINAL = ("completed", "failed", "cancelled")
_COLUMNS = (
    "id, conversation_id, session_key, status, model, idempotency_key, fingerprint, output,"
    " error, usage, last_event, stop_requested, owner, created_at, updated_at, principal"
)


_BY_KEY = f"SELECT {_COLUMNS} FROM api_runs WHERE principal = ? AND idempotency_key = ?"


class RunEvent(TypedDict):
    seq: int
    event: str
    data: dict[str, Any]


class RunInput(TypedDict):
    id: int
    kind: str
    body: dict[str, Any]


class RunStore(Tables):
    """The runs tables on a SessionDB's backend (blocking calls: use from threads)."""

    # -- runs ---------------------------------------------------------------------------

    def create(
        self,
        run_id: str,
        *,
        conversation_id: str,
        session_key: str,
        model: str | None,
        idempotency_key: str | None = None,
        fingerprint: str | None = None,
        queued: Mapping[str, Any] | None = None,
        owner: str | None = None,
        principal: str | None = None,
    ) -> tuple[dict[str, Any], bool, int | None]:
        """Insert a queued run of ``principal`` (None: the operator) and, in the same
        transaction, its turn's input into ``gateway_queue`` (``queued``: a work item's
        payload, kept for ``owner``): (the run, True, the queue row's id). Under an
        idempotency key the principal already used: (the run that key made, False,
        None), whatever this call's fingerprint."""

        def create(tx: Tx) -> tuple[dict[str, Any], bool, int | None]:
            if idempotency_key is not None:
                found = tx.one(_BY_KEY, (principal or "", idempotency_key))
                if found is not None:
                    return _run(found), False, None
            now = time.time()
            tx.run(
                f"INSERT INTO api_runs ({_COLUMNS}) VALUES"
                " (?, ?, ?, 'queued', ?, ?, ?, NULL, NULL, NULL, NULL, 0, ?, ?, ?, ?)",
                (
                    run_id,
                    conversation_id,
                    session_key,
                    model,
                    idempotency_key,
                    fingerprint,
                    owner,
                    now,
                    now,
                    principal or "",
                ),
            )
            queue_id = None
            if queued is not None:
                text = json.dumps(dict(queued), ensure_ascii=False)
                queue_id = gateway_queue.enqueue(tx, session_key, text, owner, now)
            row = tx.one(f"SELECT {_COLUMNS} FROM api_runs WHERE id = ?", (run_id,))
            assert row is not None
            return _run(row), True, queue_id

        return self._write(create)

    def by_key(self, idempotency_key: str, principal: str | None = None) -> dict[str, Any] | None:
        """The run ``principal`` (None: the operator) started under ``idempotency_key``."""
        row = self._read(lambda tx: tx.one(_BY_KEY, (principal or "", idempotency_key)))
        return _run(row) if row is not None else None

    def get(self, run_id: str) -> dict[str, Any] | None:
        row = self._read(
            lambda tx: tx.one(f"SELECT {_COLUMNS} FROM api_runs WHERE id = ?", (run_id,))
        )
        return _run(row) if row is not None else None

    def update(self, run_id: str, **fields: Any) -> None:
        """Set columns of the run (``usage`` as a dict) and its ``updated_at``."""
        self._write(lambda tx: _update(tx, run_id, fields))

    def request_stop(self, run_id: str) -> dict[str, Any] | None:
        """Ask for the run to stop (a gateway running it sees the flag); None: no such run."""

        def stop(tx: Tx) -> dict[str, Any] | None:
            row = tx.one(f"SELECT {_COLUMNS} FROM api_runs WHERE id = ?", (run_id,))
            if row is None:
                return None
            if row["status"] not in TERMINAL:
                _update(tx, run_id, {"stop_requested": 1, "status": "stopping"})
                row = tx.one(f"SELECT {_COLUMNS} FROM api_runs WHERE id = ?", (run_id,))
                assert row is not None
            return _run(row)

        return self._write(stop)

    def fail_orphans(
        self, holder: str, takeover_after: float, message: str, unqueued: str | None = None
    ) -> list[str]:
        """End the unfinished runs whose gateway is gone (a dead process on this host, or
        no heartbeat for ``takeover_after`` seconds) with a ``run.failed`` event saying
        ``message``; returns their ids. A queued run whose input is still in
        ``gateway_queue`` is answered by whichever gateway takes that input, so it is
        never one of them; one whose input is gone (its gateway died between taking
        the input and starting the turn) fails saying ``unqueued``."""

        def sweep(tx: Tx) -> list[str]:
            rows = tx.all(
                "SELECT id, owner, status, session_key FROM api_runs"
                " WHERE (owner IS NULL OR owner != ?)"
                " AND status IN ('queued', 'running', 'waiting_for_approval', 'stopping')",
                (holder,),
            )
            if not rows:
                return []
            seen = {
                r["holder"]: float(r["seen_at"])
                for r in tx.all("SELECT holder, seen_at FROM gateway_instances")
            }
            cutoff = tx.clock() - takeover_after
            failed = []
            for row in rows:
                owner, at = row["owner"], seen.get(row["owner"] or "")
                alive = at is not None and at >= cutoff and not lease.holder_is_dead(owner)
                if owner is not None and alive:
                    continue
                why = message
                if row["status"] == "queued":
                    if _still_queued(tx, row["id"], row["session_key"]):
                        continue
                    why = unqueued or message
                elif owner is None:
                    continue  # kept at a graceful stop: queued again before the status
                _append(
                    tx,
                    row["id"],
                    [("run.failed", {"run_id": row["id"], "error": why, "timestamp": time.time()})],
                    {"status": "failed", "error": why, "owner": None},
                )
                failed.append(row["id"])
            return failed

        return self._write(sweep)

    # -- events -------------------------------------------------------------------------

    def append(
        self, run_id: str, events: Sequence[tuple[str, dict[str, Any]]], **fields: Any
    ) -> int:
        """Append events (name, data) in order, and set run columns in the same
        transaction; returns the last event's number."""

        return self._write(lambda tx: _append(tx, run_id, events, fields))

    def events_after(self, run_id: str, seq: int, limit: int = 500) -> list[RunEvent]:
        rows = self._read(
            lambda tx: tx.all(
                "SELECT seq, event, data FROM api_run_events WHERE run_id = ? AND seq > ?"
                " ORDER BY seq LIMIT ?",
                (run_id, seq, limit),
            )
        )
        return [
            RunEvent(seq=int(r["seq"]), event=r["event"], data=json.loads(r["data"])) for r in rows
        ]

    # -- inputs (steering, approval answers) --------------------------------------------

    def send(self, run_id: str, kind: str, body: dict[str, Any]) -> int:
        text = json.dumps(body, ensure_ascii=False)
        now = time.time()
        row = self._write(
            lambda tx: tx.one(
                "INSERT INTO api_run_inputs (run_id, kind, body, created_at) VALUES (?, ?, ?, ?)"
                " RETURNING id",
                (run_id, kind, text, now),
            )
        )
        assert row is not None
        return int(row["id"])

    def take_inputs(self, run_id: str) -> tuple[list[RunInput], bool]:
        """The inputs not taken yet (now taken), and whether a stop was asked for."""

        def take(tx: Tx) -> tuple[list[RunInput], bool]:
            run = tx.one("SELECT stop_requested FROM api_runs WHERE id = ?", (run_id,))
            stop = bool(run and run["stop_requested"])
            rows = tx.all(
                "SELECT id, kind, body FROM api_run_inputs WHERE run_id = ? AND taken_at IS NULL"
                " ORDER BY id",
                (run_id,),
            )
            if rows:
                tx.run(
                    "UPDATE api_run_inputs SET taken_at = ? WHERE run_id = ? AND taken_at IS NULL"
                    " AND id <= ?",
                    (time.time(), run_id, rows[-1]["id"]),
                )
            found = [
                RunInput(id=int(r["id"]), kind=r["kind"], body=json.loads(r["body"])) for r in rows
            ]
            return found, stop

        def peek(tx: Tx) -> tuple[bool, bool]:
            row = tx.one(
                "SELECT (SELECT stop_requested FROM api_runs WHERE id = ?) AS stop,"
                " (SELECT COUNT(*) FROM api_run_inputs WHERE run_id = ? AND taken_at IS NULL)"
                " AS waiting",
                (run_id, run_id),
            )
            if row is None:
                return False, False
            return bool(row["stop"]), bool(row["waiting"])

        # Most looks find nothing: read first, write only when there is something to take.
        stop, waiting = self._read(peek)
        if not waiting:
            return [], stop
        return self._write(take)


def _still_queued(tx: Tx, run_id: str, session_key: str) -> bool:
    """The run's own input waits in ``gateway_queue``: a row of its conversation's route
    whose options name this run (not another input that merely quotes its id). A rare
    look, only for a run whose gateway is gone."""
    rows = tx.all("SELECT payload FROM gateway_queue WHERE session_key = ?", (session_key,))
    return any(_run_of(row["payload"]) == run_id for row in rows)


def _run_of(payload: str) -> str | None:
    try:
        options = json.loads(payload).get("options") or {}
    except (ValueError, AttributeError):
        return None
    return options.get("run_id") if isinstance(options, dict) else None


def _append(
    tx: Tx, run_id: str, events: Sequence[tuple[str, dict[str, Any]]], fields: dict[str, Any]
) -> int:
    row = tx.one("SELECT MAX(seq) AS last FROM api_run_events WHERE run_id = ?", (run_id,))
    seq = int(row["last"] or 0) if row is not None else 0
    now = time.time()
    for name, data in events:
        seq += 1
        tx.run(
            "INSERT INTO api_run_events (run_id, seq, event, data, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (run_id, seq, name, json.dumps(data, ensure_ascii=False), now),
        )
    if events:
        fields = {"last_event": events[-1][0], **fields}
    if fields:
        _update(tx, run_id, fields)
    return seq


def _update(tx: Tx, run_id: str, fields: dict[str, Any]) -> None:
    fields = dict(fields)
    if "usage" in fields and not isinstance(fields["usage"], str | None):
        fields["usage"] = json.dumps(fields["usage"])
    fields["updated_at"] = time.time()
    columns = ", ".join(f"{name} = ?" for name in fields)
    tx.run(f"UPDATE api_runs SET {columns} WHERE id = ?", (*fields.values(), run_id))


def _run(row: Row) -> dict[str, Any]:
    run = {name: row[name] for name in _COLUMNS.split(", ")}
    run["usage"] = json.loads(run["usage"]) if run["usage"] else None
    run["stop_requested"] = bool(run["stop_requested"])
    run["principal"] = run["principal"] or None
    return run
