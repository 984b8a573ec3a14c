"""Races with real threads and real processes, each repeated (invariants 1, 2, 3, 7).

Every process is started with the "spawn" method and opens its own SessionDB on the
test's store. Results are checked against the store afterwards, never timed.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter

import psutil
import pytest

from hermes.state import SessionDB, make_holder

from . import workers
from .helpers import SUMMARY, StoreSpec, assert_no_orphan_writes, raw_all
from .procs import CTX, Processes

RACERS = 4
ROUNDS = 10


def _parents(db: SessionDB, rounds: int) -> list[str]:
    parents = []
    for n in range(rounds):
        sid = db.create_session(f"race-{n}-{uuid.uuid4().hex[:6]}", source="discord", title="Race")
        db.append_messages(sid, [{"role": "user", "content": f"m{k}"} for k in range(5)])
        parents.append(sid)
    return parents


def _assert_one_child_each(db: SessionDB, parents: list[str], outcomes: list[tuple]) -> None:
    by_parent = {p: Counter() for p in parents}
    for parent, outcome in outcomes:
        by_parent[parent][outcome] += 1
    for parent, counts in by_parent.items():
        assert counts["won"] == 1, f"{parent}: {dict(counts)}"
        assert sum(counts.values()) == RACERS
        children = raw_all(db, "SELECT id FROM sessions WHERE parent_session_id = ?", (parent,))
        assert len(children) == 1, f"{parent} forked into {children}"
        assert db.get_lineage(parent) == [parent, children[0]["id"]]
        assert db.get_session(parent)["end_reason"] == "compression"
        assert db.get_compression_lock_holder(parent) is None
    assert db.invariant_violations() == []


def test_processes_racing_to_rotate_one_parent_make_exactly_one_child(
    db: SessionDB, store: StoreSpec
) -> None:
    parents = _parents(db, ROUNDS)
    barrier = CTX.Barrier(RACERS)
    with Processes() as procs:
        for _ in range(RACERS):
            procs.start(workers.race_rotations, store, parents, barrier, 0.05)
        outcomes = procs.expect("outcome", RACERS * ROUNDS)
    _assert_one_child_each(db, parents, outcomes)


@pytest.mark.parametrize("shared", [False, True], ids=["own-instances", "one-instance"])
def test_threads_racing_to_rotate_one_parent_make_exactly_one_child(make_db, shared: bool) -> None:
    db = make_db()
    parents = _parents(db, 2 * ROUNDS)
    barrier = threading.Barrier(RACERS)
    outcomes: list[tuple] = []
    errors: list[BaseException] = []

    def racer() -> None:
        mine = db if shared else make_db()
        try:
            for parent in parents:
                barrier.wait(timeout=60)
                outcomes.append((parent, workers.rotate_once(mine, parent, 0.01)))
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=racer) for _ in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    _assert_one_child_each(db, parents, outcomes)


@pytest.mark.slow  # worker processes racing
def test_appends_from_other_processes_during_rotations_are_kept_exactly_once(
    db: SessionDB, store: StoreSpec
) -> None:
    root = db.create_session("root", source="telegram", title="Busy")
    db.append_message(root, "user", "first", message_uid="first")
    per_writer = 60
    writers = {"follow": True, "stale-a": False, "stale-b": False}
    started = [CTX.Event() for _ in writers]
    rotations: list[tuple[str, int, str]] = []
    with Processes() as procs:
        for (tag, follow), event in zip(writers.items(), started, strict=True):
            procs.start(workers.append_stream, store, root, tag, per_writer, follow, 0.004, event)
        for event in started:
            assert event.wait(120)
        deadline = time.monotonic() + 120
        while len(procs.backlog["done"]) < len(writers) or len(rotations) < 3:
            assert time.monotonic() < deadline
            rotations.append(_rotate_keeping_tail(db, root))
            procs.poll()
        reports = procs.expect("done", len(writers))

    logical = db.get_conversation_messages(root)
    seen = [m["message_uid"] for m in logical]
    expected = {"first"} | {f"{tag}-{n}" for tag in writers for n in range(per_writer)}
    assert Counter(seen) == Counter(expected), "a message was lost or duplicated"
    for tag in writers:  # each writer's messages in the order it wrote them
        assert [u for u in seen if u.startswith(f"{tag}-")] == [
            f"{tag}-{n}" for n in range(per_writer)
        ]
    assert all(not m["compacted"] for m in logical)
    # Invariant 3: nothing accumulated in a dead segment; stale writers reached the tips.
    assert_no_orphan_writes(db, root)
    assert db.invariant_violations() == []
    assert any(len(segments) > 1 for _tag, segments in reports)
    # Invariant 2: every parent message written after the watermark is in the child.
    carried = 0
    for parent, watermark, child in rotations:
        late = {
            m["id"] for m in db.get_messages(parent) if not m["compacted"] and m["id"] > watermark
        }
        origins = {m["origin_id"] for m in db.get_messages(child) if m["compacted"]}
        assert late <= origins, f"rotation {parent} -> {child} dropped {late - origins}"
        carried += len(late)
    assert carried > 0, "no append landed while a summary was in flight; the race never ran"


def _rotate_keeping_tail(db: SessionDB, root: str) -> tuple[str, int, str]:
    tip = db.resolve_tip(root)
    holder = make_holder()
    assert db.try_acquire_compression_lock(tip, holder)
    try:
        watermark = db.last_message_id(tip)
        tail = [m for m in db.get_messages(tip) if not m["compacted"]][-2:]
        kept = [{k: m[k] for k in ("role", "content", "message_uid")} for m in tail]
        time.sleep(0.03)  # the summary call; writers keep appending meanwhile
        child = db.publish_compression_child(
            tip,
            holder=holder,
            messages=[{**SUMMARY, "message_uid": uuid.uuid4().hex}, *kept],
            watermark=watermark,
        )
    finally:
        db.release_compression_lock(tip, holder)
    return tip, watermark, child


def test_appends_from_threads_during_rotations_are_kept_exactly_once(make_db) -> None:
    db = make_db()
    root = db.create_session("root", source="cli")
    errors: list[BaseException] = []

    def writer(tag: str) -> None:
        mine = make_db()
        target = root
        try:
            for n in range(40):
                target = mine.append_message(
                    target, "user", tag, message_uid=f"{tag}-{n}"
                ).session_id
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(f"t{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    rotations = 0
    while any(t.is_alive() for t in threads) or rotations < 2:
        _rotate_keeping_tail(db, root)
        rotations += 1
    for t in threads:
        t.join(60)
    assert not errors, errors
    seen = [m["message_uid"] for m in db.get_conversation_messages(root)]
    assert Counter(seen) == Counter(f"t{i}-{n}" for i in range(3) for n in range(40))
    assert_no_orphan_writes(db, root)
    assert db.invariant_violations() == []


def test_threads_sharing_one_sessiondb_append_concurrently(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    errors: list[BaseException] = []

    def writer(tag: str) -> None:
        try:
            for n in range(0, 40, 2):
                if n % 4:
                    db.append_messages(
                        "s",
                        [
                            {"role": "user", "content": tag, "message_uid": f"{tag}-{n}"},
                            {"role": "assistant", "content": tag, "message_uid": f"{tag}-{n + 1}"},
                        ],
                    )
                else:
                    db.append_message("s", "user", tag, message_uid=f"{tag}-{n}")
                    db.append_message("s", "assistant", tag, message_uid=f"{tag}-{n + 1}")
                db.search_messages(tag)
                db.get_messages("s")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(f"w{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    rows = db.get_messages("s")
    assert len(rows) == 240 == db.get_session("s")["message_count"]
    assert len({r["id"] for r in rows}) == 240
    for i in range(6):
        assert [r["message_uid"] for r in rows if r["content"] == f"w{i}"] == [
            f"w{i}-{n}" for n in range(40)
        ]


def test_processes_reflushing_the_same_messages_store_each_once(
    db: SessionDB, store: StoreSpec
) -> None:
    db.create_session("s", source="cli")
    messages = [{"role": "user", "content": f"m{n}", "message_uid": f"same-{n}"} for n in range(30)]
    barrier = CTX.Barrier(RACERS)
    with Processes() as procs:
        for _ in range(RACERS):
            procs.start(workers.flush_same, store, "s", messages, barrier)
        stored = procs.expect("done", RACERS)
    assert sum(stored) == 30
    assert [m["message_uid"] for m in db.get_messages("s")] == [m["message_uid"] for m in messages]


def test_processes_opening_a_new_store_at_once_migrate_it_once(store: StoreSpec) -> None:
    barrier = CTX.Barrier(RACERS)
    with Processes() as procs:
        for _ in range(RACERS):
            procs.start(workers.open_store, store, barrier)
        created = procs.expect("done", RACERS)
    with store.open() as db:
        versions = [r["version"] for r in raw_all(db, "SELECT version FROM schema_version")]
        assert len(versions) == len(set(versions)) and max(versions) == db.backend.schema_version()
        assert {r["conversation_id"] for r in db.list_conversations()} == set(created)


@pytest.mark.slow  # a holder process killed, then the lease expires
def test_a_holder_killed_with_sigkill_is_replaced_well_before_the_ttl(
    db: SessionDB, store: StoreSpec
) -> None:
    sid = db.create_session("s", source="cli")
    me = make_holder()
    for attempt in range(3):
        # A fresh queue each time: a process killed mid-life may leave its queue unusable.
        with Processes() as procs:
            proc = procs.start(workers.hold_lease, store, sid)
            [holder] = procs.expect("holding")
            assert db.get_compression_lock_holder(sid) == holder
            assert db.try_acquire_compression_lock(sid, me) is False
            proc.kill()
            if attempt == 0:
                _wait_for_zombie(proc.pid)  # killed but not yet reaped by us
            else:
                proc.join()
            # The TTL is 300 s: only the dead-pid check can free it now.
            assert db.get_compression_lock_holder(sid) is None
            assert db.try_acquire_compression_lock(sid, me, ttl_seconds=300) is True
            assert db.release_compression_lock(sid, me)
            proc.join()
            procs.procs.remove(proc)


def _wait_for_zombie(pid: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.01)
    pytest.fail(f"process {pid} did not die after SIGKILL")
