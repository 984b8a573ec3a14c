"""The gateway queue's owners: a gateway never takes input another live gateway queued.

Each test runs on SQLite and on PostgreSQL; "gateways" are holder strings on their own
``SessionDB`` (as two gateway processes or hosts would be), dead ones real exited pids.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter

from hermes.state import SessionDB, make_holder
from hermes.state.backend import Backend

from . import workers
from .helpers import StoreSpec, raw_all
from .procs import CTX, Processes, dead_pid

TAKEOVER = 120.0
RACERS = 3
ROUNDS = 8


def queue(db: SessionDB, owner: str | None, *texts: str) -> list[int]:
    return [db.gateway.enqueue_gateway_input("telegram:1", {"text": t}, owner=owner) for t in texts]


def owners(db: SessionDB) -> dict[int, str | None]:
    return {r["id"]: r["owner"] for r in db.gateway.pending_gateway_inputs()}


def start(db: SessionDB, holder: str) -> list[int]:
    """What a starting gateway does: claim; the ids it got."""
    return [r["id"] for r in db.gateway.claim_gateway_inputs(holder, takeover_after=TAKEOVER)]


def age_heartbeat(store: StoreSpec, holder: str, seconds: float) -> None:
    store.execute(
        "UPDATE gateway_instances SET seen_at = seen_at - ? WHERE holder = ?", (seconds, holder)
    )


def test_rows_of_a_live_gateway_stay_its_own(make_db) -> None:
    a_db, b_db = make_db(), make_db()
    a, b = make_holder(), make_holder()
    assert start(a_db, a) == []
    mine = queue(a_db, a, "one", "two")
    assert start(b_db, b) == []
    assert owners(b_db) == dict.fromkeys(mine, a)
    assert not b_db.gateway.delete_gateway_input(mine[0], owner=b)  # not B's to delete
    assert not b_db.gateway.delete_gateway_input(mine[0])  # nor anyone's while A owns it
    assert a_db.gateway.delete_gateway_input(mine[0], owner=a)
    assert not a_db.gateway.delete_gateway_input(mine[0], owner=a)  # already gone
    assert owners(b_db) == {mine[1]: a}


def test_released_rows_go_to_the_next_start(make_db) -> None:
    a_db, b_db = make_db(), make_db()
    a, b = make_holder(), make_holder()
    start(a_db, a)
    older = queue(a_db, None, "from before owners")  # as migration 5 leaves old rows
    kept = queue(a_db, a, "kept at the stop")
    assert a_db.gateway.release_gateway_inputs(a) == 1
    assert owners(a_db) == dict.fromkeys(older + kept, None)
    assert start(b_db, b) == older + kept
    assert owners(a_db) == dict.fromkeys(older + kept, b)
    assert not a_db.gateway.delete_gateway_input(kept[0], owner=a)  # A gave it away
    assert raw_all(a_db, "SELECT holder FROM gateway_instances") == [{"holder": b}]


def test_rows_of_a_dead_process_on_this_host_are_taken(make_db) -> None:
    db = make_db()
    dead = f"{socket.gethostname()}:pid={dead_pid()}:agent=crashed"
    db.gateway.gateway_heartbeat(dead)  # fresh, but the process is gone
    lost = queue(db, dead, "asked just before the crash")
    me = make_holder()
    assert start(make_db(), me) == lost
    assert owners(db) == dict.fromkeys(lost, me)
    assert [r["holder"] for r in raw_all(db, "SELECT holder FROM gateway_instances")] == [me]


def test_rows_of_a_silent_host_are_taken_after_the_takeover_time(make_db, store: StoreSpec) -> None:
    db = make_db()
    quiet, busy = "other-host:pid=1:agent=quiet", "other-host:pid=2:agent=busy"
    db.gateway.gateway_heartbeat(quiet)
    db.gateway.gateway_heartbeat(busy)
    silent, alive = queue(db, quiet, "q1", "q2"), queue(db, busy, "b1")
    unknown = queue(db, "third-host:pid=3:agent=never-seen", "no heartbeat at all")
    age_heartbeat(store, quiet, TAKEOVER - 30)
    age_heartbeat(store, busy, TAKEOVER - 30)
    me = make_holder()
    assert start(make_db(), me) == unknown  # the others beat within the takeover time
    age_heartbeat(store, quiet, 60)
    db.gateway.gateway_heartbeat(busy)
    assert start(make_db(), me) == silent
    assert owners(db) == {**dict.fromkeys(silent + unknown, me), **dict.fromkeys(alive, busy)}


def test_threads_racing_to_claim_never_share_a_row(make_db) -> None:
    db = make_db()
    holders = [make_holder() for _ in range(RACERS)]
    dbs = [make_db() for _ in holders]
    barrier = threading.Barrier(RACERS + 1)
    claims: list[tuple[int, str, list[int]]] = []
    errors: list[BaseException] = []

    def racer(mine: SessionDB, holder: str) -> None:
        try:
            for n in range(ROUNDS):
                barrier.wait(timeout=60)
                got = mine.gateway.claim_gateway_inputs(holder, takeover_after=TAKEOVER)
                claims.append((n, holder, [r["id"] for r in got]))
                barrier.wait(timeout=60)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=racer, args=pair) for pair in zip(dbs, holders, strict=True)]
    for t in threads:
        t.start()
    expected = {}
    try:
        for n in range(ROUNDS):
            expected[n] = _plant_round(db, n)
            barrier.wait(timeout=60)  # go
            barrier.wait(timeout=60)  # every racer has claimed
    finally:
        for t in threads:
            t.join(120)
    assert not errors, errors
    _assert_each_row_claimed_once(db, expected, claims)


def test_processes_racing_to_claim_never_share_a_row(db: SessionDB, store: StoreSpec) -> None:
    barrier = CTX.Barrier(RACERS + 1)
    expected = {}
    with Processes() as procs:
        for _ in range(RACERS):
            procs.start(workers.race_queue_claims, store, ROUNDS, barrier)
        try:
            for n in range(ROUNDS):
                expected[n] = _plant_round(db, n)
                barrier.wait(timeout=120)  # go
                barrier.wait(timeout=120)  # every racer has claimed
        except threading.BrokenBarrierError:
            time.sleep(1)
            procs.poll()  # fails with the worker's traceback
            raise
        claims = procs.expect("claimed", RACERS * ROUNDS)
    _assert_each_row_claimed_once(db, expected, claims)


def test_rows_from_before_migration_5_are_released(store: StoreSpec) -> None:
    migrations_4 = _backend(store)
    try:
        from hermes.state.schema import migrations

        migrations.apply(migrations_4, _schema(store)[:4])
        migrations_4.transact(
            lambda tx: tx.run(
                "INSERT INTO gateway_queue (session_key, payload, enqueued_at) VALUES (?, ?, ?)",
                ("telegram:1", '{"text": "queued by an older hermes"}', 1.0),
            ),
            write=True,
        )
    finally:
        migrations_4.close()
    with store.open() as db:
        [row] = db.gateway.pending_gateway_inputs()
        assert row["owner"] is None and row["payload"] == {"text": "queued by an older hermes"}
        me = make_holder()
        assert start(db, me) == [row["id"]]


# -- helpers ---------------------------------------------------------------------------


def _plant_round(db: SessionDB, n: int) -> list[int]:
    """Claimable rows of every kind, and a live gateway's rows nobody may take."""
    dead = f"{socket.gethostname()}:pid={dead_pid()}:agent=round{n}"
    live = f"round{n}-live"
    db.gateway.gateway_heartbeat(live)
    queue(db, live, f"{n}: the live gateway's")
    return [
        *queue(db, None, *(f"{n}: released {k}" for k in range(5))),
        *queue(db, dead, *(f"{n}: dead {k}" for k in range(3))),
        *queue(db, f"gone-host:pid=1:agent=round{n}", f"{n}: no heartbeat"),
    ]


def _assert_each_row_claimed_once(
    db: SessionDB, expected: dict[int, list[int]], claims: list[tuple[int, str, list[int]]]
) -> None:
    taken = Counter(i for _, _, ids in claims for i in ids)
    assert set(taken) == {i for ids in expected.values() for i in ids}
    assert max(taken.values()) == 1, [i for i, k in taken.items() if k > 1]
    final = owners(db)
    for _, holder, ids in claims:
        assert all(final[i] == holder for i in ids)
    live = [r for r in db.gateway.pending_gateway_inputs() if r["owner"].endswith("-live")]
    assert len(live) == len(expected)  # nobody took a live gateway's rows


def _backend(store: StoreSpec) -> Backend:
    from pathlib import Path

    if store.kind == "sqlite":
        from hermes.state.sqlite.backend import SQLiteBackend

        return SQLiteBackend(Path(store.path or ""))
    from hermes.state.postgres.backend import PostgresBackend

    return PostgresBackend(store.url or "")


def _schema(store: StoreSpec) -> tuple:
    if store.kind == "sqlite":
        from hermes.state.sqlite.schema import MIGRATIONS
    else:
        from hermes.state.postgres.schema import MIGRATIONS
    return MIGRATIONS


def test_a_claim_takes_only_what_it_accepts_and_leaves_the_rest_where_it_was(make_db) -> None:
    db = make_db()
    dead = f"{socket.gethostname()}:pid={dead_pid()}:agent=gone"
    chat = queue(db, dead, "for the chat")
    released = db.gateway.enqueue_gateway_input("api_server:s", {"text": "api"}, owner=None)
    other = make_holder()

    def accept(row) -> bool:
        return row["payload"]["text"] == "api"

    got = db.gateway.claim_gateway_inputs(other, takeover_after=TAKEOVER, accept=accept)
    assert [r["id"] for r in got] == [released]
    assert owners(db) == {chat[0]: dead, released: other}
    refuse = db.gateway.claim_gateway_inputs(other, takeover_after=TAKEOVER, accept=lambda r: False)
    assert refuse == [] and owners(db) == {chat[0]: dead, released: other}
    assert start(db, make_holder()) == chat  # a claim that takes everything still can
