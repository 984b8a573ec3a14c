"""PostgreSQL-specific behaviour of the state store.

The store suite shared with SQLite lives elsewhere; this file covers what only a
server shared by many processes and hosts can get wrong: the URL and its password,
an unreachable or busy server, read-only roles, first-time migration by several
processes at once, CJK search, rotation racing across processes, appends during a
rotation, and a lease whose holder died.

Run it under a throwaway server:
    bash scripts/with-postgres .venv/bin/pytest tests/state/test_postgres_backend.py -q
Each test gets its own schema (``options=-csearch_path=t_<hex>,public`` in the URL).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import threading
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from hermes.state import (
    NotTipError,
    ReadOnlyStoreError,
    SessionDB,
    StateError,
    StoreBusyError,
    StoreUnavailableError,
    make_holder,
    segments,
)
from hermes.state.backend import SearchScope
from hermes.state.postgres.backend import PostgresBackend
from hermes.state.postgres.schema import MIGRATIONS
from hermes.testing.ports import free_port
from tests.stores import pg_url

PG_URL = os.environ.get("HERMES_TEST_PG_URL", "")
WORKERS = 6


# -- helpers run in spawned processes (module level, so spawn can import them) ----


def _sleep_until(start_at: float) -> None:
    time.sleep(max(0.0, start_at - time.time()))


def _open_at(url: str, start_at: float) -> int:
    _sleep_until(start_at)
    with SessionDB(url=url) as db:
        return db.backend.schema_version()


def _race_for_rotation(url: str, parent: str, host: str, start_at: float) -> str:
    """Take the lease as a holder on another host, then rotate; report what happened."""
    holder = f"{host}:pid=1:agent={host}"  # another host: only the TTL could free it
    with SessionDB(url=url) as db:
        _sleep_until(start_at)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if db.try_acquire_compression_lock(parent, holder, ttl_seconds=30):
                try:
                    child = db.publish_compression_child(
                        parent,
                        holder=holder,
                        messages=[{"role": "user", "content": f"summary by {host}"}],
                        watermark=db.last_message_id(parent),
                    )
                    return f"published:{child}"
                except NotTipError:
                    return "not-tip"
                finally:
                    db.release_compression_lock(parent, holder)
            if db.get_session(parent)["ended_at"] is not None:
                return "ended"
            time.sleep(random.uniform(0, 0.005))
        return "timeout"


def _publish_as(url: str, parent: str, holder: str, start_at: float) -> str:
    """Publish with a lease someone else took for ``holder`` (the same agent twice)."""
    with SessionDB(url=url) as db:
        _sleep_until(start_at)
        try:
            return "published:" + db.publish_compression_child(
                parent,
                holder=holder,
                messages=[{"role": "user", "content": "summary"}],
                watermark=0,
            )
        except NotTipError:
            return "not-tip"


def _append_many(url: str, root: str, worker: int, count: int, start_at: float) -> list:
    with SessionDB(url=url) as db:
        _sleep_until(start_at)
        landed = []
        for j in range(count):
            uid = f"w{worker}-{j}"
            appended = db.append_message(root, "user", f"worker {worker} says {j}", message_uid=uid)
            landed.append((uid, appended.session_id))
            time.sleep(random.uniform(0, 0.01))
        return landed


def _hold_lease_and_lock(url: str, session_id: str, holder: str | None, ttl: float, ready) -> None:
    """Take the lease, then sit inside a transaction holding the segment's row lock."""
    db = SessionDB(url=url)
    assert db.try_acquire_compression_lock(session_id, holder or make_holder("doomed"), ttl)

    def hang(tx) -> None:
        tx.lock_session(session_id)
        ready.set()
        time.sleep(600)

    db._write(hang)


# -- fixtures ----------------------------------------------------------------------


def _with_params(url: str, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return url + ("&" if "?" in url else "?") + query


@pytest.fixture(scope="module")
def admin() -> Iterator[psycopg.Connection]:
    with psycopg.connect(pg_url(), autocommit=True) as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
        except psycopg.errors.UniqueViolation:
            pass  # another test process created it at the same moment
        yield conn


@pytest.fixture
def schema(admin: psycopg.Connection) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex}"
    admin.execute(f"CREATE SCHEMA {name}")
    yield name
    admin.execute(f"DROP SCHEMA {name} CASCADE")


@pytest.fixture
def url(schema: str) -> str:
    return _with_params(PG_URL, options=f"-csearch_path%3D{schema},public")


@pytest.fixture
def db(url: str) -> Iterator[SessionDB]:
    with SessionDB(url=url) as store:
        yield store


@pytest.fixture(scope="module")
def workers() -> Iterator[multiprocessing.pool.Pool]:
    pg_url()
    pool = multiprocessing.get_context("spawn").Pool(WORKERS)
    yield pool
    pool.close()
    pool.join()


def _label() -> str:
    params = psycopg.conninfo.conninfo_to_dict(PG_URL)
    return f"{params['host']}:{params['port']}/{params['dbname']}"


def _write_into(backend: PostgresBackend, session_id: str, outcome: list[BaseException]) -> None:
    """A write transaction on ``session_id`` (a thread's target); its error into ``outcome``."""
    try:
        backend.transact(lambda tx: segments.writable(tx, session_id), write=True)
    except BaseException as exc:
        outcome.append(exc)


def _waiting_for_a_lock(admin: psycopg.Connection, application_name: str) -> bool:
    row = admin.execute(
        "SELECT count(*) AS n FROM pg_locks JOIN pg_stat_activity USING (pid) "
        "WHERE NOT granted AND application_name = %s",
        (application_name,),
    ).fetchone()
    return bool(row and row[0])


def _with_password(url: str, password: str) -> str:
    scheme, rest = url.split("://", 1)
    user, hostpart = rest.split("@", 1)
    return f"{scheme}://{user}:{password}@{hostpart}"


# -- the URL, the password, an unreachable or busy server ----------------------------


def test_query_parameters_reach_libpq_and_tables_land_in_that_schema(
    db: SessionDB, admin: psycopg.Connection, schema: str
) -> None:
    sid = db.create_session("seed-1", source="cli")
    tables = admin.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
    ).fetchall()
    assert {"sessions", "messages", "compression_locks", "gateway_routes", "schema_version"} <= {
        t[0] for t in tables
    }
    # SessionDB._conn works like the seed test uses it on SQLite.
    rows = db._conn.execute(
        "SELECT id FROM sessions WHERE parent_session_id = ?", (sid,)
    ).fetchall()
    assert rows == []
    assert db._conn.execute("SELECT id FROM sessions WHERE id = ?", (sid,)).fetchone() == {
        "id": sid
    }


def test_a_question_mark_or_percent_inside_quotes_is_text_not_a_placeholder(
    db: SessionDB,
) -> None:
    # Shared SQL is written with ``?`` placeholders; only the ones outside quotes are.
    row = db.backend.transact(
        lambda tx: tx.one(
            "SELECT '?' AS q, 'it''s 50% ?' AS s, \"?\" AS p FROM (SELECT ? AS \"?\") AS t",
            (7,),
        ),
        write=False,
    )
    assert dict(row) == {"q": "?", "s": "it's 50% ?", "p": 7}


def test_unreachable_server_is_one_clear_sentence_without_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = f"pw-{uuid.uuid4().hex}"
    port = free_port()
    url = f"postgresql://hermes:{secret}@127.0.0.1:{port}/hermes_test?password={secret}"
    attempts: list[str] = []
    connect = psycopg.connect

    def counted(conninfo: str, **kwargs):  # the real connect, counted
        attempts.append(conninfo)
        return connect(conninfo, **kwargs)

    monkeypatch.setattr(psycopg, "connect", counted)
    with pytest.raises(StoreUnavailableError) as caught:
        SessionDB(url=url)
    message = str(caught.value)
    assert len(attempts) == 1  # refused is an answer: told at once, not retried
    assert f"Cannot reach PostgreSQL at 127.0.0.1:{port}/hermes_test" in message
    assert "HERMES_STATE_URL" in message
    assert secret not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_password_never_appears_in_location_repr_or_errors(url: str, admin) -> None:
    secret = f"pw-{uuid.uuid4().hex}"  # the test server trusts loopback: any password works
    with SessionDB(url=_with_password(url, secret)) as db:
        assert secret not in db.location and "hermes:[redacted]@" in db.location
        assert secret not in repr(db.backend)
        db.create_session("dup", source="cli")
        with pytest.raises(StateError) as caught:
            db.create_session("dup", source="cli")
        assert _label() in str(caught.value) and secret not in str(caught.value)

        # A lock held past the patience: StoreBusyError names the server, not the secret.
        app = f"hermes_busy_{uuid.uuid4().hex[:8]}"
        busy_url = _with_params(_with_password(url, secret), application_name=app)
        busy = PostgresBackend(busy_url, patience=1.0)
        try:
            with psycopg.connect(url) as holder:
                holder.execute("SELECT 1 FROM sessions WHERE id = 'dup' FOR UPDATE")
                outcome: list[BaseException] = []
                writer = threading.Thread(target=_write_into, args=(busy, "dup", outcome))
                writer.start()
                # It waits for the row lock (the server sees it wait) before it gives up.
                deadline = time.monotonic() + 5
                while not _waiting_for_a_lock(admin, app):
                    assert time.monotonic() < deadline, "the write never waited for the row"
                    time.sleep(0.01)
                writer.join(30)
                [error] = outcome
                assert isinstance(error, StoreBusyError)
                assert _label() in str(error) and secret not in str(error)
            assert busy.transact(lambda tx: segments.writable(tx, "dup"), write=True)["id"] == "dup"
        finally:
            busy.close()


def test_a_dropped_connection_is_retried_transparently(url: str, admin) -> None:
    app = f"hermes_drop_{uuid.uuid4().hex[:8]}"
    with SessionDB(url=_with_params(url, application_name=app)) as db:
        sid = db.create_session(source="cli")
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (app,),
        ).fetchall()
        assert killed, "the URL's application_name should have reached the server"
        db.append_message(sid, "user", "still here")
        assert [m["content"] for m in db.get_messages(sid)] == ["still here"]


# -- read-only, migrations, opening writes nothing ---------------------------------


def test_read_only_store_refuses_every_write(url: str, db: SessionDB) -> None:
    sid = db.create_session("ro-1", source="cli")
    db.append_message(sid, "user", "hello")
    with SessionDB(url=url, read_only=True) as ro:
        assert ro.get_messages(sid)[0]["content"] == "hello"
        with pytest.raises(ReadOnlyStoreError):
            ro.create_session(source="cli")
        with pytest.raises(ReadOnlyStoreError):  # the server itself refuses, too
            ro.backend.transact(lambda tx: tx.run("DELETE FROM messages"), write=False)
        with pytest.raises(ReadOnlyStoreError):
            ro._conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))
    assert len(db.get_messages(sid)) == 1


def test_read_only_open_of_an_empty_schema_creates_nothing(url: str, admin, schema: str) -> None:
    with pytest.raises(StateError, match="needs an upgrade"):
        SessionDB(url=url, read_only=True)
    tables = admin.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s", (schema,)
    ).fetchone()
    assert tables == (0,)


def test_opening_an_up_to_date_store_writes_nothing(
    url: str, db: SessionDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every transaction the backend opens is recorded on its way through; the xid
    # counter cannot tell, since other tests' servers work share it.
    opened: list[bool] = []
    transact = PostgresBackend.transact

    def recording(self, fn, *, write):
        opened.append(write)
        return transact(self, fn, write=write)

    monkeypatch.setattr(PostgresBackend, "transact", recording)
    SessionDB(url=url).close()
    assert opened and not any(opened), "opening an up-to-date store started a write"


def test_concurrent_first_time_migration_from_several_processes(
    url: str, workers, admin, schema: str
) -> None:
    start_at = time.time() + 1.0
    versions = workers.starmap(_open_at, [(url, start_at)] * WORKERS)
    latest = MIGRATIONS[-1].version
    assert versions == [latest] * WORKERS
    rows = admin.execute(f"SELECT version FROM {schema}.schema_version ORDER BY version").fetchall()
    assert rows == [(m.version,) for m in MIGRATIONS]


# -- search --------------------------------------------------------------------------


def test_cjk_and_english_search(db: SessionDB) -> None:
    a = db.create_session("conv-a", source="telegram")
    b = db.create_session("conv-b", source="cli")
    db.append_messages(
        a,
        [
            {"role": "user", "content": "我喜欢东京的天气"},
            {"role": "assistant", "content": "I love the Tokyo weather too."},
            {"role": "user", "content": "我在用Python写代码"},
            {"role": "user", "content": "Please edit config.yaml and /etc/hosts, then 3.14"},
            {"role": "user", "content": "東京タワーに行きたい"},
            {"role": "user", "content": "Next: 東京 tower at night"},
            {"role": "user", "content": "서울 날씨가 좋아요"},
            {"role": "user", "content": "a stray nul\x00byte from a tool"},
        ],
    )
    db.append_message(b, "user", "东京 is also here, in conv-b")

    def found(query: str, **kw) -> list[str]:
        return [h["snippet"] for h in db.search_messages(query, **kw)]

    assert found("东京", source="telegram") == ["我喜欢东京的天气"]
    assert found("东京") == ["东京 is also here, in conv-b", "我喜欢东京的天气"]  # newest first
    assert found("天气 东京") == ["我喜欢东京的天气"]
    assert found("东") == ["东京 is also here, in conv-b", "我喜欢东京的天气"]
    assert found("東京") == ["Next: 東京 tower at night", "東京タワーに行きたい"]
    assert found("タワー") == ["東京タワーに行きたい"]
    assert found("東京tower") == ["Next: 東京 tower at night"]
    assert found("날씨가") == ["서울 날씨가 좋아요"]
    assert found("python") == ["我在用Python写代码"]
    assert found("TOKYO weather") == ["I love the Tokyo weather too."]
    assert found("Tok") == []  # words, not prefixes
    assert found("yaml config") == ["Please edit config.yaml and /etc/hosts, then 3.14"]
    assert found("hosts 14") == ["Please edit config.yaml and /etc/hosts, then 3.14"]
    assert found("nul byte") == ["a stray nul\ufffdbyte from a tool"]
    assert found("东京", conversation_id=b) == ["东京 is also here, in conv-b"]
    for hostile in ('"东京', "weather*", "OR AND NOT", "(Tokyo", "100%", "a_b", "\\", "'; --"):
        db.search_messages(hostile)  # never raises


def test_search_escapes_like_wildcards_and_skips_compacted_rows(db: SessionDB) -> None:
    sid = db.create_session(source="cli")
    db.append_messages(
        sid, [{"role": "user", "content": "plain text"}, {"role": "user", "content": "50%_off\\"}]
    )

    def search(terms: list[str]) -> list[str]:
        hits = db.backend.transact(
            lambda tx: tx.search(terms, limit=10, scope=SearchScope()), write=False
        )
        return [h.content for h in hits]

    assert search(["%"]) == ["50%_off\\"]
    assert search(["_"]) == ["50%_off\\"]
    assert search(["\\"]) == ["50%_off\\"]

    holder = make_holder()
    assert db.try_acquire_compression_lock(sid, holder)
    child = db.publish_compression_child(
        sid, holder=holder, messages=[{"role": "user", "content": "summary mentions plain text"}]
    )
    hits = db.search_messages("plain")
    assert [h["session_id"] for h in hits] == [sid]  # the compacted summary is not a hit
    assert child != sid


def test_words_past_the_indexed_prefix_of_a_huge_message_are_found(db: SessionDB) -> None:
    sid = db.create_session(source="cli")
    db.append_message(sid, "tool", "lorem " * 60_000 + "needle_in_haystack at the very end")
    assert [h["session_id"] for h in db.search_messages("haystack")] == [sid]
    assert db.search_messages("haystack lorem needle")[0]["session_id"] == sid


# -- processes racing ----------------------------------------------------------------


def test_processes_on_different_hosts_racing_to_rotate_make_exactly_one_child(
    url: str, db: SessionDB, workers
) -> None:
    parent = db.create_session("race-parent", source="gateway", title="Chat")
    db.append_messages(parent, [{"role": "user", "content": f"m{i}"} for i in range(5)])
    start_at = time.time() + 1.0
    outcomes = workers.starmap(
        _race_for_rotation, [(url, parent, f"host{i}", start_at) for i in range(WORKERS)]
    )
    published = [o for o in outcomes if o.startswith("published:")]
    assert len(published) == 1, outcomes
    assert all(o in ("ended", "not-tip") for o in outcomes if o not in published), outcomes
    rows = db._conn.execute(
        "SELECT id FROM sessions WHERE parent_session_id = ?", (parent,)
    ).fetchall()
    assert [r["id"] for r in rows] == [published[0].split(":", 1)[1]]
    assert db.invariant_violations() == []

    # The same holder publishing from several processes at once (an agent racing itself):
    # the segment's row lock lets one through; the others find it is no longer the tip.
    tip = db.resolve_tip(parent)
    holder = "hostZ:pid=1:agent=twice"
    assert db.try_acquire_compression_lock(tip, holder, ttl_seconds=30)
    start_at = time.time() + 0.5
    outcomes = workers.starmap(_publish_as, [(url, tip, holder, start_at)] * WORKERS)
    assert sorted(o.split(":")[0] for o in outcomes) == ["not-tip"] * (WORKERS - 1) + ["published"]
    assert len(db.get_segments(parent)) == 3


def test_appends_from_other_processes_during_rotations_are_never_lost(
    url: str, db: SessionDB, admin, schema: str, workers
) -> None:
    root = db.create_session("busy-root", source="gateway")
    db.append_messages(
        root,
        [{"role": "user", "content": f"seed {i}", "message_uid": f"seed-{i}"} for i in range(4)],
    )
    writers, per_writer = WORKERS - 2, 40
    start_at = time.time() + 1.0
    pending = [
        workers.apply_async(_append_many, (url, root, w, per_writer, start_at))
        for w in range(writers)
    ]
    _sleep_until(start_at)
    # Rotate only once the writers write (a loaded machine starts them late), then for
    # as long as they do.
    deadline = time.time() + 60
    while len(db.get_conversation_messages(root)) == 4 and time.time() < deadline:
        time.sleep(0.005)
    rotations = []
    while not all(p.ready() for p in pending) and len(rotations) < 40:
        tip, holder = db.resolve_tip(root), make_holder()
        if not db.try_acquire_compression_lock(tip, holder):
            continue
        try:
            watermark = db.last_message_id(tip)
            seen = [m for m in db.get_messages(tip) if m["id"] <= watermark]
            time.sleep(0.03)  # the summary call, while the writers keep writing
            kept = [{k: m[k] for k in ("role", "content", "message_uid")} for m in seen[-2:]]
            child = db.publish_compression_child(
                tip,
                holder=holder,
                messages=[{"role": "user", "content": "summary"}, *kept],
                watermark=watermark,
            )
            rotations.append((tip, child, watermark))
        finally:
            db.release_compression_lock(tip, holder)
        time.sleep(0.02)
    landed = [item for p in pending for item in p.get(timeout=60)]
    assert len(rotations) >= 2

    # Every original exactly once in the logical conversation.
    uids = [m["message_uid"] for m in db.get_conversation_messages(root)]
    expected = {f"seed-{i}" for i in range(4)} | {uid for uid, _ in landed}
    assert len(uids) == len(set(uids)) and set(uids) == expected

    # Each row is in the segment the append reported.
    where = dict(admin.execute(f"SELECT message_uid, session_id FROM {schema}.messages").fetchall())
    assert all(where[uid] == sid for uid, sid in landed)

    # Whatever reached a parent after the compressor's snapshot was carried into its child.
    carried = 0
    for parent, child, watermark in rotations:
        late = {
            r[0]
            for r in admin.execute(
                f"SELECT id FROM {schema}.messages WHERE session_id = %s AND id > %s",
                (parent, watermark),
            )
        }
        copies = {
            r[0]
            for r in admin.execute(
                f"SELECT origin_id FROM {schema}.messages WHERE session_id = %s AND compacted = 1",
                (child,),
            )
        }
        assert late <= copies, (parent, late - copies)
        carried += len(late)
    assert carried > 0, "no append landed during a rotation; the test raced nothing"

    chain = db.get_segments(root)
    assert [s["ended_at"] is None for s in chain] == [False] * (len(chain) - 1) + [True]
    assert all(s["end_reason"] == "compression" for s in chain[:-1])


# -- a dead lease holder ---------------------------------------------------------------


def test_a_killed_holders_lease_is_reclaimed(url: str, db: SessionDB) -> None:
    ctx = multiprocessing.get_context("spawn")
    mine = make_holder()

    # Another host's holder: the pid cannot be checked, so only the TTL frees it.
    remote = db.create_session("lease-remote", source="gateway")
    ttl = 2.0
    ready = ctx.Event()
    proc = ctx.Process(
        target=_hold_lease_and_lock, args=(url, remote, "hostB:pid=4242:agent=k", ttl, ready)
    )
    proc.start()
    try:
        assert ready.wait(30), "the holder process never took its lease"
        taken_at = time.monotonic()
    finally:
        proc.kill()
        proc.join()
    # Killed inside a transaction: the server drops its row lock instead of hanging us
    # (a hang would end in StoreBusyError, not in this refusal).
    assert not db.try_acquire_compression_lock(remote, mine)
    assert db.get_compression_lock_holder(remote) == "hostB:pid=4242:agent=k"
    time.sleep(max(0.0, taken_at + ttl - time.monotonic()))
    deadline = time.monotonic() + 5
    while not db.try_acquire_compression_lock(remote, mine):
        assert time.monotonic() < deadline, "the expired lease was never reclaimed"
        time.sleep(0.1)
    assert db.get_compression_lock_holder(remote) == mine

    # This host's holder: its pid is gone, so the lease is free at once, TTL or not.
    local = db.create_session("lease-local", source="gateway")
    ready = ctx.Event()
    proc = ctx.Process(target=_hold_lease_and_lock, args=(url, local, None, 300.0, ready))
    proc.start()
    try:
        assert ready.wait(30), "the holder process never took its lease"
    finally:
        proc.kill()
        proc.join()
    assert db.get_compression_lock_holder(local) is None
    assert db.try_acquire_compression_lock(local, mine)


# -- one clock for every host -----------------------------------------------------------


def _skewed_clock(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """This process's clock ``seconds`` off, as on a host whose clock drifted."""
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + seconds)


def test_a_heartbeat_is_stamped_by_the_server_clock_not_the_hosts(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes.state import make_holder

    with SessionDB(url=url) as behind, SessionDB(url=url) as other:
        lagging, fresh = make_holder(), make_holder()
        _skewed_clock(monkeypatch, -600)  # this "host" is ten minutes behind
        behind.gateway.claim_gateway_inputs(lagging, takeover_after=60)
        kept = behind.gateway.enqueue_gateway_input("telegram:1", {"text": "wait"}, owner=lagging)
        monkeypatch.undo()

        assert other.gateway.claim_gateway_inputs(fresh, takeover_after=60) == []
        assert [r["owner"] for r in other.gateway.pending_gateway_inputs()] == [lagging]
        assert not other.gateway.delete_gateway_input(kept, owner=fresh)


def test_a_lease_is_timed_by_the_server_clock_not_the_hosts(
    db: SessionDB, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    segment = db.create_session(source="cli")
    elsewhere = "another-host:pid=1:agent=a"  # not this host: only its TTL frees it
    _skewed_clock(monkeypatch, -600)
    assert db.try_acquire_compression_lock(segment, elsewhere, ttl_seconds=300)
    monkeypatch.undo()

    with SessionDB(url=url) as other:
        assert other.get_compression_lock_holder(segment) == elsewhere
        assert not other.try_acquire_compression_lock(segment, "me:pid=2:agent=b")
