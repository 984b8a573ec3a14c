"""Export of the whole logical conversation, streamed (invariant 9)."""

from __future__ import annotations

import inspect
import json

import pytest

from hermes.state import SessionDB, SessionNotFoundError

from .helpers import SUMMARY, rotate


@pytest.fixture
def conversation(db: SessionDB) -> list[str]:
    """Two segments: m0..m3 (m3 written after the watermark), a summary, then 'after'."""
    db.create_session("root", source="cli", title="Export me")
    db.append_messages("root", [{"role": "user", "content": f"m{n}"} for n in range(3)])
    watermark = db.last_message_id("root")
    db.append_message("root", "assistant", "m3")
    child = rotate(db, "root", messages=[SUMMARY], watermark=watermark)
    db.append_message(
        child,
        "assistant",
        "after",
        tool_calls=[
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    )
    db.append_message(child, "tool", "file.txt", tool_call_id="c1", tool_name="ls")
    return ["root", child]


def test_export_is_a_stream(db: SessionDB, conversation: list[str]) -> None:
    for fmt in ("jsonl", "markdown"):
        stream = db.export_conversation("root", fmt)
        assert inspect.isgenerator(stream)


def test_export_does_not_hold_the_store_while_streaming(
    db: SessionDB, conversation: list[str]
) -> None:
    stream = db.export_conversation("root", "jsonl")
    next(stream)
    db.append_message(conversation[-1], "user", "written mid-export")  # must not block
    assert any("written mid-export" in line for line in stream)


def test_jsonl_export_holds_the_whole_logical_conversation(
    db: SessionDB, conversation: list[str]
) -> None:
    for start in conversation:
        lines = [json.loads(line) for line in db.export_conversation(start, "jsonl")]
        header = lines[0]
        assert header["type"] == "conversation"
        assert (header["id"], header["title"], header["segments"]) == (
            "root",
            "Export me",
            conversation,
        )
        messages = [line for line in lines if line["type"] == "message"]
        assert [m["content"] for m in messages] == ["m0", "m1", "m2", "m3", "after", "file.txt"]
        assert messages[4]["tool_calls"][0]["function"]["name"] == "ls"
        assert messages[5]["tool_call_id"] == "c1"
        kinds = [line["type"] for line in lines]
        compaction = kinds.index("compaction")
        assert kinds[compaction + 1] == "summary"
        assert lines[compaction]["segment"] == conversation[1]
        assert lines[compaction + 1]["content"] == SUMMARY["content"]
        assert kinds.count("compaction") == 1
        # Everything before the marker is the first segment.
        assert {m["session_id"] for m in lines[1:compaction]} == {"root"}


def test_markdown_export_marks_the_compaction(db: SessionDB, conversation: list[str]) -> None:
    text = "".join(db.export_conversation(conversation[1], "markdown"))
    assert text.startswith("# Export me")
    assert text.count("compressed here") == 1
    for content in ("m0", "m1", "m2", "m3", "after", "file.txt"):
        assert text.count(f"\n{content}\n") == 1
    assert text.index("m3") < text.index("compressed here") < text.index("after")
    assert SUMMARY["content"] not in text  # the marker stands for the summary
    assert "`ls`" in text


def test_markdown_export_flags_undone_messages(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    mid = db.append_message("s", "user", "oops").message_id
    db.mark_undone("s", [mid])
    assert "(undone)" in "".join(db.export_conversation("s", "md"))


def test_export_of_unknown_id_or_format_fails_before_streaming(db: SessionDB) -> None:
    with pytest.raises(SessionNotFoundError):
        db.export_conversation("ghost", "jsonl")
    db.create_session("s", source="cli")
    with pytest.raises(ValueError, match="jsonl"):
        db.export_conversation("s", "pdf")


def test_a_large_conversation_exports_every_message(db: SessionDB) -> None:
    db.create_session("s", source="cli")
    db.append_messages("s", [{"role": "user", "content": f"n{n}"} for n in range(2500)])
    child = rotate(db, "s")
    db.append_messages(child, [{"role": "user", "content": f"n{n}"} for n in range(2500, 3100)])
    lines = [json.loads(x) for x in db.export_conversation("s", "jsonl")]
    assert [x["content"] for x in lines if x["type"] == "message"] == [f"n{n}" for n in range(3100)]


def test_multipart_content_exports_and_branches_as_parts(db: SessionDB) -> None:
    parts = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:,"}},
    ]
    db.create_session("s", source="cli")
    db.append_message("s", "user", parts)
    lines = [json.loads(x) for x in db.export_conversation("s", "jsonl")]
    assert [x["content"] for x in lines if x["type"] == "message"] == [parts]
    assert "look" in "".join(db.export_conversation("s", "markdown"))
    branch = db.branch_session("s")
    assert db.get_messages(branch)[0]["content"] == parts
    child = rotate(db, "s", messages=[SUMMARY, db.get_messages("s")[0]])
    assert db.get_messages(child)[1]["content"] == parts


def test_markdown_export_says_what_each_part_was(db: SessionDB) -> None:
    image = "data:image/png;base64," + "A" * 4096
    db.create_session("s", source="api_server")
    db.append_messages(
        "s",
        [
            {"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                         {"type": "image_url", "image_url": {"url": image}}]},
            {"role": "assistant", "content": "a cat, sort", "message_uid": "u1:partial"},
        ],
    )  # fmt: skip
    text = "".join(db.export_conversation("s", "md"))
    assert "what is this?" in text and "[image: image/png, 3 KB inline]" in text
    assert "AAAA" not in text
    assert "(partial: the client stopped reading here)" in text
    [user, _] = [json.loads(x) for x in db.export_conversation("s", "jsonl")][1:]
    assert user["content"][1] == {"type": "image_url", "image_url": {"url": image}}
