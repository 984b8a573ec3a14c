"""Large inline data of content parts (hermes/state/blobs.py): stored once by sha256,
read back whole, shared between conversations, gone with the last one holding it, and
copied with the store; on both backends."""

from __future__ import annotations

import base64
from pathlib import Path

from hermes.state import SessionDB
from hermes.state.copy import copy_store

from .helpers import raw_all

API = "api_server"
BIG = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 24).decode()
SMALL = "data:image/png;base64," + base64.b64encode(bytes(range(256))).decode()


def picture(url: str, words: str = "look") -> list[dict]:
    return [{"type": "text", "text": words}, {"type": "image_url", "image_url": {"url": url}}]


def stored_contents(db: SessionDB) -> list[str]:
    return [r["content"] for r in raw_all(db, "SELECT content FROM messages ORDER BY id")]


def test_large_inline_data_is_stored_once_and_read_back_whole(db: SessionDB) -> None:
    for sid in ("a", "b"):
        db.create_session(sid, source=API)
        db.append_message(sid, "user", picture(BIG))
    assert all(BIG not in content for content in stored_contents(db))
    [blob] = raw_all(db, "SELECT media_type, size, data FROM blobs")
    assert (blob["media_type"], blob["size"], blob["data"]) == ("image/png", len(BIG), BIG)
    assert db.get_messages("a")[0]["content"] == picture(BIG)
    assert db.get_conversation_messages("b")[0]["content"] == picture(BIG)


def test_small_images_and_text_parts_stay_in_their_message(db: SessionDB) -> None:
    db.create_session("s", source=API)
    db.append_message("s", "user", picture(SMALL, words=BIG))
    assert stored_contents(db)[0].count(SMALL) == 1 and BIG in stored_contents(db)[0]
    assert raw_all(db, "SELECT sha256 FROM blobs") == []
    assert db.get_messages("s")[0]["content"] == picture(SMALL, words=BIG)


def test_a_blob_goes_with_the_last_conversation_that_holds_it(db: SessionDB) -> None:
    for sid in ("a", "b"):
        db.create_session(sid, source=API)
        db.append_message(sid, "user", picture(BIG))
    db.delete_conversation("a")
    assert len(raw_all(db, "SELECT sha256 FROM blobs")) == 1
    assert db.get_messages("b")[0]["content"] == picture(BIG)
    db.delete_conversation("b")
    assert raw_all(db, "SELECT sha256 FROM blobs") == []


def test_a_copied_store_keeps_its_blobs(db: SessionDB, tmp_path: Path) -> None:
    db.create_session("s", source=API)
    db.append_message("s", "user", picture(BIG))
    with SessionDB(db_path=tmp_path / "copy.db") as target:
        report = copy_store(db, target)
        assert report.counts["blobs"] == 1
        assert target.get_messages("s")[0]["content"] == picture(BIG)
