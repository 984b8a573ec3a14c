"""State-store benchmarks: SessionDB next to raw drivers on the same data, same run.

Every figure is measured on ~500-character messages and printed next to the raw
``sqlite3`` figure for the same durability (WAL, same ``synchronous``), measured in the
same run, then compared with the targets (docs/benchmarks.md):

- one message per transaction, FULL: >= 0.6x raw sqlite3 (a plain table, no index),
  and >= 0.9x a bare table carrying the same FTS5 index, same durability;
- a turn's batch in one transaction: >= 20,000 msgs/s;
- a 10k-message segment read in < 40 ms; a rare word among 100k messages in < 10 ms;
- 4 writers together no slower than one writer, nothing lost; the database <= 3x the text.

With ``HERMES_TEST_PG_URL`` set, the same scenarios run on PostgreSQL (a throwaway
schema) side by side, next to raw ``psycopg``, plus 8 processes appending at once.

    python -m benchmarks --only store [--quick] [--backend sqlite|postgres|all]
    python -m benchmarks.bench_store [--quick] [--backend ...] [--profile NAME]
    python -m benchmarks.bench_store --append-only [--repeat 3]   # the fsync-bound append
"""

from __future__ import annotations

import argparse
import cProfile
import io
import multiprocessing
import os
import pstats
import random
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PG_ENV = "HERMES_TEST_PG_URL"
CTX = multiprocessing.get_context("spawn")

RARE = "quetzalcoatlus"  # in a handful of messages of the corpus
COMMON = "river"  # in every message of the corpus
CJK = "北京"  # in one message in a hundred, inside a Chinese sentence
CJK_SENTENCE = "我们明天去北京开会，然后回上海。"


@dataclass(frozen=True)
class Sizes:
    messages: int = 10_000  # a segment: per-transaction writes, batches, reads, rotation
    corpus: int = 100_000  # messages searched
    batch: int = 10  # a turn's messages
    lease_ops: int = 2_000
    writers: int = 4
    pg_writers: int = 8
    repeats: int = 7  # timed repetitions of reads and searches (the median is shown)


QUICK = Sizes(messages=1_000, corpus=10_000, lease_ops=300, repeats=5)


# -- message text -----------------------------------------------------------------


def _vocabulary(seed: int = 7, size: int = 3000) -> list[str]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(size)]


def texts(count: int, *, seed: int = 1, rare_every: int = 0, cjk_every: int = 0) -> list[str]:
    """``count`` messages of ~500 characters; every one holds COMMON."""
    rng = random.Random(seed)
    words = _vocabulary()
    out = []
    for n in range(count):
        parts = [COMMON]
        if rare_every and n % rare_every == rare_every // 2:
            parts.append(RARE)
        if cjk_every and n % cjk_every == cjk_every // 3:
            parts.append(CJK_SENTENCE)
        while sum(len(p) + 1 for p in parts) < 500:
            parts.append(rng.choice(words))
        rng.shuffle(parts)
        out.append(" ".join(parts)[:520])
    return out


# -- stores -----------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Where a SessionDB and its raw twin live; picklable for spawned writers."""

    backend: str  # "sqlite" or "postgres"
    location: str  # SQLite: the hermes file; PostgreSQL: a URL on a private schema
    raw_location: str  # SQLite: the raw file; PostgreSQL: the same URL
    synchronous: str = "full"
    base_url: str = ""  # PostgreSQL: the server URL, for another private schema

    def open(self) -> Any:
        from hermes.state import SessionDB

        if self.backend == "sqlite":
            return SessionDB(db_path=self.location, synchronous=self.synchronous)
        return SessionDB(url=self.location)

    def raw(self) -> RawStore:
        if self.backend == "sqlite":
            return RawSQLite(self.raw_location, self.synchronous)
        return RawPostgres(self.raw_location)

    @property
    def raw_fts_location(self) -> str:
        """SQLite: the file of the bare table carrying an FTS5 index."""
        return str(Path(self.raw_location).with_name("raw_fts.db"))

    def raw_fts(self) -> RawSQLite:
        return RawSQLite(self.raw_fts_location, self.synchronous, fts=True)


class RawSQLite:
    """The baseline: a plain table (no index), WAL, the same ``synchronous``.

    With ``fts``, the table carries an external-content FTS5 index declared with
    hermes' tokenizer, written in the same transaction as each row: what a store that
    finds every message at once costs at least. (External-content and hermes'
    contentless index write the same b-trees: %_data, %_idx, %_docsize.)
    """

    def __init__(self, path: str, synchronous: str, *, fts: bool = False) -> None:
        self.fts = fts
        self.conn = sqlite3.connect(
            path, isolation_level=None, timeout=120, check_same_thread=False
        )
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS raw_messages (session_id TEXT, role TEXT, content TEXT,"
            " created_at REAL)"
        )
        if fts:
            self.conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS raw_fts USING fts5 (content,"
                " content='raw_messages', tokenize='unicode61 remove_diacritics 2')"
            )

    def insert_one(self, session_id: str, content: str) -> None:
        if not self.fts:
            self.conn.execute(
                "INSERT INTO raw_messages VALUES (?, 'user', ?, ?)",
                (session_id, content, time.time()),
            )
            return
        self.conn.execute("BEGIN IMMEDIATE")
        rowid = self.conn.execute(
            "INSERT INTO raw_messages VALUES (?, 'user', ?, ?)", (session_id, content, time.time())
        ).lastrowid
        self.conn.execute("INSERT INTO raw_fts (rowid, content) VALUES (?, ?)", (rowid, content))
        self.conn.execute("COMMIT")

    def insert_batch(self, session_id: str, contents: list[str]) -> None:
        now = time.time()
        self.conn.execute("BEGIN IMMEDIATE")
        for content in contents:
            rowid = self.conn.execute(
                "INSERT INTO raw_messages VALUES (?, 'user', ?, ?)", (session_id, content, now)
            ).lastrowid
            if self.fts:
                self.conn.execute(
                    "INSERT INTO raw_fts (rowid, content) VALUES (?, ?)", (rowid, content)
                )
        self.conn.execute("COMMIT")

    def read(self, session_id: str) -> list[tuple]:
        return self.conn.execute(
            "SELECT rowid, session_id, role, content, created_at FROM raw_messages"
            " WHERE session_id = ? ORDER BY rowid",
            (session_id,),
        ).fetchall()

    def count(self, prefix: str) -> int:
        return self.conn.execute(
            "SELECT COUNT(*) FROM raw_messages WHERE session_id LIKE ?", (prefix + "%",)
        ).fetchone()[0]

    def close(self) -> None:
        self.conn.close()


class RawPostgres:
    """The baseline on PostgreSQL: a plain table (no index), autocommit inserts."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS raw_messages (session_id TEXT, role TEXT, content TEXT,"
            " created_at DOUBLE PRECISION)"
        )

    def insert_one(self, session_id: str, content: str) -> None:
        self.conn.execute(
            "INSERT INTO raw_messages VALUES (%s, 'user', %s, %s)",
            (session_id, content, time.time()),
        )

    def insert_batch(self, session_id: str, contents: list[str]) -> None:
        now = time.time()
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO raw_messages VALUES (%s, 'user', %s, %s)",
                [(session_id, c, now) for c in contents],
            )

    def read(self, session_id: str) -> list[tuple]:
        return self.conn.execute(
            "SELECT ctid, session_id, role, content, created_at FROM raw_messages"
            " WHERE session_id = %s",
            (session_id,),
        ).fetchall()

    def count(self, prefix: str) -> int:
        return self.conn.execute(
            "SELECT COUNT(*) FROM raw_messages WHERE session_id LIKE %s", (prefix + "%",)
        ).fetchone()[0]

    def close(self) -> None:
        self.conn.close()


RawStore = RawSQLite | RawPostgres


@contextmanager
def sqlite_target(synchronous: str) -> Iterator[Target]:
    folder = tempfile.mkdtemp(prefix="hermes-bench-")
    try:
        yield Target(
            "sqlite",
            str(Path(folder, "state.db")),
            str(Path(folder, "raw.db")),
            synchronous,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def postgres_target(base_url: str) -> Iterator[Target]:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base_url, autocommit=True) as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
        except psycopg.errors.UniqueViolation:
            pass
        conn.execute(f"CREATE SCHEMA {schema}")
    joiner = "&" if "?" in base_url else "?"
    url = f"{base_url}{joiner}options=-csearch_path%3D{schema},public"
    try:
        yield Target("postgres", url, url, base_url=base_url)
    finally:
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def fresh_target(like: Target) -> Any:
    """An empty store of the same kind, so a measurement (size) sees only its own data."""
    if like.backend == "sqlite":
        return sqlite_target(like.synchronous)
    return postgres_target(like.base_url)


# -- timing helpers -----------------------------------------------------------------


class Profiler:
    """cProfile around the hermes side of the measurements named by ``--profile``."""

    def __init__(self, names: list[str]) -> None:
        self.names = set(names)
        self.profiles: dict[str, cProfile.Profile] = {}

    @contextmanager
    def maybe(self, name: str) -> Iterator[None]:
        if name not in self.names:
            yield
            return
        profile = self.profiles.setdefault(name, cProfile.Profile())
        profile.enable()
        try:
            yield
        finally:
            profile.disable()

    def reports(self) -> list[str]:
        out = []
        for name, profile in self.profiles.items():
            text = io.StringIO()
            pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(18)
            out.append(f"--- cProfile: {name} (sorted by own time) ---\n{text.getvalue()}")
        return out


def interleaved(
    blocks: int, mine: Callable[[int], int], theirs: Callable[[int], int]
) -> tuple[float, float]:
    """Rates of two sides run in alternating blocks (A B B A ...), so that both see the
    same machine: other work on a shared host moves fsync times by several x."""
    rates = interleaved_sides(blocks, {"mine": mine, "theirs": theirs})
    return rates["mine"], rates["theirs"]


def interleaved_sides(blocks: int, sides: dict[str, Callable[[int], int]]) -> dict[str, float]:
    """Rates of any number of sides run in blocks whose order alternates (A B C, C B A,
    ...), so each side sees the same machine and goes first as often as last."""
    names = list(sides)
    took = dict.fromkeys(names, 0.0)
    done = dict.fromkeys(names, 0)
    for block in range(blocks):
        for side in names if block % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            done[side] += sides[side](block)
            took[side] += time.perf_counter() - start
    return {side: done[side] / took[side] for side in names}


def paired_median_ms(
    mine: Callable[[], object], theirs: Callable[[], object], repeats: int
) -> tuple[float, float]:
    mine(), theirs()  # warm the caches once
    samples: dict[str, list[float]] = {"mine": [], "theirs": []}
    for n in range(repeats):
        order = (("mine", mine), ("theirs", theirs))
        for side, fn in order if n % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            fn()
            samples[side].append((time.perf_counter() - start) * 1000)
    return statistics.median(samples["mine"]), statistics.median(samples["theirs"])


# -- scenarios ----------------------------------------------------------------------


BLOCKS = 10  # alternating blocks per write measurement
# One message per commit is fsync-bound, and fsync times on a shared host move within a
# second: short blocks (~0.05 s) let every side see the same disk.
APPEND_BLOCKS = 100


def _blocks(items: list, blocks: int = BLOCKS) -> list[list]:
    size = max(1, -(-len(items) // blocks))
    return [items[i : i + size] for i in range(0, len(items), size)]


def one_per_transaction(target: Target, sizes: Sizes, prof: Profiler) -> dict[str, float]:
    """msgs/s appending one message per transaction, interleaved: hermes, the bare
    table ("raw") and, on SQLite, the bare table with an FTS5 index ("raw_fts")."""
    blocks = _blocks(texts(sizes.messages, seed=2), APPEND_BLOCKS)
    raws = {"raw": target.raw()}
    if target.backend == "sqlite":
        raws["raw_fts"] = target.raw_fts()
    try:
        with target.open() as db:
            sid = db.create_session(source="bench")

            def mine(n: int) -> int:
                with prof.maybe(f"insert_{target.backend}_{target.synchronous}"):
                    for content in blocks[n]:
                        db.append_message(sid, "user", content)
                return len(blocks[n])

            def bare(store: RawStore) -> Callable[[int], int]:
                def theirs(n: int) -> int:
                    for content in blocks[n]:
                        store.insert_one("one", content)
                    return len(blocks[n])

                return theirs

            sides = {"hermes": mine, **{name: bare(store) for name, store in raws.items()}}
            return interleaved_sides(len(blocks), sides)
    finally:
        for store in raws.values():
            store.close()


def digested_appends(target: Target, sizes: Sizes) -> tuple[float, float]:
    """msgs/s appending one message per transaction to a conversation of the HTTP API
    (whose messages get history digests) and to another, interleaved."""
    blocks = _blocks(texts(sizes.messages, seed=4))
    roles = ("user", "assistant")
    with target.open() as db:
        api, other = db.create_session(source="api_server"), db.create_session(source="bench")

        def into(sid: str) -> Callable[[int], int]:
            def write(n: int) -> int:
                for k, content in enumerate(blocks[n]):
                    db.append_message(sid, roles[k % 2], content)
                return len(blocks[n])

            return write

        return interleaved(len(blocks), into(api), into(other))


def batches(target: Target, sizes: Sizes, prof: Profiler) -> tuple[float, float, str]:
    """msgs/s writing a turn's batch per transaction; returns the filled segment too."""
    contents = texts(sizes.messages, seed=3)
    turns = [contents[i : i + sizes.batch] for i in range(0, len(contents), sizes.batch)]
    blocks = _blocks(turns)
    raw = target.raw()
    try:
        with target.open() as db:
            sid = db.create_session(source="bench")

            def mine(n: int) -> int:
                with prof.maybe(f"batch_{target.backend}"):
                    for turn in blocks[n]:
                        db.append_messages(sid, [{"role": "user", "content": c} for c in turn])
                return sum(len(t) for t in blocks[n])

            def theirs(n: int) -> int:
                for turn in blocks[n]:
                    raw.insert_batch("batch", turn)
                return sum(len(t) for t in blocks[n])

            mine_rate, raw_rate = interleaved(len(blocks), mine, theirs)
            return mine_rate, raw_rate, sid
    finally:
        raw.close()


def read_segment(target: Target, sid: str, sizes: Sizes, prof: Profiler) -> tuple[float, float]:
    raw = target.raw()
    try:
        with target.open() as db:
            assert len(db.get_messages(sid)) == sizes.messages
            assert len(raw.read("batch")) == sizes.messages

            def mine() -> None:
                with prof.maybe(f"read_{target.backend}"):
                    db.get_messages(sid)

            return paired_median_ms(mine, lambda: raw.read("batch"), sizes.repeats)
    finally:
        raw.close()


def rotation(target: Target, sid: str, sizes: Sizes, prof: Profiler) -> float:
    """ms to publish the child of a ``sizes.messages``-message segment (lease held)."""
    from hermes.state import make_holder

    with target.open() as db:
        tail = db.get_messages(sid)[-20:]
        kept = [{k: m[k] for k in ("role", "content", "message_uid")} for m in tail]
        holder = make_holder()
        assert db.try_acquire_compression_lock(sid, holder)
        watermark = db.last_message_id(sid)
        summary = {"role": "user", "content": "[CONTEXT COMPACTION] " + "summary " * 200}
        with prof.maybe(f"rotation_{target.backend}"):
            start = time.perf_counter()
            db.publish_compression_child(
                sid, holder=holder, messages=[summary, *kept], watermark=watermark
            )
            took = (time.perf_counter() - start) * 1000
        db.release_compression_lock(sid, holder)
    return took


def leases(target: Target, sizes: Sizes, prof: Profiler) -> tuple[float, float]:
    """acquire+release pairs per second; raw: an upsert and a delete, two transactions."""
    from hermes.state import make_holder

    per_block = max(1, sizes.lease_ops // BLOCKS)
    raw = target.raw()
    mark = "?" if target.backend == "sqlite" else "%s"
    raw.conn.execute(
        "CREATE TABLE IF NOT EXISTS raw_locks (session_id TEXT PRIMARY KEY, holder TEXT,"
        " expires_at REAL)"
    )
    try:
        with target.open() as db:
            sid = db.create_session(source="bench")
            holder = make_holder()

            def mine(_n: int) -> int:
                with prof.maybe(f"lease_{target.backend}"):
                    for _ in range(per_block):
                        db.try_acquire_compression_lock(sid, holder)
                        db.release_compression_lock(sid, holder)
                return per_block

            def theirs(_n: int) -> int:
                for _ in range(per_block):
                    raw.conn.execute(
                        f"INSERT INTO raw_locks VALUES ({mark}, {mark}, {mark}) ON CONFLICT"
                        " (session_id) DO UPDATE SET holder = excluded.holder",
                        ("s", "h", time.time() + 300),
                    )
                    raw.conn.execute(f"DELETE FROM raw_locks WHERE session_id = {mark}", ("s",))
                return per_block

            return interleaved(BLOCKS, mine, theirs)
    finally:
        raw.close()


def wal_pages(like: Target, sizes: Sizes, batch: int) -> dict[str, float]:
    """SQLite pages written to the WAL per transaction (hermes, raw, raw_fts), after a
    warm-up: the -wal file's growth over the timed commits, in frames (page + 24-byte
    frame header), with automatic checkpoints off so the file only grows.

    A deterministic view of where a commit's time goes: every page is written, and at
    FULL the WAL is synced, on each commit."""
    contents = texts(2 * sizes.batch * 200, seed=11)
    warm, timed = contents[: len(contents) // 2], contents[len(contents) // 2 :]
    with fresh_target(like) as target:
        raws = {"raw": target.raw(), "raw_fts": target.raw_fts()}
        paths = {"raw": target.raw_location, "raw_fts": target.raw_fts_location}
        try:
            with target.open() as db:
                sid = db.create_session(source="bench")
                results = {}
                for side in ("hermes", "raw", "raw_fts"):
                    conn = db._conn if side == "hermes" else raws[side].conn
                    path = target.location if side == "hermes" else paths[side]

                    def write(chunk: list[str], side: str = side) -> None:
                        if side == "hermes":
                            db.append_messages(sid, [{"role": "user", "content": c} for c in chunk])
                        else:
                            raws[side].insert_batch("pages", chunk)

                    for i in range(0, len(warm), batch):
                        write(warm[i : i + batch])
                    page_size = _pragma(conn, "page_size")
                    conn.execute("PRAGMA wal_autocheckpoint=0")
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    before = os.path.getsize(f"{path}-wal")
                    for i in range(0, len(timed), batch):
                        write(timed[i : i + batch])
                    grown = os.path.getsize(f"{path}-wal") - before
                    conn.execute("PRAGMA wal_autocheckpoint=1000")
                    results[side] = grown / (page_size + 24) / (len(timed) / batch)
                return results
        finally:
            for store in raws.values():
                store.close()


def _pragma(conn: sqlite3.Connection, name: str) -> Any:
    cursor = conn.cursor()
    cursor.row_factory = None  # hermes' connection makes dicts
    return cursor.execute(f"PRAGMA {name}").fetchone()[0]


@dataclass
class Corpus:
    sid: str = ""
    text_bytes: int = 0
    hermes_bytes: int = 0
    raw_bytes: int = 0
    searches: dict[str, tuple[float, float, int]] = field(default_factory=dict)


def search_corpus(like: Target, sizes: Sizes, prof: Profiler) -> Corpus:
    """Fill ``sizes.corpus`` messages in a store of their own, time three searches, and
    weigh the database against the text it holds."""
    with fresh_target(like) as target:
        return _search_corpus(target, sizes, prof)


def _search_corpus(target: Target, sizes: Sizes, prof: Profiler) -> Corpus:
    contents = texts(sizes.corpus, seed=5, rare_every=sizes.corpus // 5, cjk_every=100)
    corpus = Corpus(text_bytes=sum(len(c.encode()) for c in contents))
    with target.open() as db:
        corpus.sid = db.create_session(source="bench")
        for i in range(0, len(contents), 500):
            db.append_messages(
                corpus.sid, [{"role": "user", "content": c} for c in contents[i : i + 500]]
            )
        raw = _raw_search_store(target, contents)
        try:
            for label, query in (("rare word", RARE), ("common word", COMMON), ("CJK word", CJK)):
                hits = len(db.search_messages(query, limit=20))

                def mine(q: str = query, name: str = label.split()[0]) -> None:
                    with prof.maybe(f"search_{target.backend}_{name}"):
                        db.search_messages(q, limit=20)

                mine_ms, raw_ms = paired_median_ms(
                    mine, lambda q=query: raw.search(q), sizes.repeats
                )
                corpus.searches[label] = (mine_ms, raw_ms, hits)
            corpus.raw_bytes = raw.size()
        finally:
            raw.close()
        corpus.hermes_bytes = _hermes_size(target, db)
    return corpus


class _RawSearch:
    """Raw search baselines: FTS5 for words (SQLite), GIN tsvector (PostgreSQL); CJK is
    a substring scan, since neither engine's default tokenizer finds a word inside a
    Chinese sentence."""

    def __init__(self, target: Target, contents: list[str]) -> None:
        self.backend = target.backend
        if target.backend == "sqlite":
            self.path = target.raw_location + ".search"
            self.conn = sqlite3.connect(self.path, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("CREATE TABLE corpus (content TEXT)")
            self.conn.execute("BEGIN")
            self.conn.executemany("INSERT INTO corpus VALUES (?)", [(c,) for c in contents])
            self.conn.execute("COMMIT")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.plain_bytes = os.path.getsize(self.path)  # the text table alone
            self.conn.execute(
                "CREATE VIRTUAL TABLE corpus_fts USING fts5(content, content='corpus')"
            )
            self.conn.execute("INSERT INTO corpus_fts (corpus_fts) VALUES ('rebuild')")
        else:
            import psycopg

            self.conn = psycopg.connect(target.raw_location, autocommit=True)
            self.conn.execute("CREATE TABLE corpus (id BIGSERIAL PRIMARY KEY, content TEXT)")
            with self.conn.cursor() as cur, cur.copy("COPY corpus (content) FROM STDIN") as copy:
                for c in contents:
                    copy.write_row((c,))
            self.conn.execute("VACUUM ANALYZE corpus")
            self.plain_bytes = self.conn.execute("SELECT pg_table_size('corpus')").fetchone()[0]
            self.conn.execute(
                "CREATE INDEX corpus_fts ON corpus USING gin (to_tsvector('simple', content))"
            )

    def search(self, query: str) -> list:
        if self.backend == "sqlite":
            if query == CJK:
                sql = "SELECT rowid FROM corpus WHERE instr(content, ?) > 0"
            else:
                sql = "SELECT rowid FROM corpus_fts WHERE corpus_fts MATCH ?"
            sql += " ORDER BY rowid DESC LIMIT 20"
            return self.conn.execute(sql, (query,)).fetchall()
        if query == CJK:
            sql = "SELECT id FROM corpus WHERE strpos(content, %s) > 0 ORDER BY id DESC LIMIT 20"
        else:
            # Matches first, then the order: asked for ORDER BY id DESC LIMIT 20 directly,
            # the planner walks the primary key backwards and takes seconds on a rare word.
            sql = (
                "WITH hits AS MATERIALIZED (SELECT id FROM corpus WHERE to_tsvector('simple',"
                " content) @@ plainto_tsquery('simple', %s)) SELECT id FROM hits"
                " ORDER BY id DESC LIMIT 20"
            )
        return self.conn.execute(sql, (query,)).fetchall()

    def size(self) -> int:
        """Bytes of the plain text table alone (a raw database without any index)."""
        return self.plain_bytes

    def close(self) -> None:
        self.conn.close()


def _raw_search_store(target: Target, contents: list[str]) -> _RawSearch:
    return _RawSearch(target, contents)


def _hermes_size(target: Target, db: Any) -> int:
    if target.backend == "sqlite":
        db._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        path = Path(target.location)
        return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    import psycopg

    with psycopg.connect(target.location, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        size = conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
            " AND c.relname NOT IN ('corpus')"
        ).fetchone()[0]
        return int(size)


# -- writers together ----------------------------------------------------------------


def _hermes_writer(target: Target, tag: str, count: int, barrier: Any, queue: Any) -> None:
    errors = 0
    with target.open() as db:
        sid = db.create_session(f"{tag}-{uuid.uuid4().hex[:8]}", source="bench")
        contents = texts(count, seed=hash(tag) % 1000)
        barrier.wait(timeout=300)
        start = time.monotonic()
        for content in contents:
            try:
                db.append_message(sid, "user", content)
            except Exception:
                errors += 1
        queue.put((start, time.monotonic(), errors))


def _raw_writer(target: Target, tag: str, count: int, barrier: Any, queue: Any) -> None:
    errors = 0
    raw = target.raw()
    contents = texts(count, seed=hash(tag) % 1000)
    barrier.wait(timeout=300)
    start = time.monotonic()
    for content in contents:
        try:
            raw.insert_one(tag, content)
        except Exception:
            errors += 1
    queue.put((start, time.monotonic(), errors))
    raw.close()


@dataclass
class Together:
    rate: float  # msgs/s, all writers together
    alone: float  # msgs/s, one writer of the same kind, measured interleaved with them
    lost: int
    errors: int


def writers_together(
    target: Target, writers: int, total: int, *, processes: bool, raw: bool
) -> Together:
    """``writers`` threads or processes appending ``total`` messages between them, and one
    writer appending as many alone, in A B B A order."""
    half = max(writers, total // 2)
    runs = [(writers, half), (1, half), (1, half), (writers, half)]
    took = {writers: 0.0, 1: 0.0}
    done = {writers: 0, 1: 0}
    lost = errors = 0
    for count, messages in runs:
        elapsed, stored, failed, expected = _one_run(
            target, count, messages, processes=processes, raw=raw
        )
        took[count] += elapsed
        done[count] += expected
        lost += expected - stored
        errors += failed
    return Together(done[writers] / took[writers], done[1] / took[1], lost, errors)


def _one_run(
    target: Target, writers: int, total: int, *, processes: bool, raw: bool
) -> tuple[float, int, int, int]:
    per = total // writers
    prefix = f"{'raw' if raw else 'hermes'}-{'p' if processes else 't'}-{uuid.uuid4().hex[:8]}"
    body = _raw_writer if raw else _hermes_writer
    if processes:
        barrier, queue = CTX.Barrier(writers), CTX.Queue()
        workers = [
            CTX.Process(target=body, args=(target, f"{prefix}-{n}", per, barrier, queue))
            for n in range(writers)
        ]
    else:
        import queue as queue_module

        barrier, queue = threading.Barrier(writers), queue_module.Queue()
        workers = [
            threading.Thread(target=body, args=(target, f"{prefix}-{n}", per, barrier, queue))
            for n in range(writers)
        ]
    for w in workers:
        w.start()
    reports = [queue.get(timeout=900) for _ in workers]
    for w in workers:
        w.join()
    elapsed = max(r[1] for r in reports) - min(r[0] for r in reports)
    stored = _count_stored(target, prefix, raw)
    return elapsed, stored, sum(r[2] for r in reports), per * writers


def _count_stored(target: Target, prefix: str, raw: bool) -> int:
    if raw:
        store = target.raw()
        try:
            return store.count(prefix)
        finally:
            store.close()
    with target.open() as db:
        row = db._read(
            lambda tx: tx.one(
                "SELECT COUNT(*) AS n FROM messages m JOIN sessions s ON s.id = m.session_id"
                " WHERE s.id LIKE ?",
                (prefix + "%",),
            )
        )
        return int(row["n"])


# -- the report ----------------------------------------------------------------------


@dataclass
class Line:
    measure: str
    unit: str
    values: dict[str, float | None]  # column -> value
    target: str = ""
    verdicts: dict[str, str] = field(default_factory=dict)  # backend -> "ok ..." / "MISSED ..."


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit in ("msgs/s", "ops/s"):
        return f"{value:,.0f}"
    if unit == "x text":
        return f"{value:.2f}x"
    if unit == "count":
        return f"{value:.0f}"
    if unit == "ratio":
        return f"{value:.2f}x"
    return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"


def at_least(value: float, floor: float, what: str = "", tolerance: float = 0.0) -> str:
    ratio = value / floor
    met = ratio >= 1 - tolerance
    return f"{'ok' if met else 'MISSED'} ({ratio:.2f}x of {what or f'{floor:,.0f}'})"


def _vs_raw(value: float, raw: float, floor: float) -> str:
    ratio = value / raw
    return f"{'ok' if ratio >= floor else 'MISSED'} ({ratio:.2f}x raw, needs {floor:.2f}x)"


def _vs_other(value: float, other: float | None) -> str:
    """How an HTTP API conversation's appends compare with another's, run interleaved."""
    return f"{value / other:.2f}x of {other:,.0f}/s in another conversation" if other else ""


NOISE = 0.05  # "no slower than one writer": within 5%, the run-to-run noise here


def at_most(value: float, ceiling: float) -> str:
    ratio = value / ceiling
    return f"{'ok' if ratio <= 1 else 'MISSED'} ({ratio:.2f}x of the limit)"


def _clean(res: Results, backend: str, kind: str) -> str:
    lost, errors = res.get(backend, f"{kind}_lost"), res.get(backend, f"{kind}_errors")
    return "ok" if not lost and not errors else f"MISSED ({lost:.0f} lost, {errors:.0f} errors)"


def render(lines: list[Line], columns: list[str], title: str) -> str:
    header = [
        "measure",
        "unit",
        *columns,
        "target",
        *[f"vs target ({b})" for b in _verdict_keys(lines)],
    ]
    rows = [header]
    for line in lines:
        rows.append(
            [
                line.measure,
                line.unit,
                *[
                    _fmt(line.values.get(c), "ratio" if c.endswith("hermes/raw") else line.unit)
                    for c in columns
                ],
                line.target,
                *[line.verdicts.get(b, "") for b in _verdict_keys(lines)],
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    out = [title, ""]
    for n, row in enumerate(rows):
        cells = [
            cell.ljust(widths[i]) if i in (0, 1) or i >= 2 + len(columns) else cell.rjust(widths[i])
            for i, cell in enumerate(row)
        ]
        out.append("| " + " | ".join(cells) + " |")
        if n == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def _verdict_keys(lines: list[Line]) -> list[str]:
    keys: list[str] = []
    for line in lines:
        for key in line.verdicts:
            if key not in keys:
                keys.append(key)
    return keys


# -- the runs ------------------------------------------------------------------------


@dataclass
class Results:
    """Figures per backend: ``figures[backend][name] = value``."""

    figures: dict[str, dict[str, float]] = field(default_factory=dict)

    def put(self, backend: str, name: str, value: float) -> None:
        self.figures.setdefault(backend, {})[name] = float(value)

    def get(self, backend: str, name: str) -> float | None:
        return self.figures.get(backend, {}).get(name)


def run_sqlite(sizes: Sizes, prof: Profiler, out: Results, log: Callable[[str], None]) -> None:
    for synchronous in ("full", "normal"):
        with sqlite_target(synchronous) as target:
            log(f"sqlite {synchronous}: one message per transaction x {sizes.messages}")
            _one_sqlite(target, sizes, prof, out, f"one_{synchronous}")
            if synchronous == "normal":
                continue
            _digested(target, sizes, out, log)
            for batch in (1, sizes.batch):
                log(f"sqlite: WAL pages per transaction, {batch} message(s) each")
                _pages(target, sizes, out, batch)
            _common(target, sizes, prof, out, log)


def _one_sqlite(target: Target, sizes: Sizes, prof: Profiler, out: Results, key: str) -> None:
    rates = one_per_transaction(target, sizes, prof)
    out.put("sqlite", key, rates["hermes"])
    out.put("sqlite", f"{key}_raw", rates["raw"])
    out.put("sqlite", f"{key}_fts", rates["hermes"])  # the same figure, on the FTS line
    out.put("sqlite", f"{key}_fts_raw", rates["raw_fts"])


def _pages(target: Target, sizes: Sizes, out: Results, batch: int) -> None:
    pages = wal_pages(target, sizes, batch)
    out.put("sqlite", f"pages_{batch}", pages["hermes"])
    out.put("sqlite", f"pages_{batch}_raw", pages["raw"])
    out.put("sqlite", f"pages_{batch}_fts", pages["hermes"])
    out.put("sqlite", f"pages_{batch}_fts_raw", pages["raw_fts"])


def run_append_only(sizes: Sizes, prof: Profiler, repeat: int, log: Callable[[str], None]) -> None:
    """Only the fsync-bound append: one message per FULL commit and its WAL
    pages, ``repeat`` times, each run's figures and then their medians."""
    runs: list[Results] = []
    for n in range(repeat):
        res = Results()
        with sqlite_target("full") as target:
            log(f"run {n + 1}/{repeat}: one message per FULL transaction x {sizes.messages}")
            _one_sqlite(target, sizes, prof, res, "one_full")
            _pages(target, sizes, res, 1)
        runs.append(res)
        print(render(append_lines(res, sizes), APPEND_COLUMNS, f"run {n + 1}"), flush=True)
    median = Results()
    for name in runs[0].figures["sqlite"]:
        median.put("sqlite", name, statistics.median(r.get("sqlite", name) or 0 for r in runs))
    title = (
        f"Append at the fsync limit, median of {repeat} runs, {os.cpu_count()} CPUs: raw = a"
        " bare sqlite3 table, raw + FTS5 = the same table carrying an external-content FTS5"
        " index (hermes' tokenizer), each row indexed in its own commit; WAL, FULL. Pages:"
        " -wal growth in frames per commit."
    )
    print()
    print(render(append_lines(median, sizes), APPEND_COLUMNS, title))
    ratios = [
        (r.get("sqlite", "one_full") or 0) / (r.get("sqlite", "one_full_fts_raw") or 1)
        for r in runs
    ]
    print(
        f"  hermes / (raw + FTS5) per run: {', '.join(f'{x:.2f}' for x in ratios)};"
        f" median {statistics.median(ratios):.2f}x (target >= 0.90x)"
    )


APPEND_COLUMNS = ["hermes SQLite", "raw sqlite3", "hermes/raw"]


def append_lines(res: Results, sizes: Sizes) -> list[Line]:
    lines = build_lines(res, sizes, ["sqlite"])[0]
    return [line for line in lines if line.measure.split(" (")[0] in _APPEND]


_APPEND = (
    "one message per transaction, FULL",  # the measures without their "(size)"
    "  vs a bare table + the same FTS5 index, FULL",
    "SQLite pages written per transaction of 1",
    "  vs a bare table + the same FTS5 index, of 1",
)


def run_postgres(
    base_url: str, sizes: Sizes, prof: Profiler, out: Results, log: Callable[[str], None]
) -> None:
    with postgres_target(base_url) as target:
        log(f"postgres: one message per transaction x {sizes.messages}")
        rates = one_per_transaction(target, sizes, prof)
        out.put("postgres", "one_full", rates["hermes"])
        out.put("postgres", "one_full_raw", rates["raw"])
        _digested(target, sizes, out, log)
        _common(target, sizes, prof, out, log)
        log(f"postgres: {sizes.pg_writers} processes appending together")
        together = writers_together(
            target, sizes.pg_writers, sizes.messages, processes=True, raw=False
        )
        out.put("postgres", "procs8", together.rate)
        out.put("postgres", "procs8_alone", together.alone)
        out.put("postgres", "procs8_lost", together.lost)
        out.put("postgres", "procs8_errors", together.errors)


def _digested(target: Target, sizes: Sizes, out: Results, log: Callable[[str], None]) -> None:
    log(f"{target.backend}: one message per transaction, HTTP API conversation x {sizes.messages}")
    digested, plain = digested_appends(target, sizes)
    out.put(target.backend, "one_api", digested)
    out.put(target.backend, "one_api_plain", plain)


def _common(
    target: Target, sizes: Sizes, prof: Profiler, out: Results, log: Callable[[str], None]
) -> None:
    b = target.backend
    log(f"{b}: batches of {sizes.batch} x {sizes.messages}")
    mine, raw, sid = batches(target, sizes, prof)
    out.put(b, "batch", mine)
    out.put(b, "batch_raw", raw)
    log(f"{b}: reading a {sizes.messages}-message segment")
    mine, raw = read_segment(target, sid, sizes, prof)
    out.put(b, "read", mine)
    out.put(b, "read_raw", raw)
    log(f"{b}: rotating a {sizes.messages}-message segment")
    out.put(b, "rotation", rotation(target, sid, sizes, prof))
    log(f"{b}: lease acquire+release x {sizes.lease_ops}")
    mine, raw = leases(target, sizes, prof)
    out.put(b, "lease", mine)
    out.put(b, "lease_raw", raw)
    log(f"{b}: filling and searching {sizes.corpus} messages")
    corpus = search_corpus(target, sizes, prof)
    for label, (mine, raw, hits) in corpus.searches.items():
        out.put(b, f"search_{label}", mine)
        out.put(b, f"search_{label}_raw", raw)
        out.put(b, f"search_{label}_hits", hits)
    out.put(b, "size", corpus.hermes_bytes / corpus.text_bytes)
    out.put(b, "size_raw", corpus.raw_bytes / corpus.text_bytes)
    for kind in ("threads", "processes"):
        log(f"{b}: {sizes.writers} {kind} appending together")
        for raw_side in (False, True):
            together = writers_together(
                target, sizes.writers, sizes.messages, processes=kind == "processes", raw=raw_side
            )
            suffix = "_raw" if raw_side else ""
            out.put(b, f"{kind}{suffix}", together.rate)
            out.put(b, f"{kind}_alone{suffix}", together.alone)
            out.put(b, f"{kind}_lost{suffix}", together.lost)
            out.put(b, f"{kind}_errors{suffix}", together.errors)


def build_lines(res: Results, sizes: Sizes, backends: list[str]) -> tuple[list[Line], list[str]]:
    cols = []
    if "sqlite" in backends:
        cols += ["hermes SQLite", "raw sqlite3", "hermes/raw"]
    if "postgres" in backends:
        cols += ["hermes PostgreSQL", "raw psycopg", "pg hermes/raw"]
    n, corpus = f"{sizes.messages // 1000}k", f"{sizes.corpus // 1000}k"
    lines: list[Line] = []

    def add(
        measure: str, unit: str, key: str, target: str = "", verdict=None, raw_key=None
    ) -> None:
        values: dict[str, float | None] = {}
        verdicts: dict[str, str] = {}
        raw_key = raw_key if raw_key is not None else f"{key}_raw"
        for backend, (c_mine, c_raw, c_ratio) in (
            ("sqlite", ("hermes SQLite", "raw sqlite3", "hermes/raw")),
            ("postgres", ("hermes PostgreSQL", "raw psycopg", "pg hermes/raw")),
        ):
            if backend not in backends:
                continue
            mine, raw = res.get(backend, key), res.get(backend, raw_key) if raw_key else None
            values[c_mine], values[c_raw] = mine, raw
            values[c_ratio] = (
                (mine / raw) if (mine is not None and raw) and unit != "count" else None
            )
            if verdict is not None and mine is not None:
                verdicts[backend] = verdict(backend, mine, raw)
        lines.append(Line(measure, unit, values, target, verdicts))

    add(
        f"one message per transaction, FULL ({n})",
        "msgs/s",
        "one_full",
        ">= 0.6x raw",
        lambda b, v, r: _vs_raw(v, r, 0.6) if b == "sqlite" and r else "",
    )
    if "sqlite" in backends:
        add(
            f"  vs a bare table + the same FTS5 index, FULL ({n})",
            "msgs/s",
            "one_full_fts",
            ">= 0.9x raw + FTS5",
            lambda b, v, r: _vs_raw(v, r, 0.9) if r else "",
        )
    add(
        f"  the same, HTTP API conversation (history digests) ({n})",
        "msgs/s",
        "one_api",
        "",
        lambda b, v, r: _vs_other(v, res.get(b, "one_api_plain")),
        raw_key="",
    )
    if "sqlite" in backends:
        add(f"one message per transaction, NORMAL ({n})", "msgs/s", "one_normal")
    add(
        f"a turn's batch ({sizes.batch} msgs) per transaction",
        "msgs/s",
        "batch",
        ">= 20,000",
        lambda b, v, r: at_least(v, 20_000),
    )
    add(f"read a {n}-message segment", "ms", "read", "< 40 ms", lambda b, v, r: at_most(v, 40))
    for label in ("rare word", "common word", "CJK word"):
        add(
            f"search {corpus} messages: {label}",
            "ms",
            f"search_{label}",
            "< 10 ms" if label == "rare word" else "",
            (lambda b, v, r: at_most(v, 10)) if label == "rare word" else None,
        )
    if "sqlite" in backends:
        for batch in (1, sizes.batch):
            add(f"SQLite pages written per transaction of {batch}", "pages", f"pages_{batch}")
            if batch == 1:
                add("  vs a bare table + the same FTS5 index, of 1", "pages", "pages_1_fts")
    add("lease acquire + release", "ops/s", "lease")
    add(f"rotation of a {n}-message segment", "ms", "rotation", raw_key="")
    for kind in ("threads", "processes"):
        one = kind[:-1] if kind == "threads" else "process"
        add(f"1 {one} appending alone (baseline)", "msgs/s", f"{kind}_alone")
        add(
            f"{sizes.writers} {kind} appending together",
            "msgs/s",
            kind,
            ">= one writer (-5%)",
            lambda b, v, r, k=kind: at_least(v, res.get(b, f"{k}_alone") or v, "one writer", NOISE),
        )
        add(f"  {kind}: messages lost, errors", "count", f"{kind}_lost", "0, 0",
            lambda b, v, r, k=kind: _clean(res, b, k), raw_key=f"{kind}_lost_raw")  # fmt: skip
    if "postgres" in backends:
        add("1 process appending alone (baseline)", "msgs/s", "procs8_alone", raw_key="")
        add(f"{sizes.pg_writers} processes appending together", "msgs/s", "procs8",
            ">= one writer (-5%)",
            lambda b, v, r: at_least(v, res.get(b, "procs8_alone") or v, "one writer", NOISE),
            raw_key="")  # fmt: skip
        add(f"  {sizes.pg_writers} processes: messages lost, errors", "count", "procs8_lost",
            "0, 0", lambda b, v, r: _clean(res, b, "procs8"), raw_key="")  # fmt: skip
    add(
        f"database size / text stored ({corpus} msgs)",
        "x text",
        "size",
        "<= 3x",
        lambda b, v, r: at_most(v, 3.0),
    )
    return lines, cols


def run(args: argparse.Namespace) -> None:
    sizes = QUICK if getattr(args, "quick", False) else Sizes()
    backend = getattr(args, "backend", "all") or "all"
    base_url = os.environ.get(PG_ENV)
    backends = ["sqlite"] if backend in ("sqlite", "all") else []
    if backend in ("postgres", "all"):
        if base_url:
            backends.append("postgres")
        elif backend == "postgres":
            raise SystemExit(
                f"--backend postgres needs {PG_ENV}; run it through `bash scripts/with-postgres"
                " .venv/bin/python -m benchmarks --only store`."
            )
    prof = Profiler(getattr(args, "profile", None) or [])
    res = Results()

    def log(text: str) -> None:
        print(f"  .. {text}", flush=True)

    if getattr(args, "append_only", False):
        run_append_only(sizes, prof, max(1, getattr(args, "repeat", 3) or 1), log)
        return

    print(f"Store benchmarks ({'quick' if sizes is QUICK else 'full'} sizes)", flush=True)
    started = time.perf_counter()
    failures = []
    for name in backends:
        try:
            if name == "sqlite":
                run_sqlite(sizes, prof, res, log)
            else:
                run_postgres(base_url or "", sizes, prof, res, log)
        except Exception as exc:  # print what was measured, and say what failed
            failures.append(f"{name}: stopped early by {type(exc).__name__}: {exc}")
            log(failures[-1])
    lines, cols = build_lines(res, sizes, backends)
    note = "" if base_url or backend == "sqlite" else f" (PostgreSQL skipped: {PG_ENV} unset)"
    title = (
        f"State store: ~500-char messages, {os.cpu_count()} CPUs, measured in"
        f" {time.perf_counter() - started:.0f} s{note}. raw = the driver on a plain table"
        " without index, same durability (SQLite: WAL + same synchronous)."
    )
    print()
    print(render(lines, cols, title))
    for backend_name in backends:
        hits = [
            f"{label}: {res.get(backend_name, f'search_{label}_hits'):.0f}"
            for label in ("rare word", "common word", "CJK word")
        ]
        print(f"  search hits returned ({backend_name}, limit 20): {', '.join(hits)}")
    for failure in failures:
        print(f"  INCOMPLETE - {failure}")
    for report in prof.reports():
        print()
        print(report)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--append-only",
        action="store_true",
        help="store: only one message per FULL commit next to the bare table with and without"
        " an FTS5 index, and its WAL pages (SQLite)",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="store --append-only: runs, medians printed"
    )
    parser.add_argument(
        "--profile",
        action="append",
        metavar="NAME",
        help="cProfile one measurement, e.g. insert_sqlite_full, batch_sqlite, read_sqlite,"
        " search_sqlite_rare, rotation_sqlite, lease_sqlite (repeatable)",
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_store", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "all"), default="all")
    add_arguments(parser)
    run(parser.parse_args())


if __name__ == "__main__":
    main()
