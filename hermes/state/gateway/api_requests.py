"""Requests of the HTTP API that may be retried: which try runs the turn, and its answer.

A chat completion or Responses request that a client may retry (it names itself with
``Idempotency-Key`` or ``X-Request-Id``, or its SDK counts its retries) is claimed here
before its turn starts: one row per (principal, key). The first try inserts it, and the
primary key decides the winner across workers, gateways and hosts. The row names the
``message_uid``s its turn's question and answer are stored under (chosen ahead), the
gateway instance running it (``holder``, a ``lease.make_holder`` string) and, once the
turn ended, the answer, which every retry gets for ``WINDOW`` seconds.

A retry that finds the turn still running waits (``look``, a read, until it changes).
A row whose holder is gone (a dead process on this host, or no heartbeat in
``gateway_instances`` for the takeover time, as for the gateway queue) is taken over by
compare-and-set on its ``token``: the taker finishes the turn from what the store holds
under those uids (``hermes.gateway.work``), so a crash mid-turn never leaves a retry
waiting forever nor makes a second stored turn.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from hermes.state import lease
from hermes.state.backend import Row, Tx
from hermes.state.segments import new_message_uid
from hermes.state.tables import Tables

WINDOW = 600.0  # seconds an answer is kept for the retries of its request
STALE = 86_400.0  # seconds after which an unanswered claim nobody retried is forgotten

MINE, ANSWERED, RUNNING = "mine", "answered", "running"
_COLUMNS = "token, status, holder, user_uid, answer_uid, answer, updated_at"


@dataclass(frozen=True)
class Claim:
    """What the store says of a request: this try runs it (``MINE``; ``taken_over``
    when an earlier try's gateway died), it was answered, or another try runs it."""

    status: str
    token: str
    user_uid: str
    answer_uid: str
    answer: Any = None
    taken_over: bool = False


class RequestStore(Tables):
    """The ``api_requests`` table (blocking calls: use from threads)."""

    def claim(
        self, principal: str, key: str, holder: str, *, retry: bool, takeover_after: float
    ) -> Claim:
        """Claim the request for ``holder``. ``retry``: it may repeat an earlier try (else
        it is new whatever the store holds, as a chat UI's "regenerate" is)."""
        return self._write(lambda tx: _claim(tx, principal, key, holder, retry, takeover_after))

    def look(self, principal: str, key: str, takeover_after: float) -> Claim | None:
        """The request as it stands (a read): None when no try holds it any more, or
        when its holder is gone (then ``claim`` takes it over)."""

        def look(tx: Tx) -> Claim | None:
            row = _row(tx, principal, key)
            if row is None or (row["status"] == RUNNING and _gone(tx, row, takeover_after)):
                return None
            return _as_claim(row, row["status"])

        return self._read(look)

    def settle(self, principal: str, key: str, token: str, answer: Any) -> bool:
        """Keep the answer of the try holding ``token``; False if it no longer holds it."""
        text = json.dumps(answer, ensure_ascii=False)
        return self._write(
            lambda tx: (
                tx.run(
                    "UPDATE api_requests SET status = ?, answer = ?, holder = NULL, updated_at = ?"
                    " WHERE principal = ? AND request_key = ? AND token = ?",
                    (ANSWERED, text, tx.clock(), principal, key, token),
                )
                > 0
            )
        )

    def forget(self, principal: str, key: str, token: str) -> None:
        """The try holding ``token`` ran no turn: its retry runs anew."""
        self._write(
            lambda tx: tx.run(
                "DELETE FROM api_requests WHERE principal = ? AND request_key = ? AND token = ?",
                (principal, key, token),
            )
        )


def _claim(
    tx: Tx, principal: str, key: str, holder: str, retry: bool, takeover_after: float
) -> Claim:
    now = tx.clock()
    row = _row(tx, principal, key)
    if row is None:
        _expire(tx, now)
        token, user_uid, answer_uid = _fresh()
        inserted = tx.one(
            "INSERT INTO api_requests (principal, request_key, token, status, holder, user_uid,"
            " answer_uid, answer, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)"
            " ON CONFLICT (principal, request_key) DO NOTHING RETURNING token",
            (principal, key, token, RUNNING, holder, user_uid, answer_uid, now, now),
        )
        if inserted is not None:
            return Claim(MINE, token, user_uid, answer_uid)
        row = _row(tx, principal, key)  # PostgreSQL: another try committed it meanwhile
        assert row is not None
    expired = row["status"] == ANSWERED and float(row["updated_at"]) < now - WINDOW
    if not retry or expired:  # a new request under a key seen before
        token, user_uid, answer_uid = _fresh()
        _take(tx, principal, key, row["token"], holder, now, token, user_uid, answer_uid)
        return Claim(MINE, token, user_uid, answer_uid)
    if row["status"] == ANSWERED:
        return _as_claim(row, ANSWERED)
    if not _gone(tx, row, takeover_after):
        return _as_claim(row, RUNNING)
    token, user_uid, answer_uid = uuid.uuid4().hex, row["user_uid"], row["answer_uid"]
    if not _take(tx, principal, key, row["token"], holder, now, token, user_uid, answer_uid):
        return _as_claim(row, RUNNING)
    return Claim(MINE, token, user_uid, answer_uid, taken_over=True)


def _take(
    tx: Tx,
    principal: str,
    key: str,
    was: str,
    holder: str,
    now: float,
    token: str,
    user_uid: str,
    answer_uid: str,
) -> bool:
    """Compare-and-set on the row's token: False when another try changed it first."""
    return (
        tx.run(
            "UPDATE api_requests SET token = ?, status = ?, holder = ?, user_uid = ?,"
            " answer_uid = ?, answer = NULL, updated_at = ?"
            " WHERE principal = ? AND request_key = ? AND token = ?",
            (token, RUNNING, holder, user_uid, answer_uid, now, principal, key, was),
        )
        > 0
    )


def _row(tx: Tx, principal: str, key: str) -> Row | None:
    return tx.one(
        f"SELECT {_COLUMNS} FROM api_requests WHERE principal = ? AND request_key = ?",
        (principal, key),
    )


def _gone(tx: Tx, row: Row, takeover_after: float) -> bool:
    """The row's holder stopped or died (as ``gateway_queue`` judges a queue's owner)."""
    holder = row["holder"]
    if not holder:
        return True
    beat = tx.one("SELECT seen_at FROM gateway_instances WHERE holder = ?", (holder,))
    if beat is None or float(beat["seen_at"]) < tx.clock() - takeover_after:
        return True
    return lease.holder_is_dead(holder)


def _expire(tx: Tx, now: float) -> None:
    tx.run(
        "DELETE FROM api_requests WHERE updated_at < ? AND (status = ? OR updated_at < ?)",
        (now - WINDOW, ANSWERED, now - STALE),
    )


def _fresh() -> tuple[str, str, str]:
    return uuid.uuid4().hex, new_message_uid(), new_message_uid()


def _as_claim(row: Row, status: str) -> Claim:
    answer = json.loads(row["answer"]) if row["answer"] else None
    return Claim(status, row["token"], row["user_uid"], row["answer_uid"], answer)
