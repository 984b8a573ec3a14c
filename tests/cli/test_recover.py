"""`hermes recover`: a damaged store is salvaged into a new one that passes SQLite's
check, and the damaged file is kept as it was; a healthy or unreadable store is left
alone. The damage is made on a closed store, by writing over pages of the file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes.state import SessionDB

PAGE = 4096
CONVERSATIONS, MESSAGES = 6, 60


def fill(path: Path) -> None:
    with SessionDB(db_path=path) as db:
        for c in range(CONVERSATIONS):
            session = db.create_session(f"chat-{c}", source="cli")
            for m in range(MESSAGES):
                db.append_message(session, role="user", content=f"c{c} m{m} " + "x" * 300)


def leaves_of(path: Path, table: str) -> list[int]:
    """The page numbers of ``table``'s leaves, as SQLite's dbstat table tells them."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        rows = conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno",
            (table,),
        ).fetchall()
    finally:
        conn.close()
    return [pageno for (pageno,) in rows]


def damage(path: Path, pages: list[int]) -> None:
    """Write garbage over whole pages (numbered from 1) of a closed store, which no
    connection holds (the way a failing disk would)."""
    with path.open("r+b") as raw:
        for page in pages:
            raw.seek((page - 1) * PAGE)
            raw.write(b"\xde\xad\xbe\xef" * (PAGE // 4))


def counted(path: Path) -> int:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


def test_a_damaged_store_is_salvaged_and_the_damaged_file_kept(hermes, cli_env) -> None:
    store = cli_env.home / "state.db"
    fill(store)
    leaves = leaves_of(store, "messages")
    damage(store, leaves[len(leaves) // 3 : len(leaves) // 3 + 2])  # two pages of messages
    broken = store.read_bytes()

    done = hermes("recover")

    assert done.returncode == 0, done.stderr
    assert "Recovered" in done.stdout and "Traceback" not in done.stderr
    kept = [p for p in cli_env.home.iterdir() if p.name.startswith("state.db.damaged-")]
    assert len(kept) == 1 and kept[0].read_bytes() == broken  # kept, byte for byte
    salvaged = counted(store)
    assert 0 < salvaged < CONVERSATIONS * MESSAGES  # the readable rows, not the damaged
    assert "Could not read" in done.stdout
    listed = hermes("sessions", "list")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert not [p for p in cli_env.home.iterdir() if ".recovering-" in p.name]


def test_a_healthy_store_is_left_alone(hermes, cli_env) -> None:
    store = cli_env.home / "state.db"
    fill(store)
    before = store.read_bytes()
    done = hermes("recover")
    assert done.returncode == 0 and "nothing to recover" in done.stdout
    assert store.read_bytes() == before
    assert not [p for p in cli_env.home.iterdir() if ".damaged-" in p.name]


def test_a_file_sqlite_cannot_read_at_all_is_left_alone(hermes, cli_env) -> None:
    store = cli_env.home / "state.db"
    store.write_bytes(b"garbage" * 1000)
    done = hermes("recover")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "nothing was changed" in done.stderr and "backup" in done.stderr
    assert store.read_bytes() == b"garbage" * 1000
    assert sorted(p.name for p in cli_env.home.iterdir() if p.name.startswith("state.db")) == [
        "state.db"
    ]


def test_doctor_points_a_damaged_store_at_recover(hermes, cli_env) -> None:
    store = cli_env.home / "state.db"
    fill(store)
    leaves = leaves_of(store, "messages")
    damage(store, leaves[len(leaves) // 2 : len(leaves) // 2 + 1])
    said = hermes("doctor", "--offline").stdout
    assert "hermes recover" in said, said
