"""Property tests: search input, and the logical conversation under random histories.

Each example works in a conversation of its own on the test's store, so the store
fixture can be shared by the examples of one test.
"""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.state import SessionDB, make_holder

from .helpers import SUMMARY, assert_no_orphan_writes

SETTINGS = settings(
    deadline=None,
    database=None,  # no example database left behind in the working tree
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
WORD = st.text(
    alphabet=st.characters(categories=("Lu", "Ll", "Lt", "Lm", "Lo", "Nd")),
    min_size=1,
    max_size=12,
)


@settings(SETTINGS, max_examples=150)
@given(query=st.text())
def test_search_never_raises(db: SessionDB, query: str) -> None:
    if db.get_session("corpus") is None:
        db.create_session("corpus", source="cli")
        db.append_message("corpus", "user", 'alpha "beta" (gamma) NEAR delta: 北京 * ^ - AND OR')
    hits = db.search_messages(query)
    assert isinstance(hits, list)
    assert all(h["conversation_id"] == "corpus" for h in hits)


@settings(SETTINGS, max_examples=80)
@given(
    word=WORD,
    before=st.sampled_from(["", "the ", "我们 ", "今日は"]),
    after=st.sampled_from(["", " end", "。", "です"]),
)
def test_a_stored_word_is_found_by_that_word(
    db: SessionDB, word: str, before: str, after: str
) -> None:
    sid = db.create_session(uuid.uuid4().hex, source="cli")
    db.append_message(sid, "user", "an unrelated sentence")
    mid = db.append_message(sid, "user", f"{before}{word}{after}").message_id
    hits = db.search_messages(word, conversation_id=sid)
    assert mid in [h["message_id"] for h in hits], f"{word!r} not found in {before}{word}{after}"


# -- logical-conversation reconstruction ---------------------------------------------

APPEND = st.tuples(st.just("append"), st.integers(1, 3))
STALE = st.tuples(st.just("stale"), st.integers(0, 50), st.integers(1, 2))
REFLUSH = st.tuples(st.just("reflush"), st.integers(1, 4))
ROTATE = st.tuples(
    st.just("rotate"),
    st.sampled_from(["snapshot", "none", "zero", "random", "seen"]),  # the watermark
    st.lists(st.integers(0, 50), max_size=4),  # kept copies, as indices into the history
    st.booleans(),  # the summary carries a uid
    st.integers(0, 3),  # messages written while the summary is being made
)
OPS = st.lists(st.one_of(APPEND, STALE, REFLUSH, ROTATE), min_size=1, max_size=14)


class Model:
    """Drives one conversation and remembers every original in append order."""

    def __init__(self, db: SessionDB) -> None:
        self.db = db
        self.root = db.create_session(uuid.uuid4().hex, source="cli", title="P")
        self.segments = [self.root]
        self.originals: list[dict] = []

    def new(self, n: int) -> list[dict]:
        made = [
            {
                "role": "user",
                "content": f"c{len(self.originals) + k}",
                "message_uid": uuid.uuid4().hex,
            }
            for k in range(n)
        ]
        self.originals += made
        return made

    def write(self, target: str, n: int) -> None:
        result = self.db.append_messages(target, self.new(n))
        assert result.session_id == self.segments[-1]
        assert result.stored == n

    def run(self, op: tuple) -> None:
        kind = op[0]
        if kind == "append":
            self.write(self.segments[-1], op[1])
        elif kind == "stale":
            self.write(self.segments[op[1] % len(self.segments)], op[2])
        elif kind == "reflush":
            again = self.originals[-op[1] :]
            result = self.db.append_messages(self.segments[0], again)
            assert (result.stored, result.session_id) == (0, self.segments[-1])
        else:
            self.rotate(*op[1:])

    def rotate(self, mark: str, kept: list[int], summary_uid: bool, late: int) -> None:
        tip = self.segments[-1]
        holder = make_holder()
        assert self.db.try_acquire_compression_lock(tip, holder)
        snapshot = self.db.last_message_id(tip)
        rows = self.db.get_messages(tip, include_undone=True)
        ids = [m["id"] for m in rows]
        seen = {m["message_uid"] for m in rows}  # what the compressor was given
        if late:
            self.write(tip, late)
        watermark = {
            "snapshot": snapshot,
            "none": None,
            "zero": 0,
            "random": ids[len(ids) // 2] if ids else 0,
            "seen": None,
        }[mark]
        # Duplicates allowed: a message may be listed twice (the newest user message).
        copies = [dict(self.originals[i % len(self.originals)]) for i in kept if self.originals]
        summary = {**SUMMARY, **({"message_uid": uuid.uuid4().hex} if summary_uid else {})}
        child = self.db.publish_compression_child(
            tip,
            holder=holder,
            messages=[summary, *copies],
            watermark=watermark,
            seen_uids=seen if mark == "seen" else None,
        )
        assert self.db.release_compression_lock(tip, holder)
        self.segments.append(child)


@settings(SETTINGS, max_examples=40)
@given(ops=OPS)
def test_the_logical_conversation_is_every_original_once_in_order(
    db: SessionDB, ops: list[tuple]
) -> None:
    model = Model(db)
    for op in ops:
        model.run(op)
    expected = [m["message_uid"] for m in model.originals]
    for sid in (model.root, model.segments[-1]):
        logical = db.get_conversation_messages(sid)
        assert [m["message_uid"] for m in logical] == expected
        assert [m["content"] for m in logical] == [m["content"] for m in model.originals]
    assert db.get_lineage(model.root) == model.segments
    assert db.resolve_tip(model.segments[0]) == model.segments[-1]
    assert_no_orphan_writes(db, model.root)
