"""copy_store: a whole store copied SQLite -> PostgreSQL -> SQLite, losslessly, verified.

The PostgreSQL tests take a fresh schema from the suite's ``store`` fixture (pinned to
its PostgreSQL parameter); without ``HERMES_TEST_PG_URL`` they skip (fail under CI).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hermes.state import SessionDB, StateError, make_holder
from hermes.state.copy import (
    CopyMismatchError,
    TargetNotEmptyError,
    copy_store,
    message_checksum,
    table_counts,
)

from .helpers import StoreSpec, raw_all

on_postgres = pytest.mark.parametrize("store", ["postgres"], indirect=True)

TOOL_CALLS = [
    {
        "id": "call_1",
        "type": "function",
        "function": {"name": "web_search", "arguments": '{"query": "zebra stripes"}'},
    }
]


@dataclass(frozen=True)
class Built:
    """Ids of the conversations ``build`` wrote."""

    safari: str  # compressed once: root, then its child
    child: str
    tokyo: str  # another source, routed, with an undone message and a held lease
    branch: str  # branched from the safari conversation; its id sorts before it
    conversations: tuple[str, ...]


def build(path: Path) -> Built:
    """A store with every kind of row: compressed, branched, routed, undone, leased."""
    with SessionDB(db_path=path) as db:
        safari = db.create_session("safari-root", source="cli", title="Safari", model="m-1")
        db.set_system_prompt(safari, "You are a guide.")
        db.append_messages(
            safari,
            [
                {"role": "user", "content": "Why do zebras have stripes?"},
                {"role": "assistant", "content": None, "tool_calls": TOOL_CALLS},
                {
                    "role": "tool",
                    "tool_call_id": "call_1",
                    "tool_name": "web_search",
                    "content": "Stripes deter biting flies.",
                },  # fmt: skip
                {
                    "role": "assistant",
                    "content": "Mostly to keep flies away.",
                    "reasoning": "cite the fly study",
                },  # fmt: skip
            ],
            token_usage=(120, 40),
        )
        holder = make_holder()
        assert db.try_acquire_compression_lock(safari, holder)
        watermark = db.last_message_id(safari)
        db.append_message(safari, "user", "And giraffes, while you summarise?")  # late
        child = db.publish_compression_child(
            safari,
            holder=holder,
            messages=[
                {"role": "user", "content": "[CONTEXT COMPACTION] zebras and flies"},
                {"role": "assistant", "content": "Mostly to keep flies away."},
            ],
            watermark=watermark,
        )
        db.release_compression_lock(safari, holder)
        db.append_message(child, "assistant", "Giraffes sleep standing up.")

        tokyo = db.create_session("tokyo-root", source="telegram", session_key="tg:42")
        db.append_message(tokyo, "user", "今日は東京で会議があります")
        wrong = db.append_message(tokyo, "assistant", "会議 is at noon, zebras permitting.")
        db.append_message(tokyo, "assistant", "Sorry: the meeting is at three.")
        db.mark_undone(tokyo, [wrong.message_id])
        db.gateway.set_route("tg:42", tokyo, platform="telegram")
        assert db.try_acquire_compression_lock(tokyo, "elsewhere:pid=1:agent=x", 3600)

        branch = db.branch_session(child, source="api")
        db.append_message(branch, "user", "Branch: what about zebras in zoos?")
    assert branch < safari  # its parent link has to wait for a later conversation
    return Built(safari, child, tokyo, branch, (safari, tokyo, branch))


def observe(db: SessionDB, built: Built) -> dict[str, Any]:
    """Everything the public API shows of the store, for equality across copies."""
    seen: dict[str, Any] = {
        "counts": table_counts(db),
        "checksum": message_checksum(db),
        "list": db.list_conversations(limit=100),
        "locks": raw_all(db, "SELECT * FROM compression_locks ORDER BY session_id"),
        "routes": raw_all(db, "SELECT * FROM gateway_routes ORDER BY session_key"),
    }
    for word in ("zebras", "giraffes", "東京", "会議"):
        seen[f"search {word}"] = db.search_messages(word, limit=50)
    for root in built.conversations:
        seen[root] = {
            "messages": db.get_conversation_messages(root),
            "with summaries": list(db.iter_conversation_messages(root, include_summaries=True)),
            "lineage": db.get_lineage(root),
            "segments": db.get_segments(root),
            "tips": [db.resolve_tip(s) for s in db.get_lineage(root)],
            "rows": [db.get_messages(s, include_undone=True) for s in db.get_lineage(root)],
            "export": "".join(db.export_conversation(root, "jsonl")),
        }
    return seen


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Built]:
    path = tmp_path / "source.db"
    return path, build(path)


@on_postgres
def test_sqlite_to_postgres_to_sqlite_keeps_everything(
    built: tuple[Path, Built], store: StoreSpec, tmp_path: Path
) -> None:
    path, ids = built
    before = file_digest(path)
    events: list[tuple[str, int, int]] = []
    with SessionDB(db_path=path, read_only=True) as source, store.open() as middle:
        expected = observe(source, ids)
        report = copy_store(source, middle, batch=2, progress=lambda *e: events.append(e))
        assert observe(middle, ids) == expected
    with store.open(read_only=True) as middle, SessionDB(db_path=tmp_path / "back.db") as back:
        again = copy_store(middle, back, batch=3)
        assert observe(back, ids) == expected

    assert file_digest(path) == before  # the source was only read
    assert report.counts == again.counts == expected["counts"]
    assert report.counts["messages"] == 19 and report.counts["sessions"] == 4
    assert report.counts["compression_locks"] == report.counts["gateway_routes"] == 1
    assert report.checksum == again.checksum == expected["checksum"]
    assert expected["search 東京"] and expected["search zebras"]  # the index was built
    copied = [e for e in events if e[0] == "messages"]
    assert copied[0] == ("messages", 0, 19) and copied[-1] == ("messages", 19, 19)
    assert events[-1] == ("verify", 1, 1)


@on_postgres
def test_appending_after_a_copy_to_postgres_gets_a_fresh_id(
    built: tuple[Path, Built], store: StoreSpec
) -> None:
    path, ids = built
    with SessionDB(db_path=path, read_only=True) as source, store.open() as target:
        copy_store(source, target)
        top = raw_all(target, "SELECT MAX(id) AS top FROM messages")[0]["top"]
        assert top == table_counts(source)["messages"] == 19  # ids kept as they were
        landed = target.append_message(ids.safari, "user", "after the move")  # forwards
        branch = target.append_message(ids.branch, "user", "and here")
    assert landed.session_id == ids.child
    assert landed.message_id == top + 1 and branch.message_id == top + 2


@on_postgres
def test_a_non_empty_target_is_refused_and_left_unchanged(
    built: tuple[Path, Built], store: StoreSpec, tmp_path: Path
) -> None:
    path, ids = built
    with SessionDB(db_path=path, read_only=True) as source, store.open() as target:
        copy_store(source, target)
        before = observe(target, ids)
        with pytest.raises(
            TargetNotEmptyError, match=r"is not empty \(it holds 4 rows in sessions"
        ):
            copy_store(source, target)
        assert observe(target, ids) == before
    other = tmp_path / "other.db"
    with SessionDB(db_path=other) as db:
        db.gateway.set_route("only:a-route", "nowhere")
    with (
        SessionDB(db_path=path, read_only=True) as source,
        SessionDB(db_path=other) as target,
        pytest.raises(TargetNotEmptyError, match="1 rows in gateway_routes"),
    ):
        copy_store(source, target)


@on_postgres
def test_queued_gateway_input_survives_the_round_trip(tmp_path: Path, store: StoreSpec) -> None:
    path = tmp_path / "queue.db"
    with SessionDB(db_path=path) as db:
        sid = db.create_session(source="telegram", session_key="tg:7")
        db.gateway.set_route("tg:7", sid, platform="telegram")
        db.gateway.enqueue_gateway_input("tg:7", {"text": "arrived while busy — 忙しい"})
        db.gateway.enqueue_gateway_input("tg:7", {"text": "and a second one"})
        queued = db.gateway.pending_gateway_inputs()
    with SessionDB(db_path=path, read_only=True) as source, store.open() as target:
        copy_store(source, target)
        assert target.gateway.pending_gateway_inputs() == queued
        newer = target.gateway.enqueue_gateway_input("tg:7", {"text": "after the move"})
    with store.open(read_only=True) as source, SessionDB(db_path=tmp_path / "b.db") as back:
        copy_store(source, back)
        assert back.gateway.pending_gateway_inputs()[:2] == queued
    assert newer > max(q["id"] for q in queued)


def test_an_empty_store_copies_to_an_empty_store(tmp_path: Path) -> None:
    SessionDB(db_path=tmp_path / "a.db").close()
    with (
        SessionDB(db_path=tmp_path / "a.db", read_only=True) as a,
        SessionDB(db_path=tmp_path / "b.db") as b,
    ):
        report = copy_store(a, b)
    assert set(report.counts.values()) == {0}
    assert report.checksum == hashlib.sha256().hexdigest()


def test_a_write_to_the_source_during_the_copy_fails_the_verification(
    built: tuple[Path, Built], tmp_path: Path
) -> None:
    path, ids = built

    def meddle(step: str, done: int, total: int) -> None:
        if step == "gateway_routes" and done:
            with SessionDB(db_path=path) as writer:
                writer.append_message(ids.tokyo, "user", "sneaked in")

    with (
        SessionDB(db_path=path, read_only=True) as source,
        SessionDB(db_path=tmp_path / "b.db") as target,
        pytest.raises(CopyMismatchError, match="The copy of messages does not match"),
    ):
        copy_store(source, target, progress=meddle)


def test_a_changed_message_fails_the_checksum(built: tuple[Path, Built], tmp_path: Path) -> None:
    path, ids = built

    def meddle(step: str, done: int, total: int) -> None:
        if step == "verify" and not done:
            with SessionDB(db_path=path) as writer:
                first = writer.get_messages(ids.tokyo)[0]["id"]
                writer.mark_undone(ids.tokyo, [first])

    with (
        SessionDB(db_path=path, read_only=True) as source,
        SessionDB(db_path=tmp_path / "b.db") as target,
        pytest.raises(CopyMismatchError, match=r"messages .*checksum") as caught,
    ):
        copy_store(source, target, progress=meddle)
    assert caught.value.table == "messages"
    assert isinstance(caught.value, StateError)


def test_a_read_only_target_is_refused(built: tuple[Path, Built], tmp_path: Path) -> None:
    path, _ = built
    SessionDB(db_path=tmp_path / "b.db").close()
    with (
        SessionDB(db_path=path, read_only=True) as source,
        SessionDB(db_path=tmp_path / "b.db", read_only=True) as target,
        pytest.raises(StateError, match="read-only"),
    ):
        copy_store(source, target)
