"""External full-text readers MATCH ``messages_fts`` themselves, so the index is current
at every commit, as Hermes Agent 0.19's (kept by triggers) is: the newest message is
found by another connection as soon as its append returns."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hermes.state import SessionDB

# converseek (lululau/converseek, src/converseek/adapters/hermes.py), search_sessions.
CONVERSEEK_SEARCH = """
    SELECT s.*, GROUP_CONCAT(substr(m.content, 1, 200), ' ... ') as snippet
    FROM messages_fts fts
    JOIN messages m ON m.id = fts.rowid
    JOIN sessions s ON s.id = m.session_id
    WHERE messages_fts MATCH ?
    GROUP BY s.id
    ORDER BY s.started_at DESC
    LIMIT ?
"""
# hermesd (mudrii/hermesd, hermesd/db.py), _search_session_ids_by_fts without session_id.
HERMESD_SEARCH = (
    "SELECT DISTINCT messages.session_id FROM messages_fts"
    " JOIN messages ON messages.id = messages_fts.rowid WHERE messages_fts MATCH ?"
)


def read_only(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


@pytest.mark.parametrize("appends", [1, 5, 31])
def test_a_reader_finds_each_message_as_soon_as_it_is_stored(tmp_path: Path, appends: int) -> None:
    path = tmp_path / "state.db"
    with SessionDB(db_path=path) as db:
        older = db.create_session(source="cli")
        db.append_message(older, "user", "an older kiwi")
        sid = db.create_session(source="cli")
        reader = read_only(path)
        try:
            for n in range(appends):
                db.append_message(sid, "user", f"note{n} about a walrus")
                [row] = reader.execute(CONVERSEEK_SEARCH, (f"note{n}", 20)).fetchall()
                assert (row["id"], row["snippet"]) == (sid, f"note{n} about a walrus")
            hits = reader.execute(CONVERSEEK_SEARCH, ("walrus OR kiwi", 20)).fetchall()
            assert {row["id"] for row in hits} == {sid, older}
            assert [tuple(r) for r in reader.execute(HERMESD_SEARCH, ("walrus",))] == [(sid,)]
        finally:
            reader.close()


def matched(path: Path, word: str) -> list[str]:
    reader = read_only(path)
    try:
        return [
            row["content"]
            for row in reader.execute(
                "SELECT m.content FROM messages_fts f JOIN messages m ON m.id = f.rowid"
                " WHERE messages_fts MATCH ? ORDER BY m.id",
                (word,),
            )
        ]
    finally:
        reader.close()


def test_a_batch_is_indexed_at_its_commit(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(db_path=path) as db:
        sid = db.create_session(source="cli")
        db.append_messages(sid, [{"role": "user", "content": f"batch{n} otter"} for n in range(3)])
        assert matched(path, "otter") == [f"batch{n} otter" for n in range(3)]


def test_writes_that_share_a_commit_are_all_indexed(tmp_path: Path) -> None:
    """Threads appending at once share COMMITs (group commit, a SAVEPOINT each): every
    row of every job is in the index when its writer returns."""
    path = tmp_path / "state.db"
    writers, each = 4, 25
    with SessionDB(db_path=path) as db:
        sids = [db.create_session(source="cli") for _ in range(writers)]

        def append(n: int) -> None:
            for k in range(each):
                db.append_message(sids[n], "user", f"w{n} k{k} heron")
                assert matched(path, f"w{n} AND k{k}") == [f"w{n} k{k} heron"]

        with ThreadPoolExecutor(writers) as pool:
            list(pool.map(append, range(writers)))
    assert len(matched(path, "heron")) == writers * each
