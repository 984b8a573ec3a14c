"""Full-text search over every message of every segment (invariant 9)."""

from __future__ import annotations

import pytest

from hermes.state import SessionDB

from .helpers import SUMMARY, rotate

HIT_KEYS = {"message_id", "session_id", "conversation_id", "role", "snippet", "created_at"}


def test_search_finds_english_words_case_insensitively(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "Please water the Orchids on Tuesday")
    db.append_message("s", "assistant", "Noted: orchids, Tuesday.")
    db.append_message("s", "user", "unrelated")
    hits = db.search_messages("orchids")
    assert len(hits) == 2
    assert set(hits[0]) >= HIT_KEYS
    # Newest first.
    assert [h["role"] for h in hits] == ["assistant", "user"]
    assert hits[0]["message_id"] > hits[1]["message_id"]
    assert all(h["session_id"] == "s" and h["conversation_id"] == "s" for h in hits)
    assert "orchids" in hits[0]["snippet"].lower()
    assert db.search_messages("ORCHIDS") == hits


def test_every_term_must_match(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "red apples and green pears")
    db.append_message("s", "user", "red cars")
    assert len(db.search_messages("red")) == 2
    assert len(db.search_messages("red pears")) == 1
    assert db.search_messages("red bananas") == []


def test_search_respects_limit_source_and_conversation(db: SessionDB) -> None:
    db.create_session("a", source="cli")
    db.create_session("b", source="telegram")
    for n in range(5):
        db.append_message("a", "user", f"kiwi number {n}")
        db.append_message("b", "user", f"kiwi number {n}")
    assert len(db.search_messages("kiwi", limit=3)) == 3
    assert {h["session_id"] for h in db.search_messages("kiwi", source="telegram")} == {"b"}
    assert {h["conversation_id"] for h in db.search_messages("kiwi", conversation_id="a")} == {"a"}
    assert db.search_messages("kiwi", source="discord") == []


def test_snippet_is_a_window_around_the_word(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "lorem " * 200 + "needle " + "ipsum " * 200)
    [hit] = db.search_messages("needle")
    assert "needle" in hit["snippet"]
    assert len(hit["snippet"]) < 400


@pytest.mark.parametrize(
    ("sentence", "word"),
    [
        ("我们明天去北京开会吧", "北京"),
        ("我们明天去北京开会吧", "开会"),
        ("今日は東京で会議があります", "東京"),
        ("今日は東京で会議があります", "会議"),
        ("カタカナのコンピューターを使う", "コンピューター"),
        ("오늘은 서울에서 회의가 있습니다", "서울에서"),
    ],
)
def test_a_cjk_word_inside_a_sentence_is_found(db: SessionDB, sentence: str, word: str) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "nothing to see here")
    db.append_message("s", "user", sentence)
    hits = db.search_messages(word)
    assert len(hits) == 1
    assert word in hits[0]["snippet"]


def test_cjk_characters_must_be_adjacent(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "我们明天去北京开会吧")
    assert db.search_messages("京北") == []
    assert db.search_messages("北开") == []


def test_compressed_away_history_is_found(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    db.append_message("root", "user", "my passport number is in the blue folder")
    db.append_message("root", "assistant", "ok")
    child = rotate(db, "root")
    child2 = rotate(db, child)
    db.append_message(child2, "user", "where is my passport?")
    hits = db.search_messages("passport folder")
    assert [(h["session_id"], h["conversation_id"]) for h in hits] == [("root", "root")]
    assert len(db.search_messages("passport", conversation_id="root")) == 2


def test_compacted_copies_are_not_found_twice(db: SessionDB) -> None:
    db.create_session("root", source="cli")
    kept = {"role": "user", "content": "the wombat sleeps", "message_uid": "w1"}
    db.append_messages("root", [kept])
    watermark = db.last_message_id("root")
    db.append_message("root", "user", "the wombat wakes")  # carried over by the watermark
    rotate(db, "root", messages=[SUMMARY, kept], watermark=watermark)
    hits = db.search_messages("wombat")
    assert len(hits) == 2
    assert {h["session_id"] for h in hits} == {"root"}


@pytest.mark.parametrize(
    "query",
    ['"', "*", "(", ")", ":", "^", "-", "NEAR", "AND", "OR", "NOT", '"unclosed', "a*",
     "(a OR b", "col:value", "^start", "-minus", "NEAR(a b, 2)", "a AND OR b", "\\", "'",
     "%", "_", "%_%", "", "   ", "\x00", "a\x00b", "🙂", "*" * 50, "word " * 100],
)  # fmt: skip
def test_fts_syntax_in_queries_never_raises(db: SessionDB, query: str) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "alpha beta gamma; a and b or c; near the end")
    assert isinstance(db.search_messages(query), list)


def test_operators_are_searched_as_plain_words(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "cats OR dogs")
    db.append_message("s", "user", "cats and dogs")
    db.append_message("s", "user", "only cats")
    assert len(db.search_messages("cats OR dogs")) == 1
    assert len(db.search_messages('"cats" AND')) == 1
    assert len(db.search_messages("cats*")) == 3
    assert len(db.search_messages("dogs -cats")) == 2


def test_a_word_deep_inside_a_very_long_message_is_found(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "tool", "filler words " * 20_000 + "needlefish at the very end")
    db.append_message("s", "user", "short one")
    [hit] = db.search_messages("needlefish")
    assert "needlefish" in hit["snippet"]
    assert len(db.search_messages("filler")) == 1


def test_messages_without_text_are_not_indexed(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "assistant", None, tool_calls=[{"id": "c", "type": "function"}])
    db.append_message("s", "user", "")
    assert db.search_messages("function") == []


PARTS = [
    {"type": "text", "text": "what is this marmot doing?"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJDREVGR0g="}},
]


# BUG (store, PostgreSQL): the PostgreSQL indexes (tsvector and trigram) and its search
# read the raw ``content`` column, which for multi-part content is the JSON list; so its
# keys, URLs and base64 image data are searchable (and fill the trigram index), while
# SQLite indexes only the text parts (search.searchable_text). See the final report.
def test_multipart_text_is_found_but_not_its_structure(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", PARTS)
    db.append_message("s", "user", "plain text about nothing")
    [hit] = db.search_messages("marmot")
    assert "marmot" in hit["snippet"]
    for structure in ("image_url", "type", "base64", "png", "url"):
        assert db.search_messages(structure) == [], structure


def test_a_star_after_a_word_finds_every_word_it_starts(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "the zebras crossed")
    db.append_message("s", "user", "a zebra crossing")
    db.append_message("s", "user", "unrelated: azebra")
    assert len(db.search_messages("zebra*")) == 2
    assert db.search_messages("zebra") != db.search_messages("zebra*")
    assert [h["snippet"] for h in db.search_messages("zebr* crossed")] == ["the zebras crossed"]


def test_a_quoted_phrase_needs_its_words_adjacent_and_in_order(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_message("s", "user", "I ate red apples today")
    db.append_message("s", "user", "apples are red")
    db.append_message("s", "user", "red, shiny apples")
    assert [h["snippet"] for h in db.search_messages('"red apples"')] == ["I ate red apples today"]
    assert len(db.search_messages("red apples")) == 3
    assert [h["snippet"] for h in db.search_messages('"red app"*')] == ["I ate red apples today"]


def test_phrase_and_prefix_match_the_same_once_the_index_holds_the_rows(db: SessionDB) -> None:
    """A few writes wait for the index (SQLite reads them directly); many are indexed."""
    db.create_session("s", source="cli")
    db.append_message("s", "user", "the zebras ate red apples")
    for n in range(40):  # more than SQLite defers: the rows above are folded into FTS5
        db.append_message("s", "user", f"filler {n}")
    assert len(db.search_messages("zebra*")) == 1
    assert len(db.search_messages('"red apples"')) == 1
    assert db.search_messages('"apples red"') == []
    assert len(db.search_messages('"ate red app"*')) == 1


def test_search_can_be_narrowed_to_one_user(db: SessionDB) -> None:
    db.create_session("a", source="telegram", user_id="42")
    db.create_session("b", source="telegram", user_id="7")
    db.append_message("a", "user", "my password is hunter2xyz")
    db.append_message("b", "user", "hunter2xyz is what I heard")
    assert {h["session_id"] for h in db.search_messages("hunter2xyz", user_id="7")} == {"b"}
    assert len(db.search_messages("hunter2xyz")) == 2


def test_what_the_user_took_back_is_not_found(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    early = db.append_message("s", "user", "my PIN is 4711, keep it secret").message_id
    # Enough rows after it that it is in the full-text index, and the last one waits to be.
    for n in range(40):
        db.append_message("s", "assistant", f"noted, item {n}")
    late = db.append_message("s", "user", "again: the PIN 4711").message_id
    kept = db.append_message("s", "user", "the door code is 4711 too").message_id
    assert len(db.search_messages("4711")) == 3

    assert early is not None and late is not None
    db.mark_undone("s", [early, late])

    assert [h["message_id"] for h in db.search_messages("4711")] == [kept]
