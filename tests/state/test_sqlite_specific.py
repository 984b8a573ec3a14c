"""What only the SQLite backend has: files, modes, WAL, the shared writer connection,
read-only opening, corrupt files, the busy lock across processes (invariants 4, 10, 13).
"""

from __future__ import annotations

import sqlite3
import stat
import threading
import time
from pathlib import Path

import psutil
import pytest

from hermes.state import (
    CorruptStoreError,
    ReadOnlyStoreError,
    SessionDB,
    StateError,
    StoreBusyError,
    StoreUnavailableError,
)
from hermes.state.schema.migrations import VERSION_TABLE

from . import workers
from .helpers import StoreSpec, chain, rotate
from .procs import CTX, Processes


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def opened():
    """Close every SessionDB a test opens, even when it fails."""
    dbs: list[SessionDB] = []

    def open_(*args, **kwargs) -> SessionDB:
        db = SessionDB(*args, **kwargs)
        dbs.append(db)
        return db

    yield open_
    for db in reversed(dbs):
        db.close()


def _filled(path: Path) -> None:
    """A store with a rotated conversation in it, closed (WAL checkpointed)."""
    with SessionDB(db_path=path) as db:
        db.create_session("root", source="cli", title="T")
        db.append_messages("root", [{"role": "user", "content": f"hello {n}"} for n in range(20)])
        rotate(db, "root")


def _fingerprint(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def _wal_size(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


# -- files and modes -----------------------------------------------------------------


def test_state_files_are_created_0600_in_a_0700_folder(tmp_path: Path, opened) -> None:
    path = tmp_path / "new-home" / "state.db"
    db = opened(db_path=path)
    db.create_session("s", source="cli")
    db.append_message("s", "user", "hi")
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        assert stat.S_IMODE((path.parent / name).stat().st_mode) == 0o600, name


def test_the_store_runs_in_wal_mode(path: Path, opened) -> None:
    opened(db_path=path)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    raw.close()


def test_synchronous_is_full_by_default(path: Path, opened) -> None:
    db = opened(db_path=path)
    assert db._conn.execute("PRAGMA synchronous").fetchone()["synchronous"] == 2


def test_synchronous_can_be_relaxed_to_normal(
    tmp_path: Path, opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = opened(db_path=tmp_path / "a.db", synchronous="normal")
    assert db._conn.execute("PRAGMA synchronous").fetchone()["synchronous"] == 1
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text("state:\n  synchronous: normal\n")
    monkeypatch.setenv("HERMES_HOME", str(home))
    db = opened(db_path=tmp_path / "b.db")  # the config switch
    assert db._conn.execute("PRAGMA synchronous").fetchone()["synchronous"] == 1


def test_a_zero_length_file_is_a_new_store(path: Path, opened) -> None:
    path.touch(mode=0o600)  # e.g. a crash right after the file was created
    db = opened(db_path=path)
    assert db.backend.schema_version() >= 1
    db.create_session("s", source="cli")


# -- opening never writes --------------------------------------------------------------


def test_opening_an_existing_database_performs_no_write(path: Path) -> None:
    _filled(path)
    before = _fingerprint(path)
    with SessionDB(db_path=path) as db:
        assert db.resolve_tip("root") != "root"
        db.get_conversation_messages("root")
        db.search_messages("hello")
        db.list_conversations()
        list(db.export_conversation("root", "md"))
        assert _fingerprint(path) == before
        assert _wal_size(path) == 0
    assert _fingerprint(path) == before


def test_read_only_opening_never_writes(path: Path) -> None:
    _filled(path)
    before = _fingerprint(path)
    with SessionDB(db_path=path, read_only=True) as db:
        assert len(db.get_conversation_messages("root")) == 20
        assert db.search_messages("hello")
        with pytest.raises(ReadOnlyStoreError):
            db.append_message("root", "user", "no")
        with pytest.raises(ReadOnlyStoreError):
            db.try_acquire_compression_lock("root", "x")
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            db._conn.execute("DELETE FROM messages")
    assert _fingerprint(path) == before
    assert _wal_size(path) == 0


def test_read_only_uses_its_own_connection(path: Path, opened) -> None:
    writer = opened(db_path=path)
    reader = opened(db_path=path, read_only=True)
    assert reader._conn is not writer._conn
    writer.create_session("s", source="cli")
    assert reader.get_session("s") is not None  # sees committed writes


def test_read_only_opening_of_a_missing_file_creates_nothing(path: Path) -> None:
    with pytest.raises(StoreUnavailableError, match="No state database"):
        SessionDB(db_path=path, read_only=True)
    assert not path.exists()


def test_read_only_opening_of_a_store_that_needs_migrating_refuses(path: Path) -> None:
    raw = sqlite3.connect(path)
    raw.execute(VERSION_TABLE)
    raw.execute("INSERT INTO schema_version VALUES (1, 'first', 0)")
    raw.commit()
    raw.close()
    before = _fingerprint(path)
    with pytest.raises(StateError, match="needs an upgrade") as info:
        SessionDB(db_path=path, read_only=True)
    assert info.value.diagnosis.kind == "older"
    assert _fingerprint(path) == before


def test_read_only_opening_of_an_empty_file_says_it_is_empty(path: Path) -> None:
    path.touch(mode=0o600)
    with pytest.raises(StoreUnavailableError, match="is an empty file") as info:
        SessionDB(db_path=path, read_only=True)
    assert "upgrade" not in str(info.value)
    assert path.read_bytes() == b""


@pytest.mark.parametrize("read_only", [False, True], ids=["writer", "read-only"])
def test_a_corrupt_file_raises_and_is_left_untouched(path: Path, read_only: bool) -> None:
    path.write_bytes(b"this is not a database at all\n" * 200)
    before = _fingerprint(path)
    with pytest.raises(CorruptStoreError) as info:
        SessionDB(db_path=path, read_only=read_only)
    assert str(path) in str(info.value)
    assert _fingerprint(path) == before
    assert not Path(f"{path}-wal").exists()


# Regression (found by this suite; fixed in ae4a419): a valid SQLite file written by
# another program (no schema_version, its own tables) was taken over: hermes switched
# it to WAL and created its tables in it, although CorruptStoreError is documented for
# "not a hermes state database".
def test_a_foreign_sqlite_database_is_refused_and_left_untouched(path: Path) -> None:
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE bookmarks (url TEXT)")
    raw.execute("INSERT INTO bookmarks VALUES ('https://example.org')")
    raw.commit()
    raw.close()
    before = _fingerprint(path)
    with pytest.raises(CorruptStoreError):
        SessionDB(db_path=path).close()
    assert _fingerprint(path) == before


# -- one writer connection per file per process ------------------------------------------


def test_instances_on_one_file_share_one_writer_connection(
    tmp_path: Path, path: Path, opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = opened(db_path=path)
    second = opened(db_path=str(path))
    link = tmp_path / "link.db"
    link.symlink_to(path)
    third = opened(db_path=link)
    monkeypatch.chdir(tmp_path)
    fourth = opened(db_path="state.db")
    assert first._conn is second._conn is third._conn is fourth._conn
    other = opened(db_path=tmp_path / "other.db")
    assert other._conn is not first._conn


def test_the_shared_connection_outlives_all_but_the_last_instance(path: Path) -> None:
    first, second = SessionDB(db_path=path), SessionDB(db_path=path)
    conn = first._conn
    first.close()
    second.create_session("s", source="cli")  # the shared connection is still open
    second.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")
    with SessionDB(db_path=path) as third:
        assert third._conn is not conn
        assert third.get_session("s") is not None


# BUG (store, SQLite, since 99cbfe5): every thread that reads gets its own read
# connection (threading.local), and the backend keeps each one in ``readers`` until the
# store closes, so a long-running process that starts short-lived threads (a gateway
# event, a background review) leaks two file descriptors per thread until it hits
# EMFILE. See the final report.
def test_read_connections_of_finished_threads_are_released(path: Path, opened) -> None:
    db = opened(db_path=path)
    db.create_session("s", source="cli")
    me = psutil.Process()

    def read_in_a_thread() -> None:
        thread = threading.Thread(target=db.get_session, args=("s",))
        thread.start()
        thread.join()

    read_in_a_thread()
    before = me.num_fds()
    for _ in range(100):
        read_in_a_thread()
    assert me.num_fds() - before < 10


def test_the_raw_connection_is_usable_from_other_threads(path: Path, opened) -> None:
    db = opened(db_path=path)
    db.create_session("PARENT", source="discord")
    ids = chain(db, "PARENT", 2)
    counts: list[int] = []
    errors: list[BaseException] = []

    def count_children() -> None:  # the seed test's query, from another thread
        try:
            rows = db._conn.execute(
                "SELECT id FROM sessions WHERE parent_session_id = ?", ("PARENT",)
            ).fetchall()
            counts.append(len(rows))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=count_children) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert counts == [1] * 8
    assert db.resolve_tip("PARENT") == ids[-1]


# -- O(1) tip resolution (invariant 4) ----------------------------------------------------


def _connections(db: SessionDB) -> list[sqlite3.Connection]:
    """The writer, and the pooled read connections (one at least, after a warm-up read)."""
    db.list_conversations(limit=1)
    return [db._conn, *db.backend._shared.idle]


def _statements(db: SessionDB, call) -> list[str]:
    seen: list[str] = []
    conns = _connections(db)
    for conn in conns:
        conn.set_trace_callback(seen.append)
    try:
        call()
    finally:
        for conn in conns:
            conn.set_trace_callback(None)
    return seen


@pytest.mark.parametrize(
    "operation",
    ["resolve_tip", "append_to_stale_id", "get_route", "get_lineage"],
)
def test_following_a_stale_id_costs_the_same_whatever_the_chain_length(
    path: Path, opened, operation: str
) -> None:
    db = opened(db_path=path)
    counts = {}
    for length in (2, 40):
        root = db.create_session(f"root{length}", source="cli")
        ids = chain(db, root, length)
        db.gateway.set_route(f"key{length}", root)
        call = {
            "resolve_tip": lambda root=root: db.resolve_tip(root),
            "append_to_stale_id": lambda root=root: db.append_message(root, "user", "x"),
            "get_route": lambda length=length: db.gateway.get_route(f"key{length}"),
            "get_lineage": lambda root=root: db.get_lineage(root),
        }[operation]
        statements = _statements(db, call)
        counts[length] = len(statements)
        assert any("sessions" in sql for sql in statements), statements  # not vacuous
        assert db.resolve_tip(root) == ids[-1]
        for sql in statements:
            if sql.lstrip().upper().startswith("SELECT") and "sessions" in sql:
                plan = " ".join(r["detail"] for r in db._conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
                assert "SCAN sessions" not in plan, f"{sql}\n-> {plan}"
    assert counts[2] == counts[40], counts


def test_an_append_looks_up_only_the_uids_its_caller_gave(path: Path, opened) -> None:
    """A uid the store makes is new by construction; one the caller gives may be a retry."""
    db = opened(db_path=path)
    sid = db.create_session("S", source="cli")

    def uid_lookups(call) -> list[str]:
        statements = _statements(db, call)
        assert any("INSERT INTO messages" in sql for sql in statements), statements
        return [sql for sql in statements if "SELECT message_uid" in sql]

    assert uid_lookups(lambda: db.append_message(sid, "user", "made here")) == []
    assert len(uid_lookups(lambda: db.append_message(sid, "user", "a", message_uid="u1"))) == 1
    again = db.append_messages(sid, [{"role": "user", "content": "a", "message_uid": "u1"},
                                     {"role": "user", "content": "b"}])  # fmt: skip
    assert again.stored == 1
    assert [m["content"] for m in db.get_messages(sid)] == ["made here", "a", "b"]


# -- invariants planted behind the store's back ----------------------------------------------


def test_invariant_violations_reports_what_the_indexes_would_have_stopped(
    path: Path, opened
) -> None:
    db = opened(db_path=path)
    db.create_session("root", source="cli")
    child = rotate(db, "root")
    assert db.invariant_violations() == []
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("DROP INDEX sessions_one_live_tip")
    raw.execute("DROP INDEX sessions_one_compression_child")
    columns = (
        "id, conversation_id, parent_session_id, lineage, segment_index, source, started_at,"
        " last_active_at"
    )
    raw.execute(
        f"INSERT INTO sessions ({columns}) SELECT 'twin', conversation_id, parent_session_id,"
        " lineage, segment_index + 10, source, started_at, last_active_at FROM sessions"
        " WHERE id = ?",
        (child,),
    )
    raw.execute(
        "INSERT INTO messages (session_id, message_uid, role, content, created_at)"
        " SELECT 'root', 'orphan', 'user', 'orphan write', ended_at + 1 FROM sessions"
        " WHERE id = 'root'"
    )
    raw.close()
    problems = db.invariant_violations()
    assert any("2 live tips" in p for p in problems), problems
    assert any("2 compression children" in p for p in problems), problems
    assert any("root" in p and "later messages" in p for p in problems), problems


def test_a_database_trigger_failing_mid_batch_rolls_the_whole_batch_back(
    path: Path, opened
) -> None:
    db = opened(db_path=path)
    db.create_session("s", source="cli")
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute(
        "CREATE TRIGGER refuse_boom BEFORE INSERT ON messages WHEN NEW.content = 'boom'"
        " BEGIN SELECT RAISE(ABORT, 'boom refused'); END"
    )
    raw.close()
    batch = [{"role": "user", "content": c} for c in ("one", "two", "boom", "four")]
    with pytest.raises(Exception, match="boom refused"):
        db.append_messages("s", batch)
    assert db.get_messages("s") == []
    assert db.get_session("s")["message_count"] == 0
    assert db.search_messages("one") == []


# -- the write lock across processes ------------------------------------------------------


def test_a_write_that_finally_fails_raises_and_stores_nothing(path: Path, opened) -> None:
    db = opened(db_path=path)
    db.create_session("s", source="cli")
    db.backend.patience = 0.3
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreBusyError, match="locked"):
            db.append_message("s", "user", "blocked")
    finally:
        blocker.execute("COMMIT")
        blocker.close()
    assert db.get_messages("s") == []
    assert db.append_message("s", "user", "later").stored == 1


@pytest.mark.parametrize("read_only", [False, True])
def test_opening_a_store_another_process_has_locked_waits_and_is_not_called_damaged(
    path: Path, opened, read_only: bool
) -> None:
    """A store being created or written in rollback mode (another process's first open
    switching it to WAL, say) is locked for a moment; the opener waits for it. It used
    to give up after 0.1 s and call the healthy file damaged."""
    if read_only:
        opened(db_path=path).close()  # a store to read
        raw = sqlite3.connect(path, isolation_level=None)
        raw.execute("PRAGMA journal_mode=DELETE")  # readers now block on a writer's lock
        raw.close()
    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN EXCLUSIVE")
    released = threading.Event()

    def release_soon() -> None:
        time.sleep(1.0)
        blocker.execute("COMMIT")
        blocker.close()
        released.set()

    threading.Thread(target=release_soon, daemon=True).start()
    db = opened(db_path=path, read_only=read_only)
    assert released.is_set()  # it waited for the lock instead of failing
    assert db.list_conversations() == []


def test_writers_outwait_another_process_holding_the_lock_for_seven_seconds(
    path: Path, opened
) -> None:
    db = opened(db_path=path)
    db.create_session("s", source="cli")
    spec = StoreSpec("sqlite", path=str(path))
    writers, per_writer = 4, 15
    with Processes() as procs:
        procs.start(workers.hold_write_lock, str(path), 7.0)
        procs.expect("locked")
        events = [CTX.Event() for _ in range(writers)]  # kept alive until the children start
        for n, event in enumerate(events):
            procs.start(workers.append_stream, spec, "s", f"w{n}", per_writer, False, 0.0, event)
        procs.expect("ready", writers)
        [committed_meanwhile] = procs.expect("released", timeout=60)
        procs.expect("done", writers)
    assert committed_meanwhile == 0  # the writers really had to wait for the lock
    assert procs.order.index("released") > max(
        i for i, tag in enumerate(procs.order) if tag == "ready"
    )
    rows = db.get_messages("s")
    assert sorted(r["message_uid"] for r in rows) == sorted(
        f"w{n}-{k}" for n in range(writers) for k in range(per_writer)
    )


# -- the search index, current at every commit ------------------------------------------

# The rows whose index entry is deferred: those above the watermark. A commit leaves none;
# a store an older hermes wrote may hold some until its next write.
DEFERRED = (
    "SELECT COUNT(*) AS n FROM messages"
    " WHERE id > (SELECT indexed_through FROM messages_fts_watermark)"
)


def plant_deferred(path: Path, session_id: str, texts: list[str]) -> None:
    """Rows as an older hermes left them: stored, their index entry deferred."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        first = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM messages").fetchone()[0]
        conn.executemany(
            "INSERT INTO messages (id, session_id, message_uid, role, content, created_at,"
            " timestamp) VALUES (?, ?, ?, 'user', ?, 1.0, 1.0)",
            [(first + n, session_id, f"planted{first + n}", t) for n, t in enumerate(texts)],
        )
    finally:
        conn.close()


def test_every_commit_leaves_the_index_current(path: Path, opened) -> None:
    db = opened(db_path=path)
    db.create_session("s", source="cli")
    count = 40
    for n in range(count):
        db.append_message("s", "user", f"note number{n} about café 東京{n}")
        assert db._conn.execute(DEFERRED).fetchone()["n"] == 0
    for n in (0, count // 2, count - 1):
        hits = db.search_messages(f"number{n}")
        assert [h["snippet"] for h in hits] == [f"note number{n} about café 東京{n}"]
    assert len(db.search_messages("cafe", limit=500)) == count  # diacritics fold alike
    assert len(db.search_messages("東京", limit=500)) == count
    newest = db.search_messages("note", limit=3)
    assert [h["message_id"] for h in newest] == sorted(
        (h["message_id"] for h in newest), reverse=True
    )


def test_rows_an_older_hermes_deferred_are_found_then_indexed(path: Path, opened) -> None:
    db = opened(db_path=path)
    db.create_session("s", source="cli")
    db.append_message("s", "user", "an indexed note")
    plant_deferred(path, "s", [f"deferred word{n}" for n in range(5)])
    assert db._conn.execute(DEFERRED).fetchone()["n"] == 5
    assert [h["snippet"] for h in db.search_messages("word3")] == ["deferred word3"]
    db.append_message("s", "user", "the next write")  # its commit indexes them too
    assert db._conn.execute(DEFERRED).fetchone()["n"] == 0
    db._conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
    indexed = db._conn.execute("SELECT COUNT(*) AS n FROM messages_fts").fetchone()["n"]
    assert indexed == 7
    assert len(db.search_messages("deferred", limit=50)) == 5


def test_deleting_deferred_rows_keeps_the_index_sound(path: Path, opened) -> None:
    db = opened(db_path=path)
    per = 5
    for sid in ("b", "a"):
        db.create_session(sid, source="cli")
        for n in range(per):
            db.append_message(sid, "user", f"{sid} message {n}")
    plant_deferred(path, "a", [f"a message {n}" for n in range(per, 2 * per)])
    assert db._conn.execute(DEFERRED).fetchone()["n"] == per
    db.delete_conversation("a")
    db._conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
    assert db._conn.execute(DEFERRED).fetchone()["n"] == 0
    hits = db.search_messages("message", limit=500)
    assert {h["session_id"] for h in hits} == {"b"} and len(hits) == per


def test_ids_stay_above_the_watermark_when_the_newest_rows_are_deleted(path: Path, opened) -> None:
    db = opened(db_path=path)
    for sid in ("kept", "gone"):
        db.create_session(sid, source="cli")
    db.append_message("kept", "user", "an older note")
    db.append_messages(  # indexed at its commit: the watermark passes the newest ids
        "gone", [{"role": "user", "content": f"gone {n}"} for n in range(3)]
    )
    db.delete_conversation("gone")  # MAX(id) falls below the watermark
    db.append_message("kept", "user", "a fresh kiwi")
    assert [h["snippet"] for h in db.search_messages("kiwi")] == ["a fresh kiwi"]
    for n in range(5):  # each message indexed once, none lost
        db.append_message("kept", "user", f"later {n}")
    indexed = db._conn.execute("SELECT COUNT(*) AS n FROM messages_fts").fetchone()["n"]
    assert indexed == 2 + 5 and db._conn.execute(DEFERRED).fetchone()["n"] == 0
    assert len(db.search_messages("kiwi")) == 1


def test_searching_the_deferred_rows_reads_a_range_of_the_primary_key(path: Path, opened) -> None:
    db = opened(db_path=path)
    db.create_session("s", source="cli")
    db.append_message("s", "user", "a deferred aardvark")
    statements = _statements(db, lambda: db.search_messages("aardvark", source="cli"))
    deferred = [sql for sql in statements if "messages_fts_watermark" in sql]
    assert deferred, statements  # not vacuous
    for sql in deferred:
        plan = " ".join(r["detail"] for r in db._conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "SEARCH m USING INTEGER PRIMARY KEY (rowid>?)" in plan, f"{sql}\n-> {plan}"


def test_a_store_from_before_migration_9_keeps_every_message_findable(path: Path) -> None:
    from hermes.state.schema import migrations
    from hermes.state.search import spaced_cjk
    from hermes.state.sqlite.backend import SQLiteBackend
    from hermes.state.sqlite.schema import MIGRATIONS

    texts = {n: f"note word{n} 東京{n}" for n in range(1, 41)}
    older = SQLiteBackend(path)
    try:
        migrations.apply(older, MIGRATIONS[:8])

        def plant(tx) -> None:  # as hermes before migration 9 left it: 31..40 deferred
            tx.run(
                "INSERT INTO sessions (id, conversation_id, source, started_at, last_active_at)"
                " VALUES ('s', 's', 'cli', 1.0, 1.0)"
            )
            for n, text in texts.items():
                tx.run(
                    "INSERT INTO messages (id, session_id, message_uid, role, content,"
                    " created_at) VALUES (?, 's', ?, 'user', ?, 1.0)",
                    (n, f"uid{n}", text),
                )
                if n <= 30:
                    tx.run(
                        "INSERT INTO messages_fts (rowid, content) VALUES (?, ?)",
                        (n, spaced_cjk(text)),
                    )
                else:
                    tx.run("INSERT INTO messages_fts_pending (id) VALUES (?)", (n,))

        older.transact(plant, write=True)
    finally:
        older.close()
    with SessionDB(db_path=path) as db:
        conn = db._conn
        assert not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'messages_fts_pending'"
        ).fetchall()
        for n in (1, 30, 31, 40):
            assert [h["snippet"] for h in db.search_messages(f"word{n}")] == [texts[n]]
        assert len(db.search_messages("東京", limit=500)) == len(texts)
        for n in range(5):
            db.append_message("s", "user", f"after {n}")
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
        count = conn.execute("SELECT COUNT(*) AS n FROM messages_fts").fetchone()["n"]
        assert count == len(texts) + 5  # every message indexed once
        assert conn.execute(DEFERRED).fetchone()["n"] == 0
