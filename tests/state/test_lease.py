"""The compression lease: acquire, refresh, release, holder, reclaim (invariant 1)."""

from __future__ import annotations

import os
import re
import socket
import time

import pytest

from hermes.state import SessionDB, lease, make_holder

from .procs import dead_pid


@pytest.fixture
def seg(db: SessionDB) -> str:
    return db.create_session("seg", source="cli")


def test_make_holder_names_host_pid_and_agent() -> None:
    holder = make_holder("abc")
    assert holder == f"{socket.gethostname()}:pid={os.getpid()}:agent=abc"
    assert re.fullmatch(
        rf"{re.escape(socket.gethostname())}:pid=\d+:agent=[0-9a-f]{{32}}", make_holder()
    )
    assert make_holder() != make_holder()


def test_acquire_release_and_holder(db: SessionDB, seg: str) -> None:
    me, other = make_holder(), make_holder()
    assert db.get_compression_lock_holder(seg) is None
    assert db.try_acquire_compression_lock(seg, me) is True
    assert db.get_compression_lock_holder(seg) == me
    assert db.try_acquire_compression_lock(seg, other) is False
    assert db.get_compression_lock_holder(seg) == me
    assert db.release_compression_lock(seg, other) is False
    assert db.get_compression_lock_holder(seg) == me
    assert db.release_compression_lock(seg, me) is True
    assert db.get_compression_lock_holder(seg) is None
    assert db.release_compression_lock(seg, me) is False
    assert db.try_acquire_compression_lock(seg, other) is True


def test_acquire_is_reentrant_for_the_same_holder(db: SessionDB, seg: str) -> None:
    me = make_holder()
    assert db.try_acquire_compression_lock(seg, me, ttl_seconds=0.5)
    assert db.try_acquire_compression_lock(seg, me, ttl_seconds=60)
    time.sleep(0.6)
    assert db.get_compression_lock_holder(seg) == me  # the second call extended it
    assert db.release_compression_lock(seg, me)
    assert db.get_compression_lock_holder(seg) is None


def test_leases_are_per_segment(db: SessionDB, seg: str) -> None:
    db.create_session("other", source="cli")
    a, b = make_holder(), make_holder()
    assert db.try_acquire_compression_lock(seg, a)
    assert db.try_acquire_compression_lock("other", b)
    assert db.get_compression_lock_holder("other") == b


def test_refresh_extends_only_the_holders_lease(db: SessionDB, seg: str) -> None:
    me, other = make_holder(), make_holder()
    assert db.refresh_compression_lock(seg, me) is False  # nothing to refresh
    assert db.try_acquire_compression_lock(seg, me, ttl_seconds=0.5)
    assert db.refresh_compression_lock(seg, other) is False
    assert db.refresh_compression_lock(seg, me, ttl_seconds=60) is True
    time.sleep(0.6)
    assert db.get_compression_lock_holder(seg) == me
    assert db.try_acquire_compression_lock(seg, other) is False
    db.release_compression_lock(seg, me)
    assert db.refresh_compression_lock(seg, me) is False


def test_an_expired_lease_is_reclaimed(db: SessionDB, seg: str) -> None:
    me, other = make_holder(), make_holder()
    assert db.try_acquire_compression_lock(seg, me, ttl_seconds=0.2)
    assert db.try_acquire_compression_lock(seg, other) is False
    time.sleep(0.3)
    assert db.get_compression_lock_holder(seg) is None
    assert db.refresh_compression_lock(seg, me) is False  # too late to refresh
    assert db.try_acquire_compression_lock(seg, other) is True
    assert db.get_compression_lock_holder(seg) == other
    assert db.release_compression_lock(seg, me) is False  # the old holder cannot free it


def test_the_lifetime_cap_ends_a_lease_however_often_it_is_refreshed(
    db: SessionDB, seg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lease, "LIFETIME_CAP", 0.6)
    me, other = make_holder(), make_holder()
    assert db.try_acquire_compression_lock(seg, me, ttl_seconds=60)
    deadline = time.monotonic() + 5
    while db.refresh_compression_lock(seg, me, ttl_seconds=60):
        assert time.monotonic() < deadline, "refresh kept the lease past the lifetime cap"
        time.sleep(0.05)
    assert db.get_compression_lock_holder(seg) is None
    assert db.try_acquire_compression_lock(seg, other) is True


def test_a_ttl_longer_than_the_cap_is_still_capped(
    db: SessionDB, seg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lease, "LIFETIME_CAP", 0.3)
    me, other = make_holder(), make_holder()
    assert db.try_acquire_compression_lock(seg, me, ttl_seconds=3600)
    time.sleep(0.4)
    assert db.get_compression_lock_holder(seg) is None
    assert db.try_acquire_compression_lock(seg, other) is True


def test_a_reentrant_acquire_does_not_extend_past_the_cap(
    db: SessionDB, seg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lease, "LIFETIME_CAP", 0.4)
    me, other = make_holder(), make_holder()
    assert db.try_acquire_compression_lock(seg, me, ttl_seconds=60)
    time.sleep(0.2)
    assert db.try_acquire_compression_lock(seg, me, ttl_seconds=60)
    time.sleep(0.3)
    assert db.get_compression_lock_holder(seg) is None
    assert db.try_acquire_compression_lock(seg, other) is True


def test_a_dead_holder_on_this_host_is_reclaimed_at_once(db: SessionDB, seg: str) -> None:
    ghost = f"{socket.gethostname()}:pid={dead_pid()}:agent=x"
    assert db.try_acquire_compression_lock(seg, ghost, ttl_seconds=300)
    assert db.get_compression_lock_holder(seg) is None
    me = make_holder()
    assert db.try_acquire_compression_lock(seg, me) is True
    assert db.get_compression_lock_holder(seg) == me


def test_a_live_holder_on_this_host_is_respected(db: SessionDB, seg: str) -> None:
    parent = f"{socket.gethostname()}:pid={os.getppid()}:agent=y"
    assert db.try_acquire_compression_lock(seg, parent, ttl_seconds=300)
    assert db.get_compression_lock_holder(seg) == parent
    assert db.try_acquire_compression_lock(seg, make_holder()) is False


def test_a_holder_on_another_host_is_reclaimed_only_after_its_ttl(db: SessionDB, seg: str) -> None:
    # Its pid is dead here, but it names another host: only the TTL can free it.
    remote = f"another-host.invalid:pid={dead_pid()}:agent=z"
    assert db.try_acquire_compression_lock(seg, remote, ttl_seconds=0.5)
    assert db.get_compression_lock_holder(seg) == remote
    assert db.try_acquire_compression_lock(seg, make_holder()) is False
    time.sleep(0.6)
    assert db.get_compression_lock_holder(seg) is None
    assert db.try_acquire_compression_lock(seg, make_holder()) is True


def test_a_free_form_holder_is_kept_until_its_ttl(db: SessionDB, seg: str) -> None:
    # The seed test holds the lease as "external_holder".
    assert db.try_acquire_compression_lock(seg, "external_holder")
    assert db.get_compression_lock_holder(seg) == "external_holder"
    assert db.try_acquire_compression_lock(seg, make_holder()) is False


def test_the_lease_is_shared_by_every_instance_on_the_store(make_db, seg: str) -> None:
    first, second = make_db(), make_db()
    me = make_holder()
    assert first.try_acquire_compression_lock(seg, me)
    assert second.get_compression_lock_holder(seg) == me
    assert second.try_acquire_compression_lock(seg, make_holder()) is False
    assert second.release_compression_lock(seg, me) is True
    assert first.get_compression_lock_holder(seg) is None
