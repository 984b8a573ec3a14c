"""Coverage and well-formed children (invariants 14 and 15) at the store's level.

A rotation given ``covered_uids`` (what the summary model read) carries over every row
of the parent as stored at publish time that is neither copied nor covered, records
what the summary covered, keeps tool call groups whole and refuses a child a provider
would refuse.
"""

from __future__ import annotations

import pytest

from hermes.state import InvalidContextError, SessionDB, make_holder

from .helpers import SUMMARY, contents, raw_all
from .helpers import tool_call as _call
from .helpers import tool_result as _result


def _publish(
    db: SessionDB,
    parent: str,
    messages: list[dict],
    covered: list[str],
    by_stub: tuple[str, ...] = (),
) -> str:
    holder = make_holder()
    assert db.try_acquire_compression_lock(parent, holder)
    try:
        return db.publish_compression_child(
            parent,
            holder=holder,
            messages=messages,
            covered_uids=covered,
            stub_covered_uids=by_stub,
        )
    finally:
        db.release_compression_lock(parent, holder)


def _uids(db: SessionDB, session_id: str) -> list[str]:
    return [r["message_uid"] for r in db.get_messages(session_id)]


def test_a_row_the_summary_did_not_read_is_carried_over(db: SessionDB) -> None:
    db.create_session("p", source="cli")
    db.append_messages("p", [{"role": "user", "content": f"m{n}"} for n in range(4)])
    read = _uids(db, "p")[:2]  # the summary read m0 and m1 only
    child = _publish(db, "p", [SUMMARY], read)
    assert contents(db.get_messages(child)) == [SUMMARY["content"], "m2", "m3"]
    assert db.coverage_violations() == []


def test_a_stale_view_never_drops_a_compacted_copy_it_never_saw(db: SessionDB) -> None:
    """Issue 11, failure 2 at the store: M reached S2 only as a compacted copy, and a
    publisher whose summary read S1's view (without M) rotates S2."""
    db.create_session("s1", source="cli")
    db.append_messages("s1", [{"role": "user", "content": f"m{n}"} for n in range(3)])
    stale_view = _uids(db, "s1")  # agent X's view of S1
    db.append_message("s1", role="user", content="M")  # written after X loaded S1
    s2 = _publish(db, "s1", [SUMMARY], stale_view)  # another process rotates: M carried
    assert "M" in contents(db.get_messages(s2))
    db.append_message(s2, role="user", content="x-new")
    # X adopted S2 and now compresses its stale view of S1 plus its new message.
    s3 = _publish(db, s2, [{"role": "user", "content": "[CONTEXT COMPACTION] X"}], stale_view)
    assert "M" in contents(db.get_messages(s3))
    assert db.coverage_violations() == []


def test_coverage_is_recorded_and_an_uncovered_legacy_rotation_is_reported(
    db: SessionDB,
) -> None:
    db.create_session("p", source="cli")
    db.append_messages("p", [{"role": "user", "content": f"m{n}"} for n in range(3)])
    holder = make_holder()
    assert db.try_acquire_compression_lock("p", holder)
    # An older caller: the watermark claims the summary read everything up to it.
    child = db.publish_compression_child(
        "p", holder=holder, messages=[SUMMARY], watermark=db.last_message_id("p")
    )
    found = db.coverage_violations()
    assert len(found) == 3 and all(child in line for line in found)


def test_tool_results_go_back_after_their_call_in_the_child(db: SessionDB) -> None:
    db.create_session("p", source="cli")
    db.append_messages(
        "p",
        [
            {"role": "user", "content": "run it"},
            _call("c1"),
            {"role": "user", "content": "event: process finished"},  # another writer
            _result("c1", "done"),
        ],
    )
    child = _publish(db, "p", [SUMMARY], [])
    rows = db.get_messages(child)
    assert [r["role"] for r in rows] == ["user", "user", "assistant", "tool", "user"]
    assert contents(rows)[-2:] == ["done", "event: process finished"]


def test_a_carried_result_brings_its_summarised_call(db: SessionDB) -> None:
    db.create_session("p", source="cli")
    db.append_messages("p", [{"role": "user", "content": "go"}, _call("c1")])
    call_uid = _uids(db, "p")[1]
    db.append_message("p", **_result("c1", "late result"))
    child = _publish(db, "p", [SUMMARY], [_uids(db, "p")[0], call_uid])
    rows = db.get_messages(child)
    assert [r["role"] for r in rows] == ["user", "assistant", "tool"]
    assert db.coverage_violations() == []


@pytest.mark.parametrize(
    "compacted",
    [
        [SUMMARY, _result("gone", "an orphan result")],
        [SUMMARY, _call("open")],
        [SUMMARY, {"role": "assistant", "content": ""}],
    ],
    ids=["orphan-result", "unanswered-call", "empty-assistant"],
)
def test_a_child_a_provider_would_refuse_is_not_published(
    db: SessionDB, compacted: list[dict]
) -> None:
    db.create_session("p", source="cli")
    db.append_message("p", role="user", content="hello")
    with pytest.raises(InvalidContextError):
        _publish(db, "p", compacted, _uids(db, "p"))
    assert db.find_tip("p")["id"] == "p"
    assert db.get_lineage("p") == ["p"]
    assert db.get_compression_lock_holder("p") is None


# --------------------------------------------------------------------------- by stub


def _ran_a_tool(db: SessionDB) -> list[str]:
    db.create_session("p", source="cli")
    db.append_messages(
        "p",
        [
            {"role": "user", "content": "cat the log"},
            _call("c1"),
            _result("c1", "a long log, read by the summary as its stub"),
            {"role": "assistant", "content": "done"},
        ],
    )
    return _uids(db, "p")


def test_a_tool_output_covered_by_its_stub_is_recorded_so_and_stays_recallable(
    db: SessionDB,
) -> None:
    uids = _ran_a_tool(db)
    child = _publish(db, "p", [SUMMARY], uids, by_stub=(uids[2],))

    assert contents(db.get_messages(child)) == [SUMMARY["content"]]
    output = db.get_messages("p")[2]
    recorded = raw_all(
        db, "SELECT origin_id, by_stub FROM segment_coverage WHERE session_id = ?", (child,)
    )
    assert {r["origin_id"]: r["by_stub"] for r in recorded}[output["id"]] == 1
    assert sum(r["by_stub"] for r in recorded) == 1
    recalled = db.recall_message(child, output["id"])
    assert recalled is not None and recalled["content"] == output["content"]
    assert db.coverage_violations() == []


def test_a_stub_claim_on_a_row_recall_cannot_return_is_not_coverage(db: SessionDB) -> None:
    uids = _ran_a_tool(db)
    # The summary "read" the user's message as a stub: only a tool output has one.
    child = _publish(db, "p", [SUMMARY], uids, by_stub=(uids[0],))

    assert contents(db.get_messages(child)) == [SUMMARY["content"], "cat the log"]
    assert db.coverage_violations() == []


def test_the_coverage_check_reports_a_stub_that_recall_cannot_return(db: SessionDB) -> None:
    uids = _ran_a_tool(db)
    child = _publish(db, "p", [SUMMARY], uids, by_stub=(uids[2],))
    output = db.get_messages("p")[2]
    # The row changes under the record (as a broken tool or a hand edit would): a stub
    # coverage of a row that is no longer a stored tool output.
    db._write(lambda tx: tx.run("UPDATE messages SET role = 'user' WHERE id = ?", (output["id"],)))

    assert db.coverage_violations() == [
        f"message {output['id']} is covered by its stub in the summary of session {child},"
        " but recall cannot return it verbatim"
    ]


def _summary_showing(*anchors: str) -> dict:
    index = "\n".join(["[ANCHORS] Exact strings.", f"commits and ids: {' · '.join(anchors)}"])
    return {"role": "user", "content": f"[CONTEXT COMPACTION] frame\n\nwords\n\n{index}"}


def test_an_anchor_a_summary_showed_stays_shown_or_its_row_verbatim(db: SessionDB) -> None:
    """Issue 55: what one summary kept the way back to, every later one keeps too."""
    db.create_session("p", source="cli")
    db.append_messages(
        "p", [{"role": "user", "content": f"ship {h}"} for h in ("a1b2c3d", "e4f5a6b")]
    )
    first = _publish(db, "p", [_summary_showing("a1b2c3d", "e4f5a6b")], _uids(db, "p"))
    db.append_message(first, role="user", content="more work")
    # The next summary shows one anchor again; the other's row is back verbatim.
    kept = [_summary_showing("a1b2c3d"), {"role": "user", "content": "ship e4f5a6b"}]
    second = _publish(db, first, kept, _uids(db, first))
    assert db.coverage_violations() == []

    db.append_message(second, role="user", content="and more")
    third = _publish(db, second, [_summary_showing("e4f5a6b")], _uids(db, second))

    assert db.coverage_violations() == [
        f"the anchor 'a1b2c3d' shown in the summary of session {second} is shown nowhere"
        f" in its compression child {third}"
    ]
