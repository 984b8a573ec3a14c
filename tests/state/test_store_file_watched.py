"""A state.db deleted or replaced under an open store takes no more writes.

SQLite keeps writing into an unlinked file as if nothing happened: a gateway answered 200
and cron ran on, all into a file that vanished when the process stopped. The store now
checks, at each write, that the file at its path is the one it writes, and says so in
one sentence when not; a store opened afterwards writes the file that is there.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from hermes.state import SessionDB
from hermes.state.errors import StoreReplacedError, StoreUnavailableError


def _one_session(db: SessionDB, text: str = "hello") -> str:
    sid = db.create_session(source="cli")
    db.append_message(sid, "user", text)
    return sid


def test_a_deleted_store_takes_no_more_writes(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(db_path=path) as db:
        sid = _one_session(db)
        path.unlink()
        with pytest.raises(StoreReplacedError) as caught:
            db.append_message(sid, "assistant", "lost?")
        assert isinstance(caught.value, StoreUnavailableError)
        assert "deleted or replaced" in str(caught.value) and str(path) in str(caught.value)
        with pytest.raises(StoreReplacedError):  # and stays refused
            db.create_session(source="cli")


def test_a_replaced_store_is_not_written_and_a_new_one_opens_the_new_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    backup = tmp_path / "backup.db"
    with SessionDB(db_path=path) as old:
        sid = _one_session(old, "before the swap")
        shutil.copy(path, backup)
        backup.replace(path)  # a restore, or a sync tool, puts another file there
        with pytest.raises(StoreReplacedError):
            old.append_message(sid, "assistant", "into the old inode")
        with SessionDB(db_path=path) as new:  # same process, same path: the new file
            new.append_message(sid, "assistant", "into the new file")
            texts = [m["content"] for m in new.get_messages(sid)]
    assert texts == ["before the swap", "into the new file"]
    rows = sqlite3.connect(path).execute("SELECT content FROM messages").fetchall()
    assert [r[0] for r in rows] == ["before the swap", "into the new file"]


def test_writes_from_many_threads_all_fail_once_the_file_is_gone(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(db_path=path) as db:
        sid = _one_session(db)
        path.unlink()
        errors: list[BaseException] = []

        def write(i: int) -> None:
            try:
                db.append_message(sid, "user", f"m{i}")
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(errors) == 16 and all(isinstance(e, StoreReplacedError) for e in errors)
